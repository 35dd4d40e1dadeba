/**
 * Real tasks need steps that finish their instruction and plans that survive a model's small mistakes. Each test
 * scripts the model making one mistake seen from a small local model, and asserts what the user sees: the file
 * on disk, the task's status, its answer and its events.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { permissionSignal } from '../../workflows/task/messages';

const CALC = 'def add(a, b):\n    return a - b\n\nprint(add(2, 3))\n';

const TEST_CALC = 'from calc import add\nassert add(2, 3) == 5\n';
const FIX_AND_TEST = 'test_calc.py fails. Fix calc.py and run test_calc.py to prove it.';
/** The pick that fixes calc.py, for step `id`. */
const fixCalc = (id: string) => ({
  calls: [
    { name: 'workspace__edit_file', args: { step_id: id, path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
  ],
});

let fake: FakeModel;
let env: TestEnv;
useFakeModelEnv({ name: 'steps-finish' }, (f, e) => {
  fake = f;
  env = e;
});

describe('steps that finish their instruction', () => {
  it('a step reads, edits, then runs: one step of three calls, each pick seeing what the earlier calls returned', async () => {
    const p = makeProject({ 'calc.py': CALC });
    fake.on('write_plan', { call: plan([step('s1', 'Fix the bug in calc.py, then run it')]) });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'calc.py', step_done: false } }] },
      {
        calls: [
          {
            name: 'workspace__edit_file',
            args: { step_id: 's1', path: 'calc.py', old_string: 'a - b', new_string: 'a + b', step_done: false },
          },
        ],
      },
      {
        calls: [
          { name: 'workspace__run_command', args: { step_id: 's1', command: 'python3 calc.py', step_done: true } },
        ],
      }
    );
    fake.on('compose_answer', { content: 'Fixed: add(2, 3) now prints 5.' });

    const t = await TaskDriver.start(env, 'Fix the bug in calc.py and run it', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toContain('return a + b');
    const finished = await t.eventsOf('step_finished');
    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject({ stepId: 's1', status: 'done' });
    expect(finished[0].calls.map((c: { tool: string }) => c.tool)).toEqual([
      'workspace__read_file',
      'workspace__edit_file',
      'workspace__run_command',
    ]);
    expect(finished[0].summary).toContain('5');
    const picks = fake.requestsFor('pick_tools');
    expect(picks).toHaveLength(3);
    // The second pick saw the file the first call read; the third saw the edit.
    expect(picks[1].text).toContain('return a - b');
    expect(picks[2].text).toContain('workspace__edit_file');
    // The answer composer saw the command's real output with the step's instruction.
    expect(fake.requestsFor('compose_answer')[0].text).toContain('Fix the bug in calc.py, then run it');
    fake.assertDone();
  });

  it('a model that never says more keeps one-round steps (step_done absent means complete)', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'alpha' });

    const t = await TaskDriver.start(env, 'Read a.txt', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done', answer: 'alpha' });
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
    const pickFunctions = fake.requestsFor('pick_tools')[0].toolSchemas;
    // The schema sent to the model asks for the judgement; reading it back, absent is complete.
    expect(pickFunctions.find((f) => f.name === 'workspace__write_file')?.parameters?.required).toContain('step_done');
  });

  it('a pick is shown the files its step names, and may still call any tool the server offers: a read of a shown file runs', async () => {
    const p = makeProject({ 'config.json': '{"port": 8080}\n', 'app.py': 'print(1)\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Change the port in config.json to 9090')]) });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'config.json', step_done: false } }] },
      {
        calls: [
          {
            name: 'workspace__edit_file',
            args: { step_id: 's1', path: 'config.json', old_string: '8080', new_string: '9090', step_done: true },
          },
        ],
      }
    );
    fake.on('compose_answer', { content: 'The port is 9090 now.' });

    const t = await TaskDriver.start(env, 'Set the port to 9090', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'config.json'), 'utf8')).toBe('{"port": 9090}\n');
    const [pick] = fake.requestsFor('pick_tools');
    // The user's own words, and the file as it was, fenced as untrusted.
    expect(pick.text).toContain('Set the port to 9090');
    expect(pick.text).toMatch(/#### config\.json\n<untrusted source="config\.json">\n\{"port": 8080\}/);
    // Every tool is offered with the schema its server gave: nothing removed, no path held to a list.
    type Params = { properties?: { path?: { enum?: string[] } } } | undefined;
    const fns = new Map(pick.toolSchemas.map((f) => [f.name, f.parameters as Params]));
    for (const name of ['workspace__read_file', 'workspace__edit_file', 'workspace__write_file'])
      expect(fns.get(name)?.properties?.path).toBeDefined();
    for (const f of fns.values()) expect(f?.properties?.path?.enum).toBeUndefined();
    // The read ran as asked: one step of two calls, no replan, no review.
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toEqual([
      { tool: 'workspace__read_file', status: 'ok' },
      { tool: 'workspace__edit_file', status: 'ok' },
    ]);
    expect(await t.countOf('replanned')).toBe(0);
    fake.assertDone();
  });

  it('a step that names a new file writes that file, never one it only saw listed', async () => {
    const p = makeProject({ 'README.md': '# team tools\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Create a file owner.txt that contains my full name.')]) });
    fake.on('pick_tools', {
      calls: [
        {
          name: 'workspace__write_file',
          args: { step_id: 's1', path: 'owner.txt', content: 'Ada Lovelace\n', step_done: true },
        },
      ],
    });
    fake.on('compose_answer', { content: 'owner.txt holds your name.' });

    const t = await TaskDriver.start(env, 'Create a file owner.txt that contains my full name.', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'owner.txt'), 'utf8')).toBe('Ada Lovelace\n');
    expect(readFileSync(path.join(p.dir, 'README.md'), 'utf8')).toBe('# team tools\n');
    const [pick] = fake.requestsFor('pick_tools');
    expect(pick.text).toContain('New files it names (not in the project yet): owner.txt');
    fake.assertDone();
  });

  it('attack: a step that names a secret file gets nothing of it shown to the model, only the ordinary files it names', async () => {
    const p = makeProject({ '.env': 'API_KEY=sk-live-secret\n', 'app.py': 'print(1)\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Print the key in .env and app.py')]) });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: 'true', step_done: true } }],
    });
    fake.on('compose_answer', { content: 'done' });

    const t = await TaskDriver.start(env, 'Print the key in .env', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [pick] = fake.requestsFor('pick_tools');
    expect(pick.text).toContain('#### app.py');
    expect(pick.text).not.toContain('sk-live-secret');
    expect(pick.text).not.toContain('#### .env');
  });

  it('a failing edit leads to a read, not a repeat: the repeated call is never sent, the file is read and then fixed', async () => {
    const p = makeProject({ 'calc.py': CALC });
    fake.on('write_plan', { call: plan([step('s1', 'Fix the bug in calc.py', { expect: { changes: ['calc.py'] } })]) });
    const badEdit = {
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 's1', path: 'calc.py', old_string: 'a * b', new_string: 'a + b', step_done: true },
        },
      ],
    };
    const goodEdit = {
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 's1', path: 'calc.py', old_string: 'a - b', new_string: 'a + b', step_done: true },
        },
      ],
    };
    // A model at temperature 0 answers the repair round's pick as it answered the first.
    fake.on('pick_tools', badEdit, badEdit, goodEdit);
    fake.on('compose_answer', { content: 'Fixed: add now adds.' });

    const t = await TaskDriver.start(env, 'Fix the bug in calc.py', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toContain('return a + b');
    const [finished] = await t.eventsOf('step_finished');
    // The failed edit went out once; its repeat became a read of the file, which the next pick saw.
    expect(finished.calls).toEqual([
      { tool: 'workspace__edit_file', status: 'error' },
      { tool: 'workspace__read_file', status: 'ok' },
      { tool: 'workspace__edit_file', status: 'ok' },
    ]);
    expect(finished.repairs).toContainEqual(expect.stringMatching(/repeated a failed call: the file was read instead/));
    const picks = fake.requestsFor('pick_tools');
    expect(picks[1].text).toMatch(/Not done yet: every call failed.*old_string was not found/s);
    expect(picks[2].text).toContain('workspace__read_file {"path":"calc.py"} -> ok');
    expect(fake.requestsFor('evaluate_step')).toEqual([]);
    fake.assertDone();
  });

  it("a whole-file write that would wipe a short README is refused; the model reads why, adds its section, and the file's lines stay", async () => {
    const readme = '# Ledger\n\nKeeps accounts.\n\n## Usage\n\nRun `ledger add 5`.\n\n## License\n\nMIT\n';
    const section = '## Installation\n\n    pip install ledger\n';
    const p = makeProject({ 'README.md': readme });
    fake.on('write_plan', {
      call: plan([step('s1', 'Add an Installation section to README.md', { expect: { changes: ['README.md'] } })]),
    });
    // The model writes only the new section, as the whole file; told why that was refused, it adds it.
    const pick = (args: Record<string, unknown>, name = 'workspace__write_file') => ({
      calls: [{ name, args: { step_id: 's1', path: 'README.md', ...args } }],
    });
    fake.on(
      'pick_tools',
      pick({ content: section }),
      pick({ old_string: '## Usage', new_string: `${section}\n## Usage`, step_done: true }, 'workspace__edit_file')
    );
    fake.on('compose_answer', { content: 'README.md has an Installation section now.' });

    const t = await TaskDriver.start(env, 'Add an Installation section to README.md.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, 'README.md'), 'utf8')).toBe(
      readme.replace('## Usage', `${section}\n## Usage`)
    );
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toEqual([
      { tool: 'workspace__write_file', status: 'error' },
      { tool: 'workspace__edit_file', status: 'ok' },
    ]);
    expect(fake.requestsFor('pick_tools')[1].text).toContain(
      'refused: this write would remove 6 of the 6 lines of README.md (write_file replaces the whole file); nothing changed.'
    );
  });

  it('the control: a whole-file write of a file of three lines goes ahead, replacing all of it', async () => {
    const p = makeProject({ VERSION: '1.0\nstable\nlts\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Set VERSION to 2.0', { expect: { changes: ['VERSION'] } })]) });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'VERSION', content: '2.0\n' } }],
    });
    fake.on('compose_answer', { content: 'VERSION says 2.0.' });
    const t = await TaskDriver.start(env, 'Set VERSION to 2.0.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'VERSION'), 'utf8')).toBe('2.0\n');
  });

  it('a step that changed nothing it was to change is repaired with that evidence, then not achieved; the task ends failed', async () => {
    const p = makeProject({ 'calc.py': CALC });
    fake.on('write_plan', { call: plan([step('s1', 'Fix the bug in calc.py', { expect: { changes: ['calc.py'] } })]) });
    // Each pick runs something unrelated that succeeds and changes nothing.
    const run = (command: string) => ({
      calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command, step_done: true } }],
    });
    fake.on('pick_tools', run('ls'), run('echo ok'), run('true'));

    const t = await TaskDriver.start(env, 'Fix the bug in calc.py', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({
      status: 'failed',
      notAchieved: [{ stepId: 's1', reason: 'not achieved: calc.py was not changed' }],
    });
    expect(fake.requestsFor('pick_tools')[1].text).toContain('Not done yet: calc.py was not changed');
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toBe(CALC);
    fake.assertDone();
  });

  it('a step that is to move files into a new folder is done only once they are there; a file written in its place is repaired', async () => {
    const p = makeProject({ 'app.log': 'a\n', 'db.log': 'd\n' });
    fake.on('write_plan', {
      call: plan([step('s1', 'Move app.log and db.log into a new folder logs', { expect: { changes: ['logs/'] } })]),
    });
    const pick = (name: string, args: Record<string, unknown>) => ({
      calls: [{ name, args: { step_id: 's1', ...args, step_done: true } }],
    });
    // The first pick writes a file named like the folder (seen from a 1.5B model); the repair round is told so.
    fake.on(
      'pick_tools',
      pick('workspace__write_file', { path: 'logs', content: 'app.log\ndb.log\n' }),
      pick('workspace__run_command', { command: 'rm logs && mkdir logs && mv app.log db.log logs/' })
    );
    fake.on('compose_answer', { content: 'Moved both logs into logs/.' });

    const t = await TaskDriver.start(env, 'Move app.log and db.log into a new folder logs', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(fake.requestsFor('pick_tools')[1].text).toContain(
      'Not done yet: logs was written as a file where the folder logs/ was to be'
    );
    expect(readFileSync(path.join(p.dir, 'logs', 'app.log'), 'utf8')).toBe('a\n');
    expect(readFileSync(path.join(p.dir, 'logs', 'db.log'), 'utf8')).toBe('d\n');
    fake.assertDone();
  });

  it("a step with a check is done only when Klea's own run of the check exits 0", async () => {
    const p = makeProject({ 'calc.py': CALC, 'test_calc.py': TEST_CALC });
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Fix calc.py so that test_calc.py passes', { expect: { check: 'python3 test_calc.py' } }),
      ]),
    });
    const edit = (old_string: string, new_string: string) => ({
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 's1', path: 'calc.py', old_string, new_string, step_done: true },
        },
      ],
    });
    // The first edit changes the wrong thing; the check fails, and the repair round sees why.
    fake.on('pick_tools', edit('print(add(2, 3))', 'print(add(3, 2))'), edit('a - b', 'a + b'));
    fake.on('compose_answer', { content: 'test_calc.py passes now.' });

    const t = await TaskDriver.start(env, 'Fix calc.py so that test_calc.py passes', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toEqual([
      { tool: 'workspace__edit_file', status: 'ok' },
      { tool: 'workspace__run_command', status: 'error' },
      { tool: 'workspace__edit_file', status: 'ok' },
      { tool: 'workspace__run_command', status: 'ok' },
    ]);
    // The check's output is the result of the repair pick's last call: shown there once, and pointed at.
    const repair = fake.requestsFor('pick_tools')[1].text;
    expect(repair).toMatch(
      /2\. workspace__run_command \{"command":"python3 test_calc.py"\} -> error\n.*AssertionError/s
    );
    expect(repair.split('AssertionError').length - 1).toBe(1);
    expect(repair).toContain(
      'Not done yet: the check `python3 test_calc.py` failed: its output is the result of call 2 above'
    );
    fake.assertDone();
  });

  it('a check that still fails after the repair rounds leads to a new plan, shown its output, which fixes the code', async () => {
    const p = makeProject({ 'calc.py': CALC, 'test_calc.py': TEST_CALC });
    // The first plan looks instead of fixing (as a small model's did), then runs the test as a step of its own.
    fake.on(
      'write_plan',
      {
        call: plan([
          step('s1', 'Look at add in calc.py', { expect: { check: 'python3 calc.py' } }),
          step('s2', 'Run test_calc.py', { depends_on: ['s1'], expect: { check: 'python3 test_calc.py' } }),
        ]),
      },
      { call: plan([step('s3', 'Fix add in calc.py', { expect: { changes: ['calc.py'] } })]) }
    );
    const run = {
      calls: [{ name: 'workspace__run_command', args: { step_id: 's2', command: 'python3 test_calc.py' } }],
    };
    const look = { calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: 'python3 calc.py' } }] };
    fake.on(
      'pick_tools',
      look,
      // s2 runs the test, and its two repair rounds only run it again: the step cannot make it pass.
      run,
      run,
      run,
      fixCalc('s3')
    );
    fake.on('compose_answer', { content: 'add adds now.' });

    const t = await TaskDriver.start(env, FIX_AND_TEST, p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toBe(CALC.replace('a - b', 'a + b'));
    const [replanned] = await t.eventsOf('replanned');
    expect(replanned.reason).toMatch(/not achieved: .*AssertionError/s);
    // The new plan was asked with the failing check's output in view.
    expect(fake.requestsFor('write_plan')[1].text).toMatch(/AssertionError/);
    fake.assertDone();
  });

  /**
   * Three plans, each one step with the check `checkOf(id)`, whose picks change calc.py without touching what the
   * check sees (a comment), as a stuck model's rewrites did; the third plan would fix it (the control that the rule,
   * not the script, ends the task after the second). Asserts it ended after the second, on the same failure.
   */
  async function stuckPlansEnd(checkOf: (id: string) => string) {
    const p = makeProject({ 'calc.py': CALC, 'test_calc.py': TEST_CALC });
    const checked = (id: string) => step(id, `Fix add in calc.py (${id})`, { expect: { check: checkOf(id) } });
    fake.on('write_plan', { call: plan([checked('s1')]) }, { call: plan([checked('s2')]) });
    fake.always('write_plan', { call: plan([checked('s3')]) });
    const comment = (id: string, n: number) => ({
      calls: [
        {
          name: 'workspace__edit_file',
          args: {
            step_id: id,
            path: 'calc.py',
            old_string: 'def add(',
            new_string: `# ${n}\ndef add(`,
            step_done: true,
          },
        },
      ],
    });
    fake.on(
      'pick_tools',
      comment('s1', 1),
      comment('s1', 2),
      comment('s1', 3),
      comment('s2', 4),
      comment('s2', 5),
      comment('s2', 6)
    );
    fake.always('pick_tools', fixCalc('s3'));
    fake.always('compose_answer', { content: 'add adds now.' });

    const t = await TaskDriver.start(env, FIX_AND_TEST, p.dir);

    expect(await t.result()).toMatchObject({ status: 'failed' });
    expect(fake.requestsFor('write_plan')).toHaveLength(2);
    expect(await t.countOf('replanned')).toBe(1);
    const finished = (await t.eventsOf('step_finished')).filter((e: { stepId: string }) => e.stepId === 's2');
    expect(finished[0]).toMatchObject({ status: 'failed' });
    expect(finished[0].reason).toMatch(/AssertionError.*as before the last new plan/s);
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toContain('a - b');
  }

  it('a check that fails after a new plan just as it did before it ends the task, rather than asking for plan after plan', async () => {
    await stuckPlansEnd(() => 'python3 test_calc.py');
  });

  it('a new plan whose check is only written another way, failing with the same output, ends the task too', async () => {
    await stuckPlansEnd((id) => (id === 's1' ? 'python3 test_calc.py' : 'python3 -B test_calc.py'));
  });

  it('a step not achieved that a later step builds on leads to a new plan at once: the later step never runs on it', async () => {
    const p = makeProject({ 'calc.py': CALC, 'test_calc.py': TEST_CALC });
    fake.on(
      'write_plan',
      {
        call: plan([
          step('s1', 'Fix add in calc.py', { expect: { changes: ['calc.py'] } }),
          step('s2', 'Run test_calc.py', { depends_on: ['s1'], expect: { check: 'python3 test_calc.py' } }),
        ]),
      },
      { call: plan([step('s3', 'Fix add in calc.py another way', { expect: { changes: ['calc.py'] } })]) }
    );
    // s1 and its two repair rounds only look: calc.py is never changed.
    const look = { calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: 'python3 calc.py' } }] };
    fake.on('pick_tools', look, look, look, fixCalc('s3'));
    fake.on('compose_answer', { content: 'add adds now.' });

    const t = await TaskDriver.start(env, FIX_AND_TEST, p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toBe(CALC.replace('a - b', 'a + b'));
    expect((await t.eventsOf('step_started')).map((e) => e.stepId)).toEqual(['s1', 's3']);
    const [replanned] = await t.eventsOf('replanned');
    expect(replanned.reason).toBe('step s1 (Step s1): not achieved: calc.py was not changed (s2 builds on it)');
    expect(fake.requestsFor('write_plan')[1].text).toContain('calc.py was not changed');
    fake.assertDone();
  });

  it('a step left open forever stops at its call budget, and says so', async () => {
    const p = makeProject({ '1.txt': '1', '2.txt': '2', '3.txt': '3', '4.txt': '4' });
    fake.on('write_plan', { call: plan([step('s1', 'Read the numbered files')]) });
    fake.on(
      'pick_tools',
      ...[1, 2, 3].map((n) => ({
        calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: `${n}.txt`, step_done: false } }],
      }))
    );
    fake.on('compose_answer', { content: 'read three files' });

    const t = await TaskDriver.start(env, 'Read the numbered files', p.dir, { maxCallsPerStep: 3 });

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toHaveLength(3);
    expect(finished.repairs).toEqual([
      "still open after 3 calls: the step's budget (limits.max_calls_per_step) is spent",
    ]);
    fake.assertDone();
  });

  it('a pick that only repeats, while the step has not done what it is to do, gets a repair round with what is missing', async () => {
    const p = makeProject({ 'calc.py': CALC });
    fake.on('write_plan', { call: plan([step('s1', 'Fix calc.py', { expect: { changes: ['calc.py'] } })]) });
    const grep = { name: 'workspace__grep', args: { step_id: 's1', pattern: 'return', step_done: false } };
    const fix = {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: 'calc.py', old_string: 'a - b', new_string: 'a + b', step_done: true },
    };
    fake.on('pick_tools', { calls: [grep] }, { calls: [grep] }, { calls: [fix] });
    fake.on('compose_answer', { content: 'Fixed.' });

    const t = await TaskDriver.start(env, 'Fix calc.py', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'calc.py'), 'utf8')).toContain('return a + b');
    const picks = fake.requestsFor('pick_tools');
    expect(picks[1].text).not.toContain('Not done yet');
    expect(picks[2].text).toContain('Not done yet: calc.py was not changed');
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.repairs).toContainEqual(
      'round 2 only repeated calls the step had made: asked again with what is missing'
    );
  });

  it('a pick that repeats a call the step already made ends the step rather than looping', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    const read = { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt', step_done: false } };
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]) });
    fake.on('pick_tools', { calls: [read] }, { calls: [read] });
    fake.on('compose_answer', { content: 'alpha' });

    const t = await TaskDriver.start(env, 'Read a.txt', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [finished] = await t.eventsOf('step_finished');
    expect(finished).toMatchObject({ status: 'done', calls: [{ tool: 'workspace__read_file', status: 'ok' }] });
    expect(finished.repairs).toEqual(['the next pick repeated a call the step had made: the step ends here']);
  });
});

