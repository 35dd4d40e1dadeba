/**
 * Real tasks that generalise: what a user notices when Klea meets a request it was never tuned on. Plans are the
 * Planner's own (never collapsed into the request), an example copied from the Planner's instructions is asked
 * again, a request in another language that names a file is work, and a question about the project's `.env` starts
 * a task that asks before it reads. A project whose files lie folders deep is listed as deep as the prompt has room.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeModel, FakeReply, RecordedRequest } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { SessionDriver } from '../support/session-driver';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { clarifySignal, permissionSignal } from '../../workflows/task/messages';
import { pythonTestCommand } from '../../activities/llm/plan-checks';

/** A step planned with a check that does the work (`sed -i` on the file): the run of it and the check's run. */
const LINKS = { html: '<img src="logo.png">\n', sed: "sed -i 's|logo.png|img/logo.png|' index.html" };
const linkStep = () =>
  plan([step('s1', 'Point the image link in index.html at img/logo.png.', { expect: { check: LINKS.sed } })]);
// The step's own call makes the change by an edit (a check is not run again after the step ran that very command).
const editLink = {
  calls: [
    {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: 'index.html', old_string: 'logo.png', new_string: 'img/logo.png' },
    },
  ],
};

/** A step that moves two images into a folder, and a pick that writes each there anew with what it guessed. */
const IMAGES = {
  'logo.png': '\u0089PNG logo bytes\n',
  'hero.png': '\u0089PNG hero bytes\n',
  'index.html': '<img src="logo.png">\n',
};
const moveImages = () =>
  plan([
    step('s1', 'Move logo.png and hero.png into assets/img/.', {
      expect: { changes: ['assets/img/logo.png', 'assets/img/hero.png'] },
    }),
  ]);
const guessImages = {
  calls: ['logo', 'hero'].map((n) => ({
    name: 'workspace__write_file',
    args: { step_id: 's1', path: `assets/img/${n}.png`, content: 'png' },
  })),
};

/** A step that moves the `.log` files into a folder, and a pick whose `mv` takes the first file of the listing. */
const LOGS = {
  'app.py': 'print(1)\n',
  'debug.log': 'debug\n',
  'server.log': 'server\n',
  // A name a shell would run, were it not quoted.
  '$(touch pwned).log': 'odd\n',
  'notes.txt': 'notes\n',
};
const LOGS_REQUEST = 'Move the .log files of the top folder into logs/.';
const moveLogs = () => plan([step('s1', 'Move the .log files into logs/.', { expect: { changes: ['logs/'] } })]);
const wrongMove = { calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: 'mv app.py logs/' } }] };

describe('one planner for every model (a server that holds answers to a schema)', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'generalise-plan', overrides: { model: { structured_output: 'json_schema' } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a three-step plan of a request that stands alone is kept as the Planner wrote it', async () => {
    const p = makeProject({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    const request = 'Read a.txt, read b.txt, then tell me which is longer.';
    const steps = [
      step('s1', 'Read a.txt'),
      step('s2', 'Read b.txt'),
      step('s3', 'Say which is longer', { needs_tool: false, depends_on: ['s1', 's2'] }),
    ];
    fake.on('write_plan', { call: plan(steps, {}, request) });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's2', path: 'b.txt' } },
      ],
    });
    fake.on('do_step', { content: 'a.txt is longer.' });
    fake.on('compose_answer', { content: 'a.txt is longer (6 characters against 5).' });

    const t = await TaskDriver.start(env, request, p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const [planned] = await t.eventsOf('plan');
    expect(planned.plan.steps.map((s) => [s.id, s.instruction])).toEqual(steps.map((s) => [s.id, s.instruction]));
    expect(planned.repairs).toBeUndefined();
    // The two reads ran as one batch, the third step after them.
    // Steps of one batch finish in either order; the step that needs both comes last.
    const finished = (await t.eventsOf('step_finished')).map((e) => [e.stepId, e.status]);
    expect(finished.slice(0, 2).sort()).toEqual([
      ['s1', 'done'],
      ['s2', 'done'],
    ]);
    expect(finished[2]).toEqual(['s3', 'done']);
    expect(finished).toHaveLength(3);
    // A standard model's answers are bounded by the server's own limit only.
    expect(fake.requests.map((r) => r.body.max_tokens)).toEqual(fake.requests.map(() => undefined));
  });

  it('the control for a check that changes files: kept as a check, it runs after the step and changes the file again', async () => {
    const p = makeProject({ 'index.html': LINKS.html });
    fake.on('write_plan', { call: linkStep() });
    fake.on('pick_tools', editLink);
    fake.on('compose_answer', { content: 'The link points at img/logo.png.' });

    const t = await TaskDriver.start(env, 'Move the logo link to img/.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    // The step made the change, and the check made it once more.
    expect(readFileSync(path.join(p.dir, 'index.html'), 'utf8')).toBe('<img src="img/img/logo.png">\n');
  });

  it('the control for a file a step moves: its write from nothing lands as written, the image lost in the copy', async () => {
    const p = makeProject(IMAGES);
    fake.on('write_plan', { call: moveImages() });
    fake.on('pick_tools', guessImages);
    fake.on('compose_answer', { content: 'Moved.' });

    const t = await TaskDriver.start(env, 'Put the images in assets/img/.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'assets/img/logo.png'), 'utf8')).toBe('png');
  });

  it("the control for a move: the model's own command runs as it is, and the .log files stay where they were", async () => {
    const p = makeProject(LOGS);
    fake.always('write_plan', { call: moveLogs() });
    fake.always('pick_tools', wrongMove);
    fake.always('compose_answer', { content: 'Not moved.' });

    const t = await TaskDriver.start(env, LOGS_REQUEST, p.dir);
    await t.result();
    for (const n of ['debug.log', 'server.log', 'app.py']) expect(existsSync(path.join(p.dir, n))).toBe(true);
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls[0]).toEqual({ tool: 'workspace__run_command', status: 'error' });
  });

  it("a plan that copies the Planner's example is asked again afresh, without the example, and the plan for the request runs", async () => {
    const p = makeProject({ 'notes.md': '# notes\n' });
    const copied = plan([step('s1', 'In orders.csv, rename the column qty to quantity.')]);
    fake.on(
      'write_plan',
      { call: copied },
      { call: plan([step('s1', 'Read notes.md', { needs_tool: true })], {}, 'Show notes.md') }
    );
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'notes.md' } }] });
    fake.on('compose_answer', { content: 'notes.md holds one heading.' });

    const t = await TaskDriver.start(env, 'What is in notes.md?', p.dir);

    expect(await t.result()).toMatchObject({ status: 'done' });
    const asks = fake.requestsFor('write_plan');
    expect(asks).toHaveLength(2);
    // Asked again with the copy and the example in view, a small model copies it again: the second ask has neither.
    expect(asks[1].system).not.toContain('orders.csv');
    expect(asks[1].text).not.toContain('orders.csv');
    expect(asks[1].text).toContain('What is in notes.md?');
    const [planned] = await t.eventsOf('plan');
    expect(planned.plan.steps[0].instruction).toBe('Read notes.md');
    // The control: the example itself is in the instructions the Planner saw first, so the check sees what it guards.
    expect(asks[0].system).toContain('orders.csv');
  });
});

