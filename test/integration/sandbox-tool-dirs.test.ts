/**
 * Toolchains outside the system's directories (`tools.sandbox.tool_dirs`), through the whole task path (scripted
 * model, real dev server, real workspace server, real bubblewrap): a program in a named tool directory runs by its
 * name, finding itself by the variables that point there; the directory is read-only, and nothing beside it (the
 * rest of the home it lies in) is there.
 */
import { chmodSync, existsSync, mkdirSync, realpathSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KleaEvent } from '../../common/events';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, picksByStep, plan, step, TaskDriver } from '../support/task-driver';

/** A user's home, as far as the test goes: a toolchain in it, and a secret beside the toolchain. */
const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-home-')));
const toolchain = path.join(home, '.toolchain');
const secret = path.join(home, 'secret.txt');
mkdirSync(path.join(toolchain, 'bin'), { recursive: true });
writeFileSync(
  path.join(toolchain, 'bin', 'greet-tool'),
  '#!/bin/sh\necho "greet-tool ran, its root $TOOLCHAIN_ROOT"\n'
);
chmodSync(path.join(toolchain, 'bin', 'greet-tool'), 0o755);
writeFileSync(path.join(toolchain, 'README'), 'toolchain readme\n');
writeFileSync(secret, 'the-secret-beside-the-toolchain\n');

const b64 = (s: string) => Buffer.from(s).toString('base64');
/** A shell word that yields `s` without spelling it (so the permission gate cannot see the path). */
const hiddenWord = (s: string) => `$(echo ${b64(s)} | base64 -d)`;

describe('tools.sandbox.tool_dirs', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const saved = { PATH: process.env.PATH, TOOLCHAIN_ROOT: process.env.TOOLCHAIN_ROOT };
  // The worker's own PATH and variables name the toolchain, as a shell set up for it would.
  process.env.PATH = `${path.join(toolchain, 'bin')}:${process.env.PATH ?? ''}`;
  process.env.TOOLCHAIN_ROOT = toolchain;
  afterAll(() => {
    process.env.PATH = saved.PATH;
    if (saved.TOOLCHAIN_ROOT === undefined) delete process.env.TOOLCHAIN_ROOT;
    else process.env.TOOLCHAIN_ROOT = saved.TOOLCHAIN_ROOT;
  });

  useFakeModelEnv({ name: 'tool-dirs', overrides: { tools: { sandbox: { tool_dirs: [toolchain] } } } }, (f, e) => {
    fake = f;
    env = e;
  });

  /** Runs a task whose steps each run one command; returns what each step's command printed. */
  async function run(projectDir: string, commands: string[]): Promise<string[]> {
    const steps = commands.map((_, i) => step(`s${i + 1}`, `Run command ${i + 1}`, { depends_on: i ? [`s${i}`] : [] }));
    fake.on('write_plan', { call: plan(steps) });
    fake.always(
      'pick_tools',
      picksByStep(
        Object.fromEntries(
          commands.map((command, i) => [`s${i + 1}`, [{ name: 'workspace__run_command', args: { command } }]])
        )
      )
    );
    fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'the output is the answer' } });
    fake.always('compose_answer', { content: 'done' });
    const t = await TaskDriver.start(env, 'Run these commands', projectDir);
    const result = await t.result();
    expect(result.status).toBe('done');
    const events = await t.events();
    expect(events.filter((e) => e.type === 'permission_requested')).toEqual([]);
    return events
      .filter((e): e is Extract<KleaEvent, { type: 'step_finished' }> => e.type === 'step_finished')
      .map((e) => e.summary ?? '');
  }

  it('a program of the toolchain runs by its name; attack: the home around it stays out of reach, and it stays read-only', async () => {
    const p = makeProject({ 'a.txt': 'a\n' });
    const [ran, beside, inside, planted] = await run(p.dir, [
      'greet-tool',
      `cat ${hiddenWord(secret)} 2>&1; echo exit=$?`,
      // Control: the same way of reading shows a file of the toolchain, so a secret read would show too.
      `cat ${hiddenWord(path.join(toolchain, 'README'))}`,
      `touch ${hiddenWord(path.join(toolchain, 'planted'))} 2>&1; echo exit=$?`,
    ]);
    expect(ran).toContain(`greet-tool ran, its root ${toolchain}`);
    expect(beside).toMatch(/No such file or directory/);
    expect(beside).not.toContain('the-secret-beside-the-toolchain');
    expect(inside).toContain('toolchain readme');
    expect(planted).toMatch(/Read-only file system/);
    expect(existsSync(path.join(toolchain, 'planted'))).toBe(false);
  });
});
