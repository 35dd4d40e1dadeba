/**
 * The token ledger and budgets, through the API as a user drives them: every model call's usage (as the model
 * server reported it) is on the events it produced, in the task's and the session's state, and in the task's
 * search attributes; a task that crosses `model.max_tokens_per_task` pauses for a `budget` review, and goes on
 * when approved or replans when revised.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import { KleaModelCalls, KleaTokens } from '../../common/search-attributes';
import { FAKE_CACHED_TOKENS, type FakeModel, type RecordedRequest } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { until } from '../support/until';

type Usage = {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  promptEvaluated: number;
  promptCached: number;
};
const ZERO: Usage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, promptEvaluated: 0, promptCached: 0 };
const add = (a: Usage, b: Usage | undefined): Usage =>
  b
    ? {
        inputTokens: a.inputTokens + b.inputTokens,
        outputTokens: a.outputTokens + b.outputTokens,
        modelCalls: a.modelCalls + b.modelCalls,
        promptEvaluated: a.promptEvaluated + b.promptEvaluated,
        promptCached: a.promptCached + b.promptCached,
      }
    : a;
const usageOf = (e: KleaEvent) => (e as { usage?: Usage }).usage;

describe('the token ledger', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'a.txt': 'alpha\nbeta\n' });
  useFakeModelEnv(
    {
      name: 'ledger',
      overrides: { project: { dir: project.dir }, general: { memory: { num_history_chars: 20 } } },
    },
    (f, e) => {
      fake = f;
      env = e;
      app = createApp({ client: env.client, config: env.config });
    }
  );

  const send = async (sessionId: string, text: string) => {
    const res = await request(app).post(`/sessions/${sessionId}/messages`).send({ text });
    expect(res.status).toBe(200);
    return res.body as { kind: string; taskId?: string };
  };
  const session = async (sessionId: string) => (await request(app).get(`/sessions/${sessionId}`)).body;
  const sessionEvents = async (sessionId: string): Promise<KleaEvent[]> =>
    (await request(app).get(`/sessions/${sessionId}/events?after=0`)).body.events;

  it('every model call is counted where it happened, and the totals add up to what the model reported', async () => {
    const created = await request(app).post('/sessions').send({});
    const sessionId = created.body.sessionId as string;

    // A chat reply: the routing call wrote it.
    fake.on('route_request', { call: { route: 'chat', reply: 'Hello!' } });
    expect((await send(sessionId, 'hi')).kind).toBe('chat');

    // A task with a tool step and a text step (the message names a file: routed without a model call).
    fake.on('write_plan', {
      call: plan([step('s1', 'Read a.txt'), step('s2', 'Summarise', { needs_tool: false, depends_on: ['s1'] })]),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'read it' } });
    fake.on('do_step', { content: 'alpha and beta' });
    fake.on('compose_answer', { content: 'It says alpha and beta.' });
    const { taskId } = await send(sessionId, 'summarise a.txt');
    const task = await TaskDriver.attach(env, taskId!);
    expect((await task.result()).status).toBe('done');
    const taskCalls = (r: RecordedRequest) => r.node !== 'route_request' && r.node !== 'summarize_memory';
    const reportedForTask = fake.reportedUsage(taskCalls);
    expect(reportedForTask.modelCalls).toBeGreaterThanOrEqual(4);

    // Each event carries the calls that produced it; together they are the task's usage.
    const events = await task.events();
    const onEvents = events.filter((e) => ['plan', 'step_finished', 'answer'].includes(e.type));
    expect(onEvents.every((e) => usageOf(e) !== undefined)).toBe(true);
    expect(onEvents.map(usageOf).reduce(add, ZERO)).toEqual(reportedForTask);
    // What the server said of its prompt cache is in the ledger too (llama.cpp's timings).
    expect(reportedForTask.promptCached).toBe(FAKE_CACHED_TOKENS * reportedForTask.modelCalls);
    const state = (await request(app).get(`/tasks/${taskId}`)).body;
    expect(state.usage).toEqual({ ...reportedForTask, toolCalls: 1 });

    // Search attributes: the Temporal UI can find expensive runs.
    const attrs = (await task.handle.describe()).typedSearchAttributes;
    expect(attrs.get(KleaTokens)).toBe(reportedForTask.inputTokens + reportedForTask.outputTokens);
    expect(attrs.get(KleaModelCalls)).toBe(reportedForTask.modelCalls);

    // A summary (/compact) counts for the session too.
    await until('the session is idle', async () => ((await session(sessionId)).currentTaskId ? undefined : true));
    fake.on('summarize_memory', { content: 'They said hi and asked about a.txt.' });
    expect((await send(sessionId, '/compact')).kind).toBe('command');
    const memory = await until('the memory event', async () =>
      (await sessionEvents(sessionId)).find((e) => e.type === 'memory' && usageOf(e))
    );
    expect(usageOf(memory)).toEqual(fake.reportedUsage((r) => r.node === 'summarize_memory'));

    // The chat reply's answer event carries its routing call.
    const reply = (await sessionEvents(sessionId)).find((e) => e.type === 'answer' && !('taskId' in e));
    expect(usageOf(reply!)).toEqual(fake.reportedUsage((r) => r.node === 'route_request' && r === fake.requests[0]));

    // The session's totals: routing, the summary and the task, i.e. everything the model reported.
    expect((await session(sessionId)).usage).toEqual(fake.reportedUsage());
    fake.reset();
  }, 120_000);

  it("a long task's search attributes keep up with its model calls while its status stays the same", async () => {
    // Ten chained reads, then a command that waits until the test lets it finish: twelve model calls before it.
    const reads = Array.from({ length: 10 }, (_, i) =>
      step(`r${i + 1}`, 'Read a.txt', { depends_on: i ? [`r${i}`] : [] })
    );
    fake.on('write_plan', { call: plan([...reads, step('w', 'Wait for go', { depends_on: ['r10'] })]) });
    for (let i = 1; i <= 10; i++)
      fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: `r${i}`, path: 'a.txt' } }] });
    const wait = 'while [ ! -e go ]; do sleep 0.05; done; echo went';
    fake.on('pick_tools', { calls: [{ name: 'workspace__run_command', args: { step_id: 'w', command: wait } }] });
    fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'done' } });
    fake.on('compose_answer', { content: 'Read ten times, then went.' });
    const t = await TaskDriver.start(env, 'Read a.txt ten times, then wait', project.dir);
    await t.waitFor('step_started', (e) => e.stepId === 'w');
    await until('the waiting step has its call', async () =>
      (await t.state()).usage.modelCalls === 12 ? true : undefined
    );
    // Running since the first call (the plan): the totals were updated since without a status change, and are
    // fewer than ten calls behind.
    const shown = (await t.handle.describe()).typedSearchAttributes.get(KleaModelCalls)!;
    expect(shown).toBeGreaterThan(1);
    expect(12 - shown).toBeLessThan(10);
    writeFileSync(path.join(project.dir, 'go'), '');
    expect((await t.result()).status).toBe('done');
    const done = (await t.handle.describe()).typedSearchAttributes;
    expect(done.get(KleaModelCalls)).toBe((await t.state()).usage.modelCalls);
    fake.reset();
  }, 120_000);
});

describe('a token budget', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  useFakeModelEnv(
    { name: 'budget', overrides: { project: { dir: project.dir }, model: { max_tokens_per_task: 1 } } },
    (f, e) => {
      fake = f;
      env = e;
      app = createApp({ client: env.client, config: env.config });
    }
  );

  it('pauses the task for review when crossed; revise replans with the feedback, approve goes on to done', async () => {
    fake.on('write_plan', { call: plan([step('s1', 'Think hard', { needs_tool: false })]) });
    fake.on('write_plan', { call: plan([step('s1', 'Think briefly', { needs_tool: false })]) });
    fake.on('do_step', { content: 'thought' });
    fake.on('compose_answer', { content: 'Done thinking.' });
    const res = await request(app).post('/tasks').send({ prompt: 'think', projectDir: project.dir });
    expect(res.status).toBe(201);
    const taskId = res.body.taskId as string;
    const task = await TaskDriver.attach(env, taskId);

    // Crossed by the plan: paused before any step runs, showing what was spent.
    const paused = await task.waitFor('review_requested', (e) => e.reason === 'budget');
    const planCall = fake.reportedUsage((r) => r.node === 'write_plan');
    expect(paused.spent).toEqual({ ...planCall, budget: 1 });
    const state = (await request(app).get(`/tasks/${taskId}`)).body;
    expect(state.status).toBe('awaiting_review');
    expect(state.pending[0]).toMatchObject({ kind: 'review', reason: 'budget', spent: { budget: 1 } });
    expect(fake.requestsFor('do_step')).toHaveLength(0);

    // Revise: the Planner gets the feedback, and the revised plan is reviewed.
    const revise = await request(app)
      .post(`/tasks/${taskId}/review`)
      .send({ decision: 'revise', planHash: paused.planHash, feedback: 'keep it brief' });
    expect(revise.status).toBe(200);
    const revised = await task.waitFor('review_requested', (e) => e.reason === 'revised');
    expect(fake.requestsFor('write_plan')[1].text).toContain('keep it brief');
    await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: revised.planHash });

    // Approved, the budget is raised past what was spent: the step runs, and crossing it again pauses again.
    const again = await task.waitFor(
      'review_requested',
      (e) => e.reason === 'budget' && e.planHash === revised.planHash
    );
    expect(fake.requestsFor('do_step')).toHaveLength(1);
    const spentSoFar = fake.reportedUsage();
    expect(again.spent).toMatchObject({ ...spentSoFar });
    expect(again.spent!.budget).toBeGreaterThan(1);
    expect(again.spent!.budget).toBeLessThanOrEqual(spentSoFar.inputTokens + spentSoFar.outputTokens);
    await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: again.planHash });

    const result = await task.result();
    expect(result.status).toBe('done');
    expect(result.answer).toBe('Done thinking.');
    fake.reset();
  }, 120_000);

  it("a plan that crosses the budget is paused for before the first round's tools are picked", async () => {
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'alpha' });
    const res = await request(app).post('/tasks').send({ prompt: 'read a.txt', projectDir: project.dir });
    const task = await TaskDriver.attach(env, res.body.taskId as string);
    const paused = await task.waitFor('review_requested', (e) => e.reason === 'budget');
    // Nothing was spent past the plan: the Planner's activity picked no tools.
    expect(fake.requestsFor('pick_tools')).toHaveLength(0);
    expect(paused.spent).toEqual({ ...fake.reportedUsage(), budget: 1 });
    await request(app).post(`/tasks/${task.taskId}/review`).send({ decision: 'approve', planHash: paused.planHash });
    // Approved, the pick is its own activity, and the next budget review counts it.
    const again = await task.waitFor('review_requested', (e) => e.reason === 'budget' && e.seq > paused.seq);
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
    expect(again.spent).toMatchObject(fake.reportedUsage());
    await request(app).post(`/tasks/${task.taskId}/review`).send({ decision: 'approve', planHash: again.planHash });
    expect(await task.result()).toMatchObject({ status: 'done', answer: 'alpha' });
    expect((await task.scheduledActivities()).map((a) => a.type)).toEqual([
      'writePlan',
      'pickTools',
      'callTool',
      'composeAnswer',
    ]);
    fake.reset();
  }, 60_000);
});
