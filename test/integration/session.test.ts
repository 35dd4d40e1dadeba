/**
 * The session workflow on a real Temporal server: routing, the queue, memory and its summariser child, slash
 * commands, project context, and grants that outlive a task and a continue-as-new.
 */
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { KleaEvent } from '../../common/events';
import type { FakeModel } from '../support/fake-model';
import { permissionSignal, reviewSignal } from '../../workflows/task/messages';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { SessionDriver } from '../support/session-driver';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

describe('sessionWorkflow', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'session' }, (f, e) => {
    fake = f;
    env = e;
  });

  const chat = (reply: string) => ({ call: { route: 'chat', reply } });
  const task = { call: { route: 'task', reply: null } };

  it('answers chat inline and hands tasks to a child taskWorkflow', async () => {
    const p = makeProject({ 'a.txt': 'alpha' });
    const s = await SessionDriver.start(env, p.dir);
    // The second message names a file: it is work, routed without asking the model.
    fake.on('route_request', chat('Hi! What shall we do?'));
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'a.txt says alpha.' });

    expect(await s.submit('hello')).toEqual({ kind: 'chat', reply: 'Hi! What shall we do?' });
    const r = await s.submit('What does a.txt say?');
    expect(r).toEqual({ kind: 'task', taskId: `task-${s.sessionId}-1` });
    const t = await TaskDriver.attach(env, r.taskId!);
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'a.txt says alpha.' });
    const state = await s.waitIdle();
    expect(state.memory.turns.map((x) => x.text)).toEqual([
      'hello',
      'Hi! What shall we do?',
      'What does a.txt say?',
      'a.txt says alpha.',
    ]);
    expect(state.tasks).toEqual([r.taskId]);
    // The task got only what it needs: the request and the memory, routed already.
    expect(fake.requestsFor('write_plan')[0].text).toContain('Hi! What shall we do?');
    expect(fake.requestsFor('route_request')).toHaveLength(1);
  });

  it('queues messages that arrive during a task and answers them in order after it', async () => {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir);
    fake.on('route_request', task, chat('first reply'), chat('second reply'));
    fake.on('write_plan', { call: plan([step('s1', 'Think hard', { needs_tool: false })], { before_work: true }) });
    fake.on('do_step', { content: 'thought' });
    fake.on('compose_answer', { content: 'task answer' });

    const r = await s.submit('do a task');
    const t = await TaskDriver.attach(env, r.taskId!);
    const review = await t.waitFor('review_requested');
    expect(await s.submit('first question')).toEqual({ kind: 'chat', reply: 'first reply', queued: true });
    expect(await s.submit('second question')).toEqual({ kind: 'chat', reply: 'second reply', queued: true });
    expect((await s.events()).filter((e) => e.type === 'answer')).toHaveLength(0);
    await t.handle.signal(reviewSignal, { decision: 'approve', planHash: review.planHash });
    await s.waitIdle();
    const answers = (await s.events())
      .filter((e): e is Extract<KleaEvent, { type: 'answer' }> => e.type === 'answer')
      .map((e) => e.text);
    expect(answers).toEqual(['task answer', 'first reply', 'second reply']);
  });

  it('summarises old history in a child workflow when it crosses the threshold; recent turns stay verbatim', async () => {
    const p = makeProject();
    const settings = { summarisationThresholdChars: 200, numHistoryChars: 250 };
    const s = await SessionDriver.start(env, p.dir, { memory: settings });
    const long = (i: number) => `message ${i} ${'x'.repeat(80)}`;
    for (let i = 1; i <= 3; i++) fake.on('route_request', chat(`reply ${i} ${'y'.repeat(60)}`));
    fake.on('summarize_memory', { content: 'SUMMARY: the user sent three long messages.' });
    for (let i = 1; i <= 3; i++) await s.submit(long(i));
    const mem = await s.waitFor((e) => e.type === 'memory', 'a memory event');
    expect(mem).toMatchObject({ action: 'summarised' });
    const state = await s.waitIdle();
    expect(state.memory.summary).toBe('SUMMARY: the user sent three long messages.');
    const verbatim = state.memory.turns.reduce((n, t) => n + t.text.length, 0);
    expect(verbatim).toBeLessThanOrEqual(settings.numHistoryChars);
    expect(state.memory.turns.at(-1)?.text).toMatch(/^reply 3/);
    // The summariser ran as its own child workflow.
    const children = [];
    for await (const w of env.client.workflow.list({
      query: `WorkflowType = "summarizeMemoryWorkflow" AND KleaSessionId IS NULL`,
    }))
      children.push(w.workflowId);
    expect(children.some((id) => id.startsWith(`session-${s.sessionId}-memory-`))).toBe(true);
    expect(fake.requestsFor('summarize_memory')[0].text).toContain('message 1');

    // The next Planner prompt carries the summary.
    fake.on('route_request', task);
    fake.on('write_plan', { call: plan([step('s1', 'x', { needs_tool: false })]) });
    fake.on('do_step', { content: 'ok' });
    fake.on('compose_answer', { content: 'ok' });
    await s.submit('now plan something');
    await s.waitIdle();
    expect(fake.requestsFor('write_plan')[0].text).toContain('SUMMARY: the user sent three long messages.');
  });

  it('/compact: a memory event either way, never a chat reply', async () => {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir);
    expect(await s.submit('/compact')).toEqual({ kind: 'command' });
    expect(await s.waitFor((e) => e.type === 'memory', 'memory event')).toMatchObject({
      action: 'nothing_to_summarise',
    });

    fake.on('route_request', chat('one'), chat('two'));
    await s.submit('first');
    await s.submit('second');
    fake.on('summarize_memory', { content: 'they said first and second' });
    expect(await s.submit('/compact')).toEqual({ kind: 'command' });
    const events = await s.events();
    expect(events.filter((e) => e.type === 'memory').map((e) => (e as { action: string }).action)).toEqual([
      'nothing_to_summarise',
      'summarised',
    ]);
    expect(events.filter((e) => e.type === 'answer').map((e) => (e as { text: string }).text)).toEqual(['one', 'two']);
    const state = await s.state();
    expect(state.memory.summary).toBe('they said first and second');
    expect(state.memory.turns.map((t) => t.text)).toEqual(['second', 'two']);
  });

  it('/help, /mode and unknown commands', async () => {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir);
    const help = await s.submit('/help');
    expect(help.kind).toBe('command');
    for (const c of ['/help', '/mode', '/compact', '/init']) expect(help.reply).toContain(c);
    expect((await s.submit('/frobnicate')).reply).toMatch(/Unknown command `\/frobnicate`.*`\/help`/s);
    expect((await s.submit('/mode scientific')).reply).toMatch(/scientific/);
    const ctx = (await s.events()).filter((e) => e.type === 'context').at(-1);
    expect(ctx).toMatchObject({ mode: 'scientific', modeNote: expect.stringMatching(/cannot run yet/) });
    // A task in scientific mode is declined with the explanation (no routing, no ungrounded chat).
    const r = await s.submit('What is the boiling point of water?');
    expect(r.kind).toBe('task');
    const t = await TaskDriver.attach(env, r.taskId!);
    expect((await t.result()).answer).toMatch(/Scientific mode cannot run yet/);
    expect((await s.submit('/mode general')).reply).toBe('Mode set to general.');
    expect((await s.state()).commands.find((c) => c.name === '/help')?.runs).toBe('client');
    expect((await s.state()).commands.find((c) => c.name === '/init')?.runs).toBe('graph');
  });

  it('/init writes AGENTS.md through the workspace server; under read_only it explains why not', async () => {
    const p = makeProject({ 'package.json': '{"name":"demo","scripts":{"test":"jest"}}', 'README.md': '# Demo\n' });
    const ro = await SessionDriver.start(env, p.dir, { toolAccess: 'read_only' });
    expect((await ro.submit('/init')).reply).toMatch(/read-only/);
    expect(existsSync(path.join(p.dir, 'AGENTS.md'))).toBe(false);

    const s = await SessionDriver.start(env, p.dir);
    fake.on('init_project', { content: '# AGENTS.md\n\nRun the tests with `npm test`.' });
    const r = await s.submit('/init');
    expect(r.reply).toMatch(/Wrote AGENTS.md/);
    expect(readFileSync(path.join(p.dir, 'AGENTS.md'), 'utf8')).toBe('# AGENTS.md\n\nRun the tests with `npm test`.\n');
    const prompt = fake.requestsFor('init_project')[0].text;
    expect(prompt).toContain('"scripts":{"test":"jest"}');
    expect(prompt).toContain('# Demo');
    expect((await s.state()).projectContextFile).toBe('AGENTS.md');
  });

  it('/init again replaces the AGENTS.md there is, however little of it the new one keeps', async () => {
    const old = '# AGENTS.md\n\n- Build with `make`.\n- Test with `make test`.\n- Lint with `make lint`.\n- Node 20.\n';
    const p = makeProject({ 'AGENTS.md': old, 'package.json': '{"name":"demo","scripts":{"test":"jest"}}' });
    const s = await SessionDriver.start(env, p.dir);
    fake.on('init_project', { content: '# AGENTS.md\n\nRun the tests with `npm test`.' });
    expect((await s.submit('/init')).reply).toMatch(/Wrote AGENTS.md/);
    expect(readFileSync(path.join(p.dir, 'AGENTS.md'), 'utf8')).toBe('# AGENTS.md\n\nRun the tests with `npm test`.\n');
  });

  it('project context: AGENTS.md over CLAUDE.md, re-read when edited, only in Planner and composer prompts', async () => {
    const p = makeProject({ 'AGENTS.md': 'HOUSE RULE ONE', 'CLAUDE.md': 'CLAUDE RULE', 'f.txt': 'f' });
    const s = await SessionDriver.start(env, p.dir);
    expect(await s.waitFor((e) => e.type === 'context', 'the context event')).toMatchObject({
      projectContextFile: 'AGENTS.md',
    });
    expect((await s.state()).projectContextFile).toBe('AGENTS.md');
    const runTask = async (answer: string) => {
      fake.on('route_request', task);
      fake.on('write_plan', {
        call: plan([step('s1', 'Read f.txt'), step('s2', 'Think', { needs_tool: false, depends_on: ['s1'] })]),
      });
      fake.on('pick_tools', {
        calls: [{ name: 'workspace__grep', args: { step_id: 's1', pattern: 'nomatch', path: 'f.txt' } }],
      });
      fake.on('do_step', { content: 'thought' });
      fake.on('compose_answer', { content: answer });
      const r = await s.submit('do it');
      await (await TaskDriver.attach(env, r.taskId!)).result();
    };
    await runTask('first');
    expect(fake.requestsFor('write_plan')[0].text).toContain('HOUSE RULE ONE');
    expect(fake.requestsFor('compose_answer')[0].text).toContain('HOUSE RULE ONE');
    for (const node of ['pick_tools', 'do_step', 'route_request']) {
      for (const req of fake.requestsFor(node)) expect(req.text).not.toContain('HOUSE RULE');
    }
    expect(fake.requestsFor('write_plan')[0].text).not.toContain('CLAUDE RULE');
    fake.reset();

    writeFileSync(path.join(p.dir, 'AGENTS.md'), 'HOUSE RULE TWO');
    const later = new Date(Date.now() + 5000);
    utimesSync(path.join(p.dir, 'AGENTS.md'), later, later);
    await runTask('second');
    expect(fake.requestsFor('write_plan')[0].text).toContain('HOUSE RULE TWO');
    expect(fake.requestsFor('write_plan')[0].text).not.toContain('HOUSE RULE ONE');
  });

  it('evaluate_step prompts never carry the project context', async () => {
    const p = makeProject({ 'AGENTS.md': 'SECRET HOUSE STYLE', 'f.txt': 'f' });
    const s = await SessionDriver.start(env, p.dir);
    fake.on('route_request', task);
    fake.on('write_plan', { call: plan([step('s1', 'grep')]) });
    // A call that works, then a tool error: the evaluator judges it.
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__grep', args: { step_id: 's1', pattern: 'f', step_done: false } }] },
      { calls: [{ name: 'workspace__grep', args: { step_id: 's1', pattern: '(' } }] }
    );
    fake.on('evaluate_step', { call: { verdict: 'move_on', reason: 'bad regex, fine' } });
    fake.on('compose_answer', { content: 'done' });
    const r = await s.submit('search');
    await (await TaskDriver.attach(env, r.taskId!)).result();
    expect(fake.requestsFor('evaluate_step')[0].text).not.toContain('SECRET HOUSE STYLE');
    expect(fake.requestsFor('write_plan')[0].text).toContain('SECRET HOUSE STYLE');
  });

  it('an allow_session grant holds for the next task and after a continue-as-new', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const s = await SessionDriver.start(env, p.dir, { continueAsNewAfter: 1 });
    const firstRun = (await s.handle.describe()).runId;
    const readOutside = () => {
      fake.on('route_request', task);
      fake.on('write_plan', { call: plan([step('s1', 'Read the outside file')]) });
      fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: outsideFile } }] });
      fake.on('compose_answer', { content: 'outside data' });
    };
    readOutside();
    const r1 = await s.submit('read it');
    const t1 = await TaskDriver.attach(env, r1.taskId!);
    const req = await t1.waitFor('permission_requested');
    await t1.handle.signal(permissionSignal, { requestId: req.requestId, decision: 'allow_session' });
    expect((await t1.result()).status).toBe('done');

    // After one message the session continues as new, carrying its grants, memory and event log.
    const deadline = Date.now() + 20_000;
    while ((await s.handle.describe()).runId === firstRun && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect((await s.handle.describe()).runId).not.toBe(firstRun);
    const carried = await s.state();
    expect(carried.grants).toEqual([expect.objectContaining({ id: 'g1', path: outsideFile, op: 'read' })]);
    expect(carried.memory.turns.map((t) => t.text)).toEqual(['read it', 'outside data']);
    const seqs = (await s.events()).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));

    readOutside();
    const r2 = await s.submit('read it again');
    expect(r2.taskId).toBe(`task-${s.sessionId}-2`);
    const t2 = await TaskDriver.attach(env, r2.taskId!);
    expect((await t2.result()).status).toBe('done');
    expect(await t2.countOf('permission_requested')).toBe(0);
  });
});