const LICENSE = 'MIT License\n\nCopyright (c) 2026 <COPYRIGHT HOLDER>\n\nPermission is hereby granted.\n';
/** LICENSE with `name` as its holder, as the model answers it in a fenced block. */
const holder = (name: string) => `\`\`\`\n${LICENSE.replace('<COPYRIGHT HOLDER>', name)}\`\`\``;

/** Step `stepId` asks what the holder is before LICENSE changes; answered `name`, the task ends with it written. */
async function answersHolder(t: TaskDriver, dir: string, stepId: string, name: string): Promise<void> {
  const question = 'What should replace "<COPYRIGHT HOLDER>" in LICENSE?';
  expect(await t.waitFor('questions')).toMatchObject({ stepId, questions: [question] });
  // Nothing was written before the answer.
  expect(readFileSync(path.join(dir, 'LICENSE'), 'utf8')).toBe(LICENSE);
  await t.handle.signal(clarifySignal, { answers: { [question]: name } });
  expect(await t.result()).toMatchObject({ status: 'done' });
  expect(readFileSync(path.join(dir, 'LICENSE'), 'utf8')).toBe(LICENSE.replace('<COPYRIGHT HOLDER>', name));
}

describe("a small model's first pick that only reads the file its step is to change", () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv(
    { name: 'generalise-first-write', overrides: { model: { structured_output: 'json_schema', profile: 'small' } } },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  it('writes that file there and then, from the content the model writes for it: one pick, one call', async () => {
    const cfg = '[metadata]\nname = ledger\nversion = 1.0\n';
    const p = makeProject({ 'setup.cfg': cfg });
    const request = 'Set the version in setup.cfg to 1.1.';
    fake.on('write_plan', { call: plan([step('s1', request, { expect: { changes: ['setup.cfg'] } })]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'setup.cfg' } }] });
    fake.on('write_file_content', { content: `\`\`\`ini\n${cfg.replace('1.0', '1.1')}\`\`\`` });
    fake.on('compose_answer', { content: 'setup.cfg says version 1.1 now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, 'setup.cfg'), 'utf8')).toBe(cfg.replace('1.0', '1.1'));
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
    // The control for a follow-up (below): a task on its own is written for its request.
    const [asked] = fake.requestsFor('write_file_content');
    expect(asked.text).toContain(`Request: ${request}\n\nReply with the whole new content of setup.cfg.`);
    const [finished] = await t.eventsOf('step_finished');
    expect(finished).toMatchObject({ status: 'done', calls: [{ tool: 'workspace__write_file', status: 'ok' }] });
  });

  // A follow-up's request means what the session's earlier turns say: its write is shown the Planner's step, which
  // says it in full (the request alone, "Yes, do that.", would not).
  const followUp = {
    recentTurns: [
      { role: 'user' as const, text: 'What version does setup.cfg give?' },
      { role: 'assistant' as const, text: 'setup.cfg gives version 1.0. Shall I set it to 1.1?' },
    ],
  };
  // An edit the model aims badly, written whole.
  const badEdit = { old_string: 'version = 1', new_string: 'version: 1.1' };
  for (const waits of [false, true]) {
    it(`a follow-up's write is shown the step (${waits ? "the workflow's pick" : 'the first pick, with the plan'})`, async () => {
      const cfg = '[metadata]\nname = ledger\nversion = 1.0\n';
      const p = makeProject({ 'setup.cfg': cfg, 'NOTES.md': 'next version: 1.1\n' });
      const instruction = 'Set the version in setup.cfg to 1.1.';
      fake.on('write_plan', {
        call: plan([
          ...(waits ? [step('s0', 'Read NOTES.md.')] : []),
          step('s1', instruction, { depends_on: waits ? ['s0'] : [], expect: { changes: ['setup.cfg'] } }),
        ]),
      });
      fake.on(
        'pick_tools',
        ...(waits ? [{ calls: [{ name: 'workspace__read_file', args: { step_id: 's0', path: 'NOTES.md' } }] }] : []),
        { calls: [{ name: 'workspace__edit_file', args: { step_id: 's1', path: 'setup.cfg', ...badEdit } }] }
      );
      fake.on('write_file_content', { content: `\`\`\`ini\n${cfg.replace('1.0', '1.1')}\`\`\`` });
      fake.on('compose_answer', { content: 'setup.cfg says version 1.1 now.' });

      const t = await TaskDriver.start(env, 'Yes, do that.', p.dir, followUp);
      expect(await t.result()).toMatchObject({ status: 'done' });
      expect(readFileSync(path.join(p.dir, 'setup.cfg'), 'utf8')).toBe(cfg.replace('1.0', '1.1'));
      const [asked] = fake.requestsFor('write_file_content');
      expect(asked.text).toContain(`Request: Yes, do that.\n\nStep: ${instruction}`);
    });
  }

  // "Yes, do that." names no file: the turn it answers does.
  for (const [named, waits] of [
    [true, false],
    [true, true],
    [false, false],
  ]) {
    it(`a follow-up's first pick that only reads the file its step is to change ${named ? 'writes it, when the turn it answers names it' : 'runs the read, the control: when no turn names it'} (${waits ? "the workflow's pick" : 'the first pick, with the plan'})`, async () => {
      const cfg = '[metadata]\nname = ledger\nversion = 1.0\n';
      const p = makeProject({ 'setup.cfg': cfg, 'NOTES.md': 'next version: 1.1\n' });
      fake.on('write_plan', {
        call: plan([
          ...(waits ? [step('s0', 'Read NOTES.md.')] : []),
          step('s1', 'Set the version in setup.cfg to 1.1.', {
            depends_on: waits ? ['s0'] : [],
            expect: { changes: ['setup.cfg'] },
          }),
        ]),
      });
      const read = { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'setup.cfg' } }] };
      const edit = {
        calls: [{ name: 'workspace__edit_file', args: { step_id: 's1', path: 'setup.cfg', ...badEdit } }],
      };
      const notes = { calls: [{ name: 'workspace__read_file', args: { step_id: 's0', path: 'NOTES.md' } }] };
      fake.on('pick_tools', ...(waits ? [notes] : []), read, ...(named ? [] : [edit]));
      fake.on('write_file_content', { content: `\`\`\`ini\n${cfg.replace('1.0', '1.1')}\`\`\`` });
      fake.on('compose_answer', { content: 'setup.cfg says version 1.1 now.' });
      const turns = named
        ? followUp
        : {
            recentTurns: [
              { role: 'user' as const, text: 'What version is the package at?' },
              { role: 'assistant' as const, text: 'It is at version 1.0. Shall I set it to 1.1?' },
            ],
          };

      const t = await TaskDriver.start(env, 'Yes, do that.', p.dir, turns);
      expect(await t.result()).toMatchObject({ status: 'done' });
      expect(readFileSync(path.join(p.dir, 'setup.cfg'), 'utf8')).toBe(cfg.replace('1.0', '1.1'));
      const finished = (await t.eventsOf('step_finished')).find((f) => f.stepId === 's1');
      expect(finished?.calls).toEqual([
        ...(named ? [] : [{ tool: 'workspace__read_file', status: 'ok' }]),
        { tool: 'workspace__write_file', status: 'ok' },
      ]);
      expect(fake.requestsFor('pick_tools')).toHaveLength((named ? 1 : 2) + (waits ? 1 : 0));
    });
  }

  describe('a file whose sections hold the same keys, and a request that names one of the sections', () => {
    const ini = '[web]\nhost = 0.0.0.0\nport = 80\n\n[mail]\nhost = localhost\nport = 25\n';
    /** The 0.5B model's way: the section the write is told the request names, else the first with the keys. */
    const writesSection: FakeReply = (req: RecordedRequest) => {
      const section = /the section \[(\w+)\] of settings\.ini/.exec(req.text)?.[1] ?? 'web';
      const out = ini.replace(
        new RegExp(`(\\[${section}\\]\\nhost = )[^\\n]+\\nport = \\d+`),
        '$1relay.corp\nport = 2525'
      );
      return { content: `\`\`\`ini\n${out}\`\`\`` };
    };
    async function run(request: string) {
      const p = makeProject({ 'settings.ini': ini });
      fake.on('write_plan', { call: plan([step('s1', request, { expect: { changes: ['settings.ini'] } })]) });
      fake.on('pick_tools', {
        calls: [
          {
            name: 'workspace__edit_file',
            args: { step_id: 's1', path: 'settings.ini', old_string: 'port = 80', new_string: 'port = 2525' },
          },
        ],
      });
      fake.on('write_file_content', writesSection);
      fake.on('compose_answer', { content: 'settings.ini points at relay.corp:2525 now.' });
      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });
      const [asked] = fake.requestsFor('write_file_content');
      return { written: readFileSync(path.join(p.dir, 'settings.ini'), 'utf8'), asked: asked.text };
    }

    it('the write is told which section the request names, and that section is changed', async () => {
      const { written, asked } = await run('Our mail relay moved: point settings.ini at host relay.corp, port 2525.');
      expect(asked).toContain('The request names the section [mail] of settings.ini.');
      expect(written).toBe(ini.replace('host = localhost\nport = 25', 'host = relay.corp\nport = 2525'));
    });

    it('the control: a request that names no section is told none, and the first section takes the change', async () => {
      const { written, asked } = await run('Point settings.ini at host relay.corp, port 2525.');
      expect(asked).not.toContain('The request names the section');
      expect(written).toBe(ini.replace('host = 0.0.0.0\nport = 80', 'host = relay.corp\nport = 2525'));
    });
  });

  it('so does the first pick of a step that waits for another: it writes the file it is to change', async () => {
    const cfg = '[metadata]\nname = ledger\nversion = 1.0\n';
    const p = makeProject({ 'setup.cfg': cfg, 'NOTES.md': 'next version: 1.1\n' });
    const request = 'Set the version in setup.cfg to the one NOTES.md gives.';
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Read NOTES.md.'),
        step('s2', 'Set the version in setup.cfg.', { depends_on: ['s1'], expect: { changes: ['setup.cfg'] } }),
      ]),
    });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'NOTES.md' } }] },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's2', path: 'setup.cfg' } }] }
    );
    fake.on('write_file_content', { content: `\`\`\`ini\n${cfg.replace('1.0', '1.1')}\`\`\`` });
    fake.on('compose_answer', { content: 'setup.cfg says version 1.1 now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, 'setup.cfg'), 'utf8')).toBe(cfg.replace('1.0', '1.1'));
    // Its one pick became the write: without it, the read ran and a repair round wrote the file.
    expect(fake.requestsFor('pick_tools')).toHaveLength(2);
    const finished = await t.eventsOf('step_finished');
    expect(finished.find((f) => f.stepId === 's2')).toMatchObject({
      status: 'done',
      calls: [{ tool: 'workspace__write_file', status: 'ok' }],
    });
  });

  it('a step planned to change a value, not a file, changes the file its instruction names', async () => {
    const cfg = '# local\nAPP=ledger\nDEBUG=true\nLOG=info\n';
    const p = makeProject({ 'local.cfg': cfg, 'app.py': 'import os\n' });
    const request = 'Switch DEBUG off in local.cfg.';
    const planned = step('s1', 'In local.cfg, set DEBUG to false.', { expect: { changes: ['DEBUG = false'] } });
    fake.on('write_plan', { call: plan([planned]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'local.cfg' } }] });
    fake.on('write_file_content', { content: `\`\`\`\n${cfg.replace('true', 'false')}\`\`\`` });
    fake.on('compose_answer', { content: 'DEBUG is false in local.cfg now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    // Without the repair the step had no change to make: the read ended it, and local.cfg stayed as it was.
    expect(readFileSync(path.join(p.dir, 'local.cfg'), 'utf8')).toBe(cfg.replace('true', 'false'));
    const [planEvent] = await t.eventsOf('plan');
    expect(planEvent.plan.steps[0].expect).toEqual({ changes: ['local.cfg'] });
  });

  it('a blind edit of a file behind the gate is a read first; the change then starts from what the read showed', async () => {
    const dotenv = '# local\nAPP=ledger\nDEBUG=true\nLOG=info\n';
    const p = makeProject({ '.env': dotenv, 'app.py': 'import os\n' });
    const request = 'Switch DEBUG off in my .env.';
    fake.on('write_plan', {
      call: plan([step('s1', 'In .env, set DEBUG to false.', { expect: { changes: ['.env'] } })]),
    });
    // The model guesses what to replace, twice: without the read, "DEBUG=true" becomes "false=true".
    const blind = {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: '.env', old_string: 'DEBUG', new_string: 'false' },
    };
    fake.on('pick_tools', { calls: [blind] }, { calls: [blind] });
    fake.on('write_file_content', { content: `\`\`\`\n${dotenv.replace('DEBUG=true', 'DEBUG=false')}\`\`\`` });
    fake.on('compose_answer', { content: 'DEBUG is false in .env now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    for (const op of ['read', 'write']) {
      const ask = await t.waitFor('permission_requested', (e) => e.op === op);
      await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'allow_once' });
    }
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, '.env'), 'utf8')).toBe(dotenv.replace('DEBUG=true', 'DEBUG=false'));
    // The file reached the writer from the read the user allowed, whole.
    const [writer] = fake.requestsFor('write_file_content');
    expect(writer.text).toContain(`File .env:\n\`\`\`\n${dotenv}\`\`\``);
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toEqual([
      { tool: 'workspace__read_file', status: 'ok' },
      { tool: 'workspace__write_file', status: 'ok' },
    ]);
  });

  it("attack on the check: a check that changes files is made the step's work, and the step is judged by the file it changed", async () => {
    const p = makeProject({ 'index.html': LINKS.html });
    fake.on('write_plan', { call: linkStep() });
    fake.on('pick_tools', editLink);
    // A small model's edit is written whole (./file-content): the file as the step leaves it.
    fake.on('write_file_content', { content: '```html\n<img src="img/logo.png">\n```' });
    fake.on('compose_answer', { content: 'The link points at img/logo.png.' });

    const t = await TaskDriver.start(env, 'Move the logo link to img/.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'index.html'), 'utf8')).toBe('<img src="img/logo.png">\n');
    const [planEvent] = await t.eventsOf('plan');
    expect(planEvent.plan.steps[0]).toMatchObject({
      instruction: `Point the image link in index.html at img/logo.png. Run \`${LINKS.sed}\`.`,
      expect: { changes: ['index.html'] },
    });
    expect(planEvent.plan.steps[0].expect?.check).toBeUndefined();
    const [asked] = fake.requestsFor('pick_tools');
    expect(asked.text).toContain('Done when: index.html changed.');
  });

  it('attack on the images: a file a step moves is copied by a command, byte for byte, never written from a guess', async () => {
    const p = makeProject(IMAGES);
    fake.on('write_plan', { call: moveImages() });
    fake.on('pick_tools', guessImages);
    fake.on('compose_answer', { content: 'Copied into assets/img/.' });

    const t = await TaskDriver.start(env, 'Put the images in assets/img/.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    for (const n of ['logo.png', 'hero.png'])
      expect(readFileSync(path.join(p.dir, 'assets/img', n), 'utf8')).toBe(IMAGES[n as keyof typeof IMAGES]);
    const [finished] = await t.eventsOf('step_finished');
    expect(finished.calls).toEqual([
      { tool: 'workspace__run_command', status: 'ok' },
      { tool: 'workspace__run_command', status: 'ok' },
    ]);
    expect(finished.repairs).toContain('assets/img/logo.png: copied from logo.png by a command, not written anew');
    expect(fake.requestsFor('write_file_content')).toEqual([]);
  });

  it('attack on the moves: a command that moves the wrong file moves the files the plan does, each by its quoted name', async () => {
    const p = makeProject(LOGS);
    fake.on('write_plan', { call: moveLogs() });
    fake.on('pick_tools', wrongMove);
    fake.on('compose_answer', { content: 'Moved into logs/.' });

    const t = await TaskDriver.start(env, LOGS_REQUEST, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    for (const n of ['debug.log', 'server.log', '$(touch pwned).log'])
      expect(readFileSync(path.join(p.dir, 'logs', n), 'utf8')).toBe(LOGS[n as keyof typeof LOGS]);
    // The files of other kinds stay; a name is never run.
    expect(readdirSync(p.dir).sort()).toEqual(['app.py', 'logs', 'notes.txt']);
    expect(existsSync(path.join(p.dir, 'pwned'))).toBe(false);
    const [finished] = await t.eventsOf('step_finished');
    expect(finished).toMatchObject({ status: 'done', calls: [{ tool: 'workspace__run_command', status: 'ok' }] });
    expect(finished.repairs?.[0]).toMatch(/^`mv app\.py logs\/` made the moves the plan asks for: /);
  });

  describe('a question with a sentence after it, planned as a change to the data file it asks about', () => {
    const weather = 'city,temp\nOslo,4\nLima,22\nCairo,30\n';
    const request = 'Which city in weather.csv is warmest? Give the city and its temperature.';
    const changing = plan([
      step('s1', 'Find the warmest city in weather.csv.', { expect: { changes: ['weather.csv'] } }),
    ]);
    const cut = '```\ncity,temp\nCairo,30\n```';

    it('attack on the data: the model is asked what the request does to the file, and the file is not written over', async () => {
      const p = makeProject({ 'weather.csv': weather });
      fake.on('write_plan', { call: changing });
      fake.on('asks_changes', { call: { effect: 'reads it' } });
      const read = { name: 'workspace__read_file', args: { step_id: 's1', path: 'weather.csv' } };
      // With the change left out of the plan, nothing asks the step to write the file: its pick reads it.
      fake.on('pick_tools', { calls: [read] });
      fake.on('compose_answer', { content: 'Cairo, at 30.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'weather.csv'), 'utf8')).toBe(weather);
      const [asked] = fake.requestsFor('asks_changes');
      expect(asked.text).toContain('What does carrying out this request do to weather.csv?');
      const [planEvent] = await t.eventsOf('plan');
      expect(planEvent.plan.steps[0].expect).toBeUndefined();
      // Not planned back in by the check on plans that change nothing: its verdict stands.
      expect(fake.requestsFor('wants_changes')).toHaveLength(0);
    });

    it('the control: a plan that keeps the change writes the file over, as it did before the question was seen', async () => {
      const p = makeProject({ 'weather.csv': weather });
      fake.on('write_plan', { call: changing });
      fake.on('asks_changes', { call: { effect: 'changes it' } });
      const edit = {
        name: 'workspace__edit_file',
        args: { step_id: 's1', path: 'weather.csv', old_string: 'x', new_string: 'y' },
      };
      fake.on('pick_tools', { calls: [edit] });
      fake.on('write_file_content', { content: cut });
      fake.on('compose_answer', { content: 'Cairo, at 30.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });
      expect(readFileSync(path.join(p.dir, 'weather.csv'), 'utf8')).toBe('city,temp\nCairo,30\n');
    });
  });

  describe('a question planned as a change to the folders of the path it is about', () => {
    const project = {
      'app.py': 'from billing.core.mailer import send_invoice\n',
      'billing/core/mailer.py': 'def send_invoice(order):\n    return order\n',
    };
    // The 0.5B plan's shape: the folders of the path it was told, as the question's changes.
    const folders = plan([
      step('s1', 'Say where send_invoice is defined.', { expect: { changes: ['billing', 'core', 'mailer'] } }),
    ]);
    /** Runs the request with that plan and a pick that reads the file; its end and the step's. */
    async function run(request: string) {
      const p = makeProject(project);
      fake.always('write_plan', { call: folders });
      fake.always('pick_tools', {
        calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'billing/core/mailer.py' } }],
      });
      fake.always('compose_answer', { content: 'In billing/core/mailer.py, line 1.' });
      const t = await TaskDriver.start(env, request, p.dir);
      const result = await t.result();
      const [finished] = await t.eventsOf('step_finished');
      return { result, finished, plan: (await t.eventsOf('plan'))[0].plan };
    }

    it('the folder is left out of the plan: the question is answered from the read, nothing changed', async () => {
      const { result, finished, plan: planned } = await run("Where's send_invoice defined? Not where it's called.");
      expect(result).toMatchObject({ status: 'done', answer: 'In billing/core/mailer.py, line 1.' });
      expect(planned.steps[0].expect).toBeUndefined();
      expect(finished).toMatchObject({ status: 'done' });
      expect(fake.requestsFor('asks_changes')).toHaveLength(0);
    });

    it('the control: asked as an order, the folder stays planned and the step that only reads is not achieved', async () => {
      const { result, plan: planned } = await run('Find the definition of send_invoice and name its file.');
      expect(planned.steps[0].expect).toEqual({ changes: ['billing/'] });
      expect(result).toMatchObject({ status: 'failed' });
    });
  });

  describe('a new script planned beside a change to the data file it is to read', () => {
    const orders = 'customer,amount\nAda,5\nBo,9\nAda,6\n';
    const request = 'Write best.py that reads orders.csv and prints the customer who spent the most.';
    const script =
      "import csv\nt = {}\nfor r in csv.DictReader(open('orders.csv')):\n    t[r['customer']] = t.get(r['customer'], 0) + float(r['amount'])\nprint(max(t, key=t.get))\n";
    const both = plan([
      step('s1', 'Read orders.csv and write best.py.', { expect: { changes: ['orders.csv', 'best.py'] } }),
    ]);
    const edit = {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: 'orders.csv', old_string: 'customer', new_string: 'name' },
    };
    const write = { name: 'workspace__write_file', args: { step_id: 's1', path: 'best.py', content: 'x' } };
    /** Runs the task: it is done, orders.csv as it was and best.py written; its first plan event. */
    const dataKeptScriptWritten = async (dir: string) => {
      const t = await TaskDriver.start(env, request, dir);
      expect(await t.result()).toMatchObject({ status: 'done' });
      expect(readFileSync(path.join(dir, 'orders.csv'), 'utf8')).toBe(orders);
      expect(readFileSync(path.join(dir, 'best.py'), 'utf8')).toBe(script);
      const [planEvent] = await t.eventsOf('plan');
      return planEvent;
    };

    it('attack on the data: the model is asked what the request does to the data file, and only the script is written', async () => {
      const p = makeProject({ 'orders.csv': orders });
      fake.on('write_plan', { call: both });
      fake.on('asks_changes', { call: { effect: 'reads it' } });
      // Left with the new script alone, the step writes it without a pick.
      fake.on('write_file_content', { content: '```python\n' + script + '```' });
      fake.on('compose_answer', { content: 'best.py prints Ada.' });

      const planEvent = await dataKeptScriptWritten(p.dir);
      expect(planEvent.plan.steps[0].expect?.changes).toEqual(['best.py']);
      expect(fake.requestsFor('pick_tools')).toEqual([]);
    });

    it('attack on the data, planned in a step of its own: the reading step changes nothing, and the script is written', async () => {
      // The 0.5B plan's shape: "Read orders.csv" to change orders.csv, the script in a later step.
      const split = plan([
        step('s1', 'Read orders.csv and list the customers.', { expect: { changes: ['orders.csv'] } }),
        step('s2', 'Write best.py.', { depends_on: ['s1'], expect: { changes: ['best.py'] } }),
      ]);
      const p = makeProject({ 'orders.csv': orders });
      fake.on('write_plan', { call: split });
      fake.on('asks_changes', { call: { effect: 'reads it' } });
      fake.on('pick_tools', {
        calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'orders.csv', step_done: true } }],
      });
      fake.on('write_file_content', { content: '```python\n' + script + '```' });
      fake.on('compose_answer', { content: 'best.py prints Ada.' });

      const planEvent = await dataKeptScriptWritten(p.dir);
      expect(planEvent.plan.steps.map((s: { expect?: { changes?: string[] } }) => s.expect?.changes)).toEqual([
        undefined,
        ['best.py'],
      ]);
      expect(fake.requestsFor('asks_changes')).toHaveLength(1);
    });

    it('the control: kept as a change, the data file is edited as the pick asks, its header lost', async () => {
      const p = makeProject({ 'orders.csv': orders });
      fake.on('write_plan', { call: both });
      fake.on('asks_changes', { call: { effect: 'changes it' } });
      fake.on('pick_tools', { calls: [edit, write] });
      fake.on(
        'write_file_content',
        { content: '```\n' + orders.replace('customer', 'name') + '```' },
        { content: '```python\n' + script + '```' }
      );
      fake.on('compose_answer', { content: 'best.py prints Ada.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });
      expect(readFileSync(path.join(p.dir, 'orders.csv'), 'utf8')).toBe(orders.replace('customer', 'name'));
    });
  });

  describe('a first plan that changes nothing, for a request that names a script to fix', () => {
    const script = 'for f in logs/*.log; do grep -c ERROR "$f"; done\n';
    const fixed = 'cat logs/*.log | grep -c ERROR\n';
    const files = { 'count.sh': script, 'logs/a.log': 'ERROR x\nok\n', 'logs/b.log': 'ERROR y\nERROR z\n' };
    const request = 'count.sh prints a number per log file, where it should print the total. Fix it.';
    // The Planner does the script's work by hand: nothing would change, and the script would print as before.
    const byHand = plan([
      step('s1', 'Count the ERROR lines of every log.', { expect: { check: 'grep -c ERROR logs/a.log' } }),
    ]);

    it('is planned again when the model says the user wants the script changed; the script then prints the total', async () => {
      const p = makeProject(files);
      fake.on(
        'write_plan',
        { call: byHand },
        {
          call: plan([
            step('s1', 'Make count.sh print the total.', { expect: { changes: ['count.sh'], check: 'bash count.sh' } }),
          ]),
        }
      );
      fake.on('wants_changes', { call: { answer: 'yes' } });
      fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'count.sh' } }] });
      fake.on('write_file_content', { content: `\`\`\`bash\n${fixed}\`\`\`` });
      fake.on('compose_answer', { content: 'count.sh prints the total now: 3.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'count.sh'), 'utf8')).toBe(fixed);
      const [asked] = fake.requestsFor('wants_changes');
      expect(asked.text).toContain('Does the user want the agent to edit, move or delete count.sh?');
      // Asked again with the reason, the plan it replaces in view.
      const [, again] = fake.requestsFor('write_plan');
      expect(again.text).toContain('The request asks to change count.sh, and no step of this plan changes anything');
      expect(again.text).toContain('Count the ERROR lines of every log.');
      const [planEvent] = await t.eventsOf('plan');
      expect(planEvent.plan.steps[0].expect).toEqual({ changes: ['count.sh'], check: 'bash count.sh' });
      expect(planEvent.repairs).toContain(
        'the plan changed nothing, though the request wants count.sh changed: planned again'
      );
    });

    it('the control: where the model says the user does not, the plan is kept, and the script is left as it was', async () => {
      const p = makeProject(files);
      fake.on('write_plan', { call: byHand });
      fake.on('wants_changes', { call: { answer: 'no' } });
      const run = { name: 'workspace__run_command', args: { step_id: 's1', command: 'grep -c ERROR logs/a.log' } };
      fake.on('pick_tools', { calls: [run] });
      fake.on('compose_answer', { content: 'logs/a.log has 1 ERROR line.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'count.sh'), 'utf8')).toBe(script);
      expect(fake.requestsFor('write_plan')).toHaveLength(1);
    });
  });

  it("Klea's own name written in place of the user's: the step asks the user first, then writes their answer", async () => {
    const p = makeProject({ LICENSE, 'README.md': '# ledger\n' });
    const request = 'Fill in the copyright holder in LICENSE: it still says <COPYRIGHT HOLDER>.';
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Replace <COPYRIGHT HOLDER> in LICENSE with your name.', { expect: { changes: ['LICENSE'] } }),
      ]),
    });
    const edit = {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: 'LICENSE', old_string: 'x', new_string: 'y' },
    };
    fake.on('pick_tools', { calls: [edit] }, { calls: [edit] });
    // The model fills in the name its prompts carry, Klea's; once the user has answered, theirs.
    fake.on('write_file_content', { content: holder('Klea') }, { content: holder('Northwind Traders Ltd.') });
    fake.on('compose_answer', { content: 'LICENSE names Northwind Traders Ltd. now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    await answersHolder(t, p.dir, 's1', 'Northwind Traders Ltd.');
    const [first, second] = fake.requestsFor('write_file_content');
    // The plan's only change is first written for the request in the user's words; once they have answered, for the
    // step that carries the answer.
    expect(first.text).toContain(`Request: ${request}`);
    expect(first.text).not.toContain('Step:');
    expect(second.text).toContain('Step: Replace <COPYRIGHT HOLDER> in LICENSE with your name.');
    expect(second.text).toContain('Northwind Traders Ltd.');
  });

  /**
   * A task that is to fill in LICENSE's holder, planned as one step that changes it and picked as `edit` twice: the
   * model's first whole-file write is `first`; once the user has answered `name`, the LICENSE with their name.
   */
  async function fillsHolder(
    request: string,
    edit: { old_string: string; new_string: string },
    first: string,
    name: string
  ) {
    const p = makeProject({ LICENSE, 'README.md': '# ledger\n' });
    fake.on('write_plan', {
      call: plan([step('s1', 'In LICENSE, put the holder in.', { expect: { changes: ['LICENSE'] } })]),
    });
    const call = { name: 'workspace__edit_file', args: { step_id: 's1', path: 'LICENSE', ...edit } };
    fake.on('pick_tools', { calls: [call] }, { calls: [call] });
    fake.on('write_file_content', { content: first }, { content: holder(name) });
    fake.on('compose_answer', { content: `LICENSE names ${name} now.` });
    const t = await TaskDriver.start(env, request, p.dir);
    await answersHolder(t, p.dir, 's1', name);
    return p;
  }

  it('a blank made up in place of the user\'s fact ("[Your Name]"): the step asks the user first, then writes their answer', async () => {
    // A blank of the model's own where the user's name belongs.
    const request = 'LICENSE still has a placeholder for the holder. Fill it in.';
    await fillsHolder(request, { old_string: 'x', new_string: 'y' }, holder('[Your Name]'), 'Ada Lovelace');
  });

  it('a blank the request points at, kept by the write: the step asks the user first, then writes their answer', async () => {
    // Lacking the fact, the model changes another line and keeps the blank.
    const retitle = { old_string: 'MIT License', new_string: 'Apache License 2.0' };
    const retitled = `\`\`\`\n${LICENSE.replace('MIT License', 'Apache License 2.0')}\`\`\``;
    const request = 'LICENSE still reads <COPYRIGHT HOLDER>; put the right one there.';
    const p = await fillsHolder(request, retitle, retitled, 'Northwind Traders Ltd.');
    // The title the model would have changed is as it was.
    expect(readFileSync(path.join(p.dir, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
  });

  it('the control: a blank the file already had, kept by a write that changes something else, asks nothing', async () => {
    const p = makeProject({ LICENSE, 'README.md': '# ledger\n' });
    fake.on('write_plan', {
      call: plan([step('s1', 'In LICENSE, make the year 2027.', { expect: { changes: ['LICENSE'] } })]),
    });
    const edit = {
      name: 'workspace__edit_file',
      args: { step_id: 's1', path: 'LICENSE', old_string: 'x', new_string: 'y' },
    };
    fake.on('pick_tools', { calls: [edit] });
    fake.on('write_file_content', { content: `\`\`\`\n${LICENSE.replace('2026', '2027')}\`\`\`` });
    fake.on('compose_answer', { content: 'The year is 2027 now.' });

    const t = await TaskDriver.start(env, 'Make the year in LICENSE 2027.', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(await t.countOf('questions')).toBe(0);
    expect(readFileSync(path.join(p.dir, 'LICENSE'), 'utf8')).toBe(LICENSE.replace('2026', '2027'));
  });

  it('so does a step that waits for another: it stops to ask at its own first pick, before any call', async () => {
    const p = makeProject({ LICENSE, 'README.md': '# ledger\n' });
    const request = 'Read README.md, then fill in the copyright holder in LICENSE.';
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Read README.md.'),
        step('s2', 'Fill in <COPYRIGHT HOLDER> in LICENSE.', { depends_on: ['s1'], expect: { changes: ['LICENSE'] } }),
      ]),
    });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'README.md' } }] },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's2', path: 'LICENSE' } }] },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's2', path: 'LICENSE' } }] }
    );
    fake.on('write_file_content', { content: holder('Klea') }, { content: holder('Ada Lovelace') });
    fake.on('compose_answer', { content: 'LICENSE names Ada Lovelace now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    await answersHolder(t, p.dir, 's2', 'Ada Lovelace');
    // The step started once before it asked and once after: its one attempt is the one after the answer.
    const started = (await t.eventsOf('step_started')).filter((e) => e.stepId === 's2');
    expect(started.map((e) => e.attempt)).toEqual([1, 1]);
    const finished = (await t.eventsOf('step_finished')).find((e) => e.stepId === 's2');
    expect(finished).toMatchObject({ status: 'done', calls: [{ tool: 'workspace__write_file', status: 'ok' }] });
  });

  it('every answer is bounded: a run-on new file, on a server with no limit of its own, is cut and asked for again', async () => {
    const p = makeProject({ 'README.md': '# scratch\n' });
    const request = 'Create hello.py that prints hello world.';
    fake.on('write_plan', { call: plan([step('s1', request, { expect: { changes: ['hello.py'] } })]) });
    // The model repeats one line for as long as it may: cut at `max_tokens` when the request sets it, else an
    // answer that never comes (the request waits out its timeout).
    const runOn = (req: RecordedRequest): FakeReply =>
      typeof req.body.max_tokens === 'number'
        ? { content: '```python\n' + 'print("hello world")\n'.repeat(req.body.max_tokens / 8), truncated: true }
        : { content: '', delayMs: 600_000 };
    fake.on('write_file_content', runOn, { content: '```python\nprint("hello world")\n```' });
    fake.on('compose_answer', { content: 'hello.py prints hello world.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, 'hello.py'), 'utf8')).toBe('print("hello world")\n');
    const writes = fake.requestsFor('write_file_content');
    expect(writes.map((r) => r.body.max_tokens)).toEqual([512, 512]);
    expect(writes[1].text).toContain('cut off at the output limit');
    // A plan, the longest answer a node validly gives, may run longer.
    expect(fake.requestsFor('write_plan').map((r) => r.body.max_tokens)).toEqual([768]);
    expect(fake.requests.filter((r) => r.node !== 'write_plan').every((r) => r.body.max_tokens === 512)).toBe(true);
  });

  /** Step s1 wrote its file, failed its check, was shown `failure` in its repair round, wrote it again and passed. */
  async function repairedOnce(t: TaskDriver, failure: string | RegExp): Promise<void> {
    const [, repair] = fake.requestsFor('write_file_content');
    expect(repair.text).toMatch(failure);
    const [s1] = await t.eventsOf('step_finished');
    expect(s1).toMatchObject({
      status: 'done',
      calls: [
        { tool: 'workspace__write_file', status: 'ok' },
        { tool: 'workspace__run_command', status: 'error' },
        { tool: 'workspace__write_file', status: 'ok' },
        { tool: 'workspace__run_command', status: 'ok' },
      ],
    });
  }

  it("attack on the examples: a request's examples check the step that writes the function; a hostile value runs nothing, a wrong example reaches the repair round", async () => {
    const units = (body: string) => `function toKb(n) {\n  return ${body};\n}\nmodule.exports = { toKb };\n`;
    const p = makeProject({ 'units.js': 'module.exports = {};\n' });
    // The third example's input is a command substitution: it is a value the check passes to the function, not a command.
    const request =
      'Add toKb(n) to units.js and export it: 2048 -> "2 KB", 1536 -> "1.5 KB", "$(touch pwned)" -> "NaN KB".';
    fake.on('write_plan', { call: plan([step('s1', 'Add toKb to units.js.', { expect: { changes: ['units.js'] } })]) });
    fake.always('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'units.js', content: 'x' } }],
    });
    const wrong = units('(n / 1024).toFixed(1) + " KB"');
    const right = units('Math.round((n / 1024) * 10) / 10 + " KB"');
    fake.on('write_file_content', { content: `\`\`\`js\n${wrong}\`\`\`` }, { content: `\`\`\`js\n${right}\`\`\`` });
    fake.on('compose_answer', { content: 'toKb is in units.js, and the examples hold.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });

    expect(readFileSync(path.join(p.dir, 'units.js'), 'utf8')).toBe(right);
    expect(existsSync(path.join(p.dir, 'pwned'))).toBe(false);
    const [planned] = await t.eventsOf('plan');
    expect(planned.plan.steps[0]?.expect?.check).toMatch(/^node -e '/);
    await repairedOnce(t, 'toKb(2048) returned "2.0 KB", expected "2 KB"');
  });

  describe('a repair round after the new tests fail on the file an earlier step wrote', () => {
    const wc = 'def count_words(text):\n    return len(text.split())\n';
    /** A reply of `write_file_content`: the file in a fenced Python block. */
    const python = (text: string) => ({ content: '```python\n' + text + '```' });
    const testOf = (n: number) => `from wc import count_words\nassert count_words("a b") == ${n}\n`;
    const request = 'Add a test for count_words in wc.py as test_wc.py, and run it.';
    const rerun = {
      calls: [{ name: 'workspace__run_command', args: { step_id: 's2', command: 'python3 test_wc.py' } }],
    };

    it('rewrites that file, shown the failure, where the model would run the tests again; the tests then pass', async () => {
      const p = makeProject({ 'wc.py': wc });
      fake.on('write_plan', {
        call: plan([
          step('s1', 'Create test_wc.py with a test of count_words.', { expect: { changes: ['test_wc.py'] } }),
          step('s2', 'Run the tests.', { depends_on: ['s1'], expect: { check: 'python3 test_wc.py' } }),
        ]),
      });
      fake.on('pick_tools', rerun);
      fake.on('write_file_content', python(testOf(3)), python(testOf(2)));
      fake.on('compose_answer', { content: 'test_wc.py passes.' });

      const t = await TaskDriver.start(env, request, p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'test_wc.py'), 'utf8')).toBe(testOf(2));
      const [, repair] = fake.requestsFor('write_file_content');
      expect(repair.text).toContain(`File test_wc.py:\n\`\`\`\n${testOf(3)}\`\`\``);
      expect(repair.text).toMatch(/Not done yet: .*exit code: 1[\s\S]*test_wc\.py", line 2[\s\S]*AssertionError/);
      const s2 = (await t.eventsOf('step_finished')).find((e) => e.stepId === 's2');
      expect(s2).toMatchObject({
        status: 'done',
        calls: [
          { tool: 'workspace__run_command', status: 'error' },
          { tool: 'workspace__write_file', status: 'ok' },
          { tool: 'workspace__run_command', status: 'ok' },
        ],
      });
    });

    const unittestOf = (n: number, imports = 'from wc import count_words\n') =>
      `import unittest\n${imports}\n\nclass T(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(count_words("a b"), ${n})\n`;
    const writesTest = {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'test_wc.py', content: 'test' } }],
    };
    const testPlan = () =>
      plan([step('s1', 'Write test_wc.py with a test of count_words.', { expect: { changes: ['test_wc.py'] } })]);

    it('a new test file no check runs is run all the same: its failure is shown, and the test is rewritten until it passes', async () => {
      const p = makeProject({ 'wc.py': wc });
      fake.on('write_plan', { call: testPlan() });
      fake.always('pick_tools', writesTest);
      fake.on('write_file_content', python(unittestOf(3)), python(unittestOf(2)));
      fake.on('compose_answer', { content: 'test_wc.py passes.' });

      const t = await TaskDriver.start(env, 'Write a test for count_words in wc.py as test_wc.py.', p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'test_wc.py'), 'utf8')).toBe(unittestOf(2));
      const [planEvent] = await t.eventsOf('plan');
      expect(planEvent!.plan.steps[0]?.expect?.check).toBe(pythonTestCommand('test_wc.py'));
      await repairedOnce(t, /Not done yet: [\s\S]*AssertionError: 2 != 3/);
    });

    it('a test that calls the function it tests and never imports it gets the import: it passes at once, told in the repairs', async () => {
      const p = makeProject({ 'wc.py': wc });
      fake.on('write_plan', { call: testPlan() });
      // The plan names the file: it is written whole at the first pick, with no pick made.
      fake.on('write_file_content', python(unittestOf(2, '')));
      fake.on('compose_answer', { content: 'test_wc.py passes.' });

      const t = await TaskDriver.start(env, 'Write a test for count_words in wc.py as test_wc.py.', p.dir);
      expect(await t.result()).toMatchObject({ status: 'done' });

      expect(readFileSync(path.join(p.dir, 'test_wc.py'), 'utf8')).toBe(unittestOf(2));
      const [s1] = await t.eventsOf('step_finished');
      expect(s1).toMatchObject({
        status: 'done',
        calls: [
          { tool: 'workspace__write_file', status: 'ok' },
          { tool: 'workspace__run_command', status: 'ok' },
        ],
      });
      expect(s1!.repairs).toContain(
        'test_wc.py: written whole, as the plan names it, with the imports it left out: `from wc import count_words`'
      );
      expect(fake.requestsFor('write_file_content')).toHaveLength(1);
    });

    it('the control: a failing test the task did not write is never rewritten; the step is not achieved', async () => {
      const p = makeProject({ 'wc.py': wc, 'test_wc.py': testOf(3) });
      fake.always('write_plan', {
        call: plan([step('s2', 'Run test_wc.py.', { expect: { check: 'python3 test_wc.py' } })]),
      });
      fake.always('wants_changes', { call: { answer: 'no' } });
      fake.always('pick_tools', rerun);
      fake.always('write_file_content', python(testOf(2)));
      fake.always('compose_answer', { content: 'test_wc.py fails: 2 words, not 3.' });

      const t = await TaskDriver.start(env, 'Run test_wc.py.', p.dir);
      expect(await t.result()).toMatchObject({ status: 'failed' });

      expect(readFileSync(path.join(p.dir, 'test_wc.py'), 'utf8')).toBe(testOf(3));
      expect(fake.requestsFor('write_file_content')).toEqual([]);
    });
  });
});