describe('repair, not re-ask, what is unambiguous', () => {
  it('a pick holding a call and no_suitable_tool for one step runs the call, and the step is done', async () => {
    const p = makeProject({ 'hello.py': 'print("hello world")\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Run hello.py')]) });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__run_command', args: { step_id: 's1', command: 'python3 hello.py' } },
        { name: 'no_suitable_tool', args: { step_id: 's1', reason: 'cannot run Python' } },
      ],
    });
    fake.on('compose_answer', { content: 'It printed hello world.' });

    const t = await TaskDriver.start(env, 'Run hello.py', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [finished] = await t.eventsOf('step_finished');
    expect(finished).toMatchObject({ status: 'done', outcome: 'move_on' });
    expect(finished.summary).toContain('hello world');
    expect(finished.repairs).toEqual(["the picker also said no tool fits (cannot run Python); the step's call ran"]);
    expect(await t.countOf('replanned')).toBe(0);
  });

  it('a replan that repeats a finished step keeps its result, drops the repeat, and the task finishes', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Read a.txt'), step('s2', 'Open the PDF', { depends_on: ['s1'] })]) },
      // The repeat kept its id: a small model copies the finished step into the new plan.
      {
        call: plan([
          step('s1', 'Read a.txt'),
          step('s3', 'Say what a.txt holds', { needs_tool: false, depends_on: ['s1'] }),
        ]),
      }
    );
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] },
      { calls: [{ name: 'no_suitable_tool', args: { step_id: 's2', reason: 'no PDF reader' } }] }
    );
    fake.on('do_step', { content: 'a.txt holds alpha' });
    fake.on('compose_answer', { content: 'a.txt holds alpha; there is no PDF reader.' });

    const t = await TaskDriver.start(env, 'Read a.txt and the PDF', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(fake.requestsFor('write_plan')).toHaveLength(2); // no re-ask
    const [replanned] = await t.eventsOf('replanned');
    expect(replanned.repairs).toEqual(['step "s1" repeated a finished step: left out, its result kept']);
    expect(replanned.plan.steps.map((s: { id: string }) => s.id)).toEqual(['s3']);
    // s1 ran once.
    expect((await t.eventsOf('step_started')).filter((e) => e.stepId === 's1')).toHaveLength(1);
  });

  it('a plan whose step depends on a tool name is repaired, not re-asked three times until the task dies', async () => {
    const p = makeProject({ 'config.json': '{"debug": false}\n' });
    fake.on('write_plan', {
      call: plan([step('s1', 'Read config.json', { depends_on: ['workspace__list_dir'] })]),
    });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'config.json' } }],
    });
    fake.on('compose_answer', { content: 'debug is false' });

    const t = await TaskDriver.start(env, 'What does config.json say?', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done', answer: 'debug is false' });
    expect(fake.requestsFor('write_plan')).toHaveLength(1);
    const [planEvent] = await t.eventsOf('plan');
    expect(planEvent.repairs).toEqual([
      'step "s1" depended on "workspace__list_dir", which is no step: dependency dropped',
    ]);
  });

  it('a plan whose steps depend on each other is repaired in the order they are listed, not re-asked until the task dies', async () => {
    const p = makeProject({ 'docs/table.md': '| a | b |\n' });
    // The step that finds the file and the one that reads it depend on each other: no step could ever start.
    fake.on('write_plan', {
      call: plan([
        step('find', 'Find the table file', { depends_on: ['read'] }),
        step('read', 'Read docs/table.md', { depends_on: ['find'] }),
      ]),
    });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__find_files', args: { step_id: 'find', pattern: '*.md' } }] },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 'read', path: 'docs/table.md' } }] }
    );
    fake.on('compose_answer', { content: 'docs/table.md holds a table with columns a and b.' });

    const t = await TaskDriver.start(env, 'What does the table in docs say?', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(fake.requestsFor('write_plan')).toHaveLength(1); // no re-ask
    const [planEvent] = await t.eventsOf('plan');
    expect(planEvent.repairs).toEqual([
      'step "find" depended on "read", which comes after it (a cycle: find -> read -> find): dependency dropped',
    ]);
    // Both ran, the one listed first first: the read had the find's result.
    const started = (await t.eventsOf('step_started')).map((e) => e.stepId);
    expect(started).toEqual(['find', 'read']);
    expect(fake.requestsFor('pick_tools')[1].text).toContain('Results it builds on');
  });

  it('a Planner that cannot write a usable replan leaves the work done standing: the task is done and says what is missing', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    const twice = plan([step('x', 'x'), step('x', 'y')]);
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Read a.txt'), step('s2', 'Open the PDF', { depends_on: ['s1'] })]) },
      { call: twice },
      { call: twice },
      { call: twice }
    );
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] },
      { calls: [{ name: 'no_suitable_tool', args: { step_id: 's2', reason: 'no PDF reader' } }] }
    );
    fake.on('compose_answer', { content: 'a.txt holds alpha.' });

    const t = await TaskDriver.start(env, 'Read a.txt and the PDF', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({ status: 'done' });
    // The step tried and never finished says why.
    expect(result.notAchieved).toEqual([{ stepId: 's2', title: 'Step s2', reason: 'no suitable tool: no PDF reader' }]);
    expect(result.answer).toContain('**Not achieved**');
    // Each re-ask said concretely what to change.
    expect(fake.requestsFor('write_plan')[2].text).toContain('step id "x" is used more than once');
  });
});

