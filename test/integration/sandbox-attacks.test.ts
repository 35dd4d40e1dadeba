/**
 * The command sandbox through the whole task path: the scripted model chooses `run_command` with commands that
 * hide their paths from the permission gate (base64, $IFS, sh -c, python, a script written first, a symlink, a
 * variable), read the worker's environment through /proc, reach the network, or leave a process behind. None of
 * them may get a secret or an outside file's content into any event, result or history; outside canaries keep
 * their content and access time; a listener on 127.0.0.1 sees no connection; nothing survives the task.
 * And the same sandbox lets real work through: files in the project, node and python3, pipes and redirects, and
 * an outside path exactly when (and as long as) the user granted it. With the session's network on, commands still
 * never reach this machine: sandbox-network.test.ts.
 */
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync, chmodSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { createApp } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { callChain, everythingShown, makeProject, picksByStep, plan, step, TaskDriver } from '../support/task-driver';
import { cancelSignal, permissionSignal } from '../../workflows/task/messages';
import { processesWith } from '../support/processes';

const SECRETS = {
  OPENAI_API_KEY: 'sk-canary-openai-0123456789abcdef',
  KLEA_API_TOKEN: 'canary-api-token-0123456789abcdef',
};
const CANARY = 'canary: outside the project, never to be read';
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Where the task's `context` event and /healthz say commands run. */
async function sandboxShown(env: TestEnv, t: TaskDriver) {
  const context = (await t.events()).find((e) => e.type === 'context') as
    { sandbox?: string; sandboxNote?: string | null } | undefined;
  const health = await request(createApp({ client: env.client, config: env.config })).get('/healthz');
  return { context: { sandbox: context?.sandbox, note: context?.sandboxNote ?? null }, health: health.body.sandbox };
}