describe('a project of folders inside folders', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'generalise-nested' }, (f, e) => {
    fake = f;
    env = e;
  });

  const deep = 'billing/core/invoices/mailer.py';
  const mailer = 'def send_invoice(invoice, to):\n    print(f"mailing {invoice} to {to}")\n';

  async function ask(files: Record<string, string>) {
    const p = makeProject(files);
    const request = 'Which file defines send_invoice? It is in mailer.py, I think.';
    fake.on('write_plan', {
      call: plan([step('s1', 'Say where mailer.py defines send_invoice', { needs_tool: true })]),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: deep } }] });
    fake.on('compose_answer', { content: `${deep} defines send_invoice.` });
    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    return { plan: fake.requestsFor('write_plan')[0].text, pick: fake.requestsFor('pick_tools')[0].text };
  }

  it('the Planner sees the files four levels down, and the step the file its instruction names, as it is', async () => {
    const seen = await ask({
      [deep]: mailer,
      'billing/api/views.py': 'from billing.core.invoices.mailer import send_invoice\n',
      'jobs/nightly/monthly_close.py': 'from billing.core.invoices.mailer import send_invoice\n',
    });
    expect(seen.plan).toContain(deep);
    expect(seen.plan).toContain('jobs/nightly/monthly_close.py');
    expect(seen.pick).toContain(`#### ${deep}`);
    expect(seen.pick).toContain('print(f"mailing {invoice} to {to}")');
  });

  it('the control: a project too big to list that deep shows its first two levels, and the deep file is not named', async () => {
    const many = Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`billing/module_${i}.py`, '# more\n']));
    const seen = await ask({ [deep]: mailer, ...many });
    expect(seen.plan).toContain('billing/core/');
    expect(seen.plan).not.toContain(deep);
    expect(seen.pick).not.toContain('print(f"mailing {invoice} to {to}")');
  });
});