describe('answers from results', () => {
  it('a task whose step did not achieve its instruction does not read as a success: answer and state say which', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    writeFileSync(path.join(p.outside, 'x.txt'), 'secret');
    fake.on('write_plan', {
      call: plan([step('s1', 'Read a.txt'), step('s2', 'Read ../outside/x.txt')]),
    });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's2', path: '../outside/x.txt' } },
      ],
    });
    // The model claims success: the answer still lists what was not achieved.
    fake.on('compose_answer', { content: 'Both files were read.' });

    const t = await TaskDriver.start(env, 'Read a.txt and ../outside/x.txt', p.dir);
    const asked = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: asked.requestId, decision: 'deny' });
    const result = await t.result();

    expect(result.status).toBe('done');
    expect(result.answer).toMatch(/^\*\*Not achieved\*\* \(1 of 2 steps\):\n- s2 .*\n\nBoth files were read\.$/);
    expect(result.answer).toContain('denied by the user');
    expect((await t.state()).notAchieved).toEqual([
      { stepId: 's2', title: 'Step s2', reason: expect.stringContaining('the user denied access') },
    ]);
    const composer = fake.requestsFor('compose_answer')[0].text;
    expect(composer).toContain('NOT ACHIEVED');
    expect(composer).toContain('Instruction: Read a.txt');
    expect(composer).toContain('alpha');
  });
});