describe('the command sandbox', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let listener: net.Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    Object.assign(process.env, SECRETS);
    listener = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    port = (listener.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    for (const k of Object.keys(SECRETS)) delete process.env[k];
    await new Promise((r) => listener.close(r));
  });

  useFakeModelEnv({ name: 'sandbox' }, (f, e) => {
    fake = f;
    env = e;
  });

  /** A project with an outside canary whose access time would show a read. */
  function projectWithCanary() {
    const p = makeProject({ 'notes.txt': 'inside the project\n' });
    const canary = path.join(p.outside, 'canary.txt');
    writeFileSync(canary, CANARY);
    const old = new Date(Date.now() - 3 * 24 * 3600_000);
    utimesSync(canary, old, new Date(Date.now() - 24 * 3600_000));
    return { ...p, canary, atime: statSync(canary).atimeMs };
  }

  /** Runs a task whose steps each run one command (or write a file), denying every permission request. */
  const runCommands = (projectDir: string, calls: Array<{ name: string; args: Record<string, unknown> }>) =>
    runCommandsDeciding(projectDir, calls, []);

  /** The same, answering permission requests with `decisions` in order, then denying. */
  async function runCommandsDeciding(
    projectDir: string,
    calls: Array<{ name: string; args: Record<string, unknown> }>,
    decisions: Array<'allow_once' | 'allow_session' | 'deny'>
  ): Promise<{ t: TaskDriver; asked: number; outputs: string[] }> {
    const chain = callChain(calls, 'Run call');
    fake.on('write_plan', { call: chain.plan });
    fake.always('write_plan', chain.replan);
    // Each step's own call; a step whose call failed has nothing more to try in its repair rounds.
    fake.always('pick_tools', chain.picks);
    fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'the output is the answer' } });
    fake.always('compose_answer', { content: 'done' });
    const t = await TaskDriver.start(env, 'Run these commands', projectDir);
    let asked = 0;
    for (;;) {
      const s = await t.state();
      if (['done', 'failed', 'cancelled'].includes(s.status)) break;
      for (const p of s.pending)
        if (p.kind === 'permission')
          for (const r of p.requests) {
            asked++;
            const decision = decisions.shift() ?? 'deny';
            await t.handle.signal(permissionSignal, { requestId: r.requestId, decision }).catch(() => undefined);
          }
      await new Promise((r) => setTimeout(r, 50));
    }
    const finished = (await t.events()).filter(
      (e): e is Extract<KleaEvent, { type: 'step_finished' }> => e.type === 'step_finished'
    );
    return { t, asked, outputs: finished.map((e) => e.summary) };
  }

  const cmd = (command: string, cwd?: string) => ({
    name: 'workspace__run_command',
    args: { command, ...(cwd ? { cwd } : {}) },
  });

  it('commands that hide their paths, read /proc, or reach the network get nothing out', async () => {
    const p = projectWithCanary();
    const attacks = [
      // The environment of the server and of the worker, through /proc (the path itself hidden in base64).
      `x=$(echo ${b64('/proc')} | base64 -d); tr '\\0' '\\n' < $x/$PPID/environ; tr '\\0' '\\n' < $x/1/environ`,
      `for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e; done 2>/dev/null | grep -i -e key -e token`,
      `cat $(echo ${b64(p.canary)} | base64 -d)`,
      `sh -c 'cat /etc/passwd /etc/shadow'`,
      'cat$IFS/etc/passwd',
      `python3 -c "print(open('${p.canary}').read())"`,
      `node -e "console.log(require('fs').readFileSync(process.argv[1],'utf8'))" ${p.canary}`,
      `ls -la / /root /home /srv ${path.dirname(p.dir)} 2>&1`,
      `ln -s $(echo ${b64(p.canary)} | base64 -d) link.txt; cat link.txt`,
      `p=$(echo ${b64(p.canary)} | base64 -d); echo pwned > $p; echo pwned >> $p`,
      `curl -s -m 3 http://127.0.0.1:${port}/ || python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 3)"`,
      `node -e "require('net').connect(${port}, '127.0.0.1').on('error', e => console.log(e.code))"`,
      `curl -s -m 3 https://registry.npmjs.org/ | head -c 100`,
    ];
    const { t, outputs } = await runCommands(
      p.dir,
      attacks.map((a) => cmd(a))
    );
    expect((await t.result()).status).toBe('done');
    expect(outputs).toHaveLength(attacks.length);

    const shown = await everythingShown(t);
    for (const secret of Object.values(SECRETS)) expect(shown).not.toContain(secret);
    expect(shown).not.toContain('KLEA_WORKSPACE_GRANT_KEY');
    expect(shown).not.toContain(CANARY);
    // The host's user list is not the sandbox's: only the sandbox's own users exist there.
    expect(readFileSync('/etc/passwd', 'utf8')).toMatch(/^daemon:/m);
    expect(shown).not.toMatch(/daemon:x:1:1/);
    // Content and access time (checked first: reading it here would touch it).
    expect(statSync(p.canary).atimeMs).toBe(p.atime);
    expect(readFileSync(p.canary, 'utf8')).toBe(CANARY);
    expect(connections).toBe(0);
    // The link the command made points at a path that does not exist for it.
    expect(outputs[8]).toMatch(/No such file/);
  });

  it('a script written first and then run is just as confined', async () => {
    const p = projectWithCanary();
    const { t } = await runCommands(p.dir, [
      {
        name: 'workspace__write_file',
        args: { path: 'x.sh', content: `#!/bin/sh\ncat ${p.canary}\nenv\ncat /proc/1/environ\n` },
      },
      cmd('sh x.sh'),
    ]);
    expect((await t.result()).status).toBe('done');
    const shown = await everythingShown(t);
    expect(shown).not.toContain(CANARY);
    for (const secret of Object.values(SECRETS)) expect(shown).not.toContain(secret);
    expect(statSync(p.canary).atimeMs).toBe(p.atime);
  });

  it('a process left behind with setsid does not survive the cancelled task', async () => {
    const p = projectWithCanary();
    const token = `klea-escape-${process.pid}-${Date.now()}`;
    fake.on('write_plan', { call: plan([step('s1', 'Start the job')]) });
    fake.on('pick_tools', {
      calls: [
        {
          name: 'workspace__run_command',
          args: {
            step_id: 's1',
            // The child waits for the test's release, then writes its marker: if it survived, the marker appears.
            command: `setsid sh -c 'until [ -e release ]; do sleep 0.05; done; echo ${token} > escaped' & touch started; sleep 120`,
            timeout_ms: 300_000,
          },
        },
      ],
    });
    const t = await TaskDriver.start(env, 'Start a long job', p.dir);
    const deadline = Date.now() + 30_000;
    while (!existsSync(path.join(p.dir, 'started'))) {
      if (Date.now() > deadline) throw new Error('the command never started');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(processesWith(token).length).toBeGreaterThan(0);
    await t.handle.signal(cancelSignal, { reason: 'stop it' });
    expect((await t.result()).status).toBe('cancelled');

    // Every process of the command ends with it (the sandbox's PID namespace and cgroup), the setsid child too.
    const gone = Date.now() + 30_000;
    while (processesWith(token).length) {
      if (Date.now() > gone) throw new Error(`still running after the task was cancelled: ${processesWith(token)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    writeFileSync(path.join(p.dir, 'release'), '');
    expect(existsSync(path.join(p.dir, 'escaped'))).toBe(false);
  });

  it('real work gets through: files in the project, node, python3, pipes and redirects', async () => {
    const p = projectWithCanary();
    const { t, outputs } = await runCommands(p.dir, [
      cmd(
        'mkdir -p build && echo "3 1 2" | tr " " "\\n" | sort > build/sorted.txt && ' +
          "node -e \"console.log(require('fs').readFileSync('build/sorted.txt','utf8').split('\\n').join(','))\" && " +
          "python3 -c \"import os; print(sorted(n for n in os.listdir('.') if n[0] != '.'))\" 2>&1 | tee build/listing.txt && " +
          'ls -d .vscode .git .mcp.json && cat notes.txt'
      ),
    ]);
    expect((await t.result()).status).toBe('done');
    expect(readFileSync(path.join(p.dir, 'build/sorted.txt'), 'utf8')).toBe('1\n2\n3\n');
    expect(outputs[0]).toContain('1,2,3');
    // Beside the project's files, the empty read-only placeholders of protected paths not there yet (.vscode,
    // AGENTS.md, ...), gone once the command is over.
    expect(outputs[0]).toContain(
      "['AGENTS.md', 'AGENTS.override.md', 'CLAUDE.local.md', 'CLAUDE.md', 'GEMINI.md', 'build', 'klea.yaml', 'notes.txt']"
    );
    expect(outputs[0]).toMatch(/^\.git\n\.mcp\.json\n\.vscode$/m);
    for (const placeholder of ['.vscode', '.git', 'AGENTS.md', '.mcp.json'])
      expect(existsSync(path.join(p.dir, placeholder))).toBe(false);
    expect(outputs[0]).toContain('inside the project');
    const shown = await sandboxShown(env, t);
    expect(shown.context).toEqual({ sandbox: 'on', note: null });
    expect(shown.health).toEqual({ status: 'on', detail: '1 of 1 worker(s) run commands in the bubblewrap sandbox' });
  });

  it('an outside path allowed once is there for that command only', async () => {
    const p = projectWithCanary();
    // The first command names the path (the gate asks; the user allows once); the second hides it.
    const first = `cat ${p.canary} | wc -c; cat ${p.canary}`;
    const { t, outputs } = await runCommandsDeciding(
      p.dir,
      [cmd(first), cmd(`cat $(echo ${b64(p.canary)} | base64 -d)`)],
      ['allow_once']
    );
    expect((await t.result()).status).toBe('done');
    expect(outputs[0]).toContain(CANARY);
    expect(outputs[1]).not.toContain(CANARY);
    expect(outputs[1]).toMatch(/No such file/);
    // The request carried the whole command line, not just the path.
    const asked = (await t.events()).find((e) => e.type === 'permission_requested');
    expect(asked).toMatchObject({ path: p.canary, call: { tool: 'workspace__run_command', args: { command: first } } });
  });

  it('an outside path allowed for the session stays there for the next commands', async () => {
    const p = projectWithCanary();
    const { t, outputs } = await runCommandsDeciding(
      p.dir,
      [cmd(`cat ${p.canary}`), cmd(`cat $(echo ${b64(p.canary)} | base64 -d)`)],
      ['allow_session']
    );
    expect((await t.result()).status).toBe('done');
    expect(outputs[0]).toContain(CANARY);
    expect(outputs[1]).toContain(CANARY);
    // Granted for reading only: writing it is still impossible.
    expect(readFileSync(p.canary, 'utf8')).toBe(CANARY);
  });
});

describe('the command sandbox where it cannot run, and when it is turned off', () => {
  const fakeBwrap = path.join(makeProject().root, 'bwrap');
  writeFileSync(fakeBwrap, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n');
  chmodSync(fakeBwrap, 0o755);
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'nosandbox', overrides: { tools: { sandbox: { bwrap_path: fakeBwrap } } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('refuses commands with the reason and the fix; never runs them unsandboxed', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Touch a file')]) });
    fake.always(
      'pick_tools',
      picksByStep({ s1: [{ name: 'workspace__run_command', args: { command: 'touch ran.txt' } }] })
    );
    const t = await TaskDriver.start(env, 'Touch a file', p.dir);
    // The one command was refused: nothing achieved, and the answer says what stopped it.
    expect(await t.result()).toMatchObject({
      status: 'failed',
      answer: expect.stringMatching(/the command sandbox cannot run here/),
    });
    const finished = (await t.events()).find((e) => e.type === 'step_finished');
    expect(JSON.stringify(finished)).toMatch(/run_command refused: the command sandbox cannot run here/);
    expect(JSON.stringify(finished)).toMatch(/No permissions to creating new namespace/);
    expect(JSON.stringify(finished)).toMatch(/tools\.sandbox\.mode: none/);
    expect(existsSync(path.join(p.dir, 'ran.txt'))).toBe(false);
    // Said up front too: in the context event (the status pane shows it) and by /healthz.
    const shown = await sandboxShown(env, t);
    expect(shown.context.sandbox).toBe('unavailable');
    expect(shown.context.note).toMatch(/^commands are refused: .*No permissions to creating new namespace/);
    expect(shown.health).toEqual({ status: 'unavailable', detail: expect.stringMatching(/^1 of 1 worker/) });
  });
});

describe('the command sandbox turned off (tools.sandbox.mode: none)', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'sandboxoff', overrides: { tools: { sandbox: { mode: 'none' } } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('runs commands without it, as the operator chose', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Touch a file')]) });
    fake.on('pick_tools', {
      calls: [
        {
          name: 'workspace__run_command',
          // Even unsandboxed, the server's environment (readable through /proc) holds no grant key.
          args: {
            step_id: 's1',
            command: `touch ran.txt; x=$(echo ${b64('/proc')} | base64 -d); tr '\\0' '\\n' < $x/$PPID/environ`,
          },
        },
      ],
    });
    fake.on('compose_answer', { content: 'ran it' });
    const t = await TaskDriver.start(env, 'Touch a file', p.dir);
    expect((await t.result()).status).toBe('done');
    expect(existsSync(path.join(p.dir, 'ran.txt'))).toBe(true);
    const summary = ((await t.events()).find((e) => e.type === 'step_finished') as { summary: string }).summary;
    expect(summary).toMatch(/PATH=/);
    expect(summary).not.toMatch(/KLEA_WORKSPACE_GRANT_KEY/);
    const shown = await sandboxShown(env, t);
    expect(shown.context).toEqual({
      sandbox: 'off',
      note: 'commands run WITHOUT the sandbox (tools.sandbox.mode: none)',
    });
    expect(shown.health.status).toBe('off');
  });
});