describe('work in any language, and a question about .env', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'generalise-route' }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a request in German to create a file starts a task, without asking the router, and the file is written', async () => {
    const p = makeProject({ 'README.md': '# Projekt\n' });
    const s = await SessionDriver.start(env, p.dir);
    const text = 'Erstelle eine Datei hallo.py, die "Hallo Welt" ausgibt.';
    fake.on('write_plan', {
      call: plan([step('s1', text, { expect: { changes: ['hallo.py'] } })], {}, text),
    });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__write_file', args: { step_id: 's1', path: 'hallo.py', content: 'print("Hallo Welt")\n' } },
      ],
    });
    fake.on('compose_answer', { content: 'hallo.py gibt jetzt "Hallo Welt" aus.' });

    const r = await s.submit(text);

    expect(r.kind).toBe('task');
    const t = await TaskDriver.attach(env, r.taskId!);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'hallo.py'), 'utf8')).toBe('print("Hallo Welt")\n');
    expect(fake.requestsFor('route_request')).toEqual([]);
    // The first pick, made with the plan, sees what the plan expects of the step, as every later pick does.
    const [firstPick] = fake.requestsFor('pick_tools');
    expect(firstPick.text).toContain('Done when: hallo.py changed.');
  });

  it('a question about what .env says starts a task that asks before it reads the file', async () => {
    const p = makeProject({ '.env': 'DATABASE_URL=postgres://db.internal/app\n' });
    const s = await SessionDriver.start(env, p.dir);
    fake.on('write_plan', { call: plan([step('s1', 'Read .env')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: '.env' } }] });
    fake.on('compose_answer', { content: 'The database is at db.internal.' });

    const r = await s.submit('Que dit mon .env sur la base de données ?');

    expect(r.kind).toBe('task');
    const t = await TaskDriver.attach(env, r.taskId!);
    const ask = await t.waitFor('permission_requested');
    expect(ask).toMatchObject({ path: path.join(p.dir, '.env'), op: 'read', class: 'sensitive' });
    // Nothing of the file reached the model before the user allowed it.
    for (const req of fake.requests) expect(req.text).not.toContain('db.internal');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'allow_once' });
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'The database is at db.internal.' });
    expect(fake.requestsFor('route_request')).toEqual([]);
  });

  it('the control: a greeting in German still goes to the router', async () => {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir);
    fake.on('route_request', { call: { route: 'chat', reply: 'Hallo!' } });
    expect(await s.submit('Hallo, wie geht es dir?')).toEqual({ kind: 'chat', reply: 'Hallo!' });
    expect(fake.requestsFor('route_request')).toHaveLength(1);
  });
});
