/**
 * Replay: committed histories (binary protobuf, `test/histories/*.history.pb`) of representative runs are replayed against the current workflow code, so a
 * change that would break running workflows fails CI. Re-record after an intended change with
 * `npm run record-histories` (see docs/changing-workflow-code.md for the versioning rule).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { buildWorkflowBundle } from '../../worker/bundle';
import { workerSinks } from '../../worker/telemetry';
import { FakeModel } from '../support/fake-model';
import { clarifySignal, permissionSignal, reviewSignal } from '../../workflows/task/messages';
import { startTestEnv, type TestEnv } from '../support/harness';
import { SessionDriver } from '../support/session-driver';
import { until } from '../support/until';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { SessionSleepSchema } from '../../common/session';
import { grantSignal, revokeGrantUpdate, submitUpdate } from '../../workflows/session/messages';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import type { rewindWorkflow } from '../../workflows';

const HISTORIES = path.join(__dirname, '..', 'histories');
const ROOT = path.join(__dirname, '..', '..');
/** `1` records every scenario afresh; a comma-separated list of names records those alone, keeping the others. */
const RECORD_WHICH = process.env.KLEA_RECORD_HISTORIES ?? '';
const RECORD = RECORD_WHICH !== '';

type Scenario = (env: TestEnv, fake: FakeModel) => Promise<string[]>;

/** Two paths outside the project: the user denies the first and allows the second for the session. */
async function denyOneAllowTheOther(
  env: TestEnv,
  fake: FakeModel,
  ids: { taskId: string; sessionId: string }
): Promise<string[]> {
  const p = makeProject();
  writeFileSync(path.join(p.outside, 'x.txt'), 'x');
  writeFileSync(path.join(p.outside, 'y.txt'), 'y');
  fake.on('write_plan', { call: plan([step('s1', 'Read x'), step('s2', 'Read y')]) });
  fake.on('pick_tools', {
    calls: [
      { name: 'workspace__read_file', args: { step_id: 's1', path: '../outside/x.txt' } },
      { name: 'workspace__read_file', args: { step_id: 's2', path: '../outside/y.txt' } },
    ],
  });
  fake.on('compose_answer', { content: 'one denied, one allowed' });
  const t = await TaskDriver.start(env, 'Read both', p.dir, ids);
  const a = await t.waitFor('permission_requested', (e) => e.requestedPath.includes('x.txt'));
  const b = await t.waitFor('permission_requested', (e) => e.requestedPath.includes('y.txt'));
  await t.handle.signal(permissionSignal, { requestId: a.requestId, decision: 'deny' });
  await t.handle.signal(permissionSignal, { requestId: b.requestId, decision: 'allow_session' });
  await t.result();
  return [t.taskId];
}

/**
 * A task long enough to continue as new (after 100 history events): twenty chained steps, a tool step among them.
 * Returns the ids of its first run (which hands over) and of its last run (which starts from the carry).
 */
async function longTask(env: TestEnv, fake: FakeModel, taskId: string): Promise<{ first: string; last: string }> {
  const p = makeProject({ 'a.txt': 'alpha' });
  const steps = Array.from({ length: 20 }, (_, i) =>
    step(`s${i + 1}`, `Part ${i + 1}`, { depends_on: i ? [`s${i}`] : [], needs_tool: i === 6 })
  );
  fake.on('write_plan', { call: plan(steps) });
  fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's7', path: 'a.txt' } }] });
  fake.always('do_step', { content: 'ok' });
  fake.on('compose_answer', { content: 'twenty parts done' });
  const t = await TaskDriver.start(env, 'Do twenty parts', p.dir, {
    taskId,
    sessionId: taskId.replace(/^task-/, '').replace(/-1$/, ''),
    continueAsNewAfterEvents: 100,
  });
  const first = (await t.handle.describe()).runId;
  expect((await t.result()).status).toBe('done');
  const last = (await t.handle.describe()).runId;
  expect(last).not.toBe(first);
  return { first, last };
}

/** Each scenario runs to the end and returns the workflow ids whose histories it records. */
const scenarios: Record<string, Scenario> = {
  async approve(env, fake) {
    const p = makeProject({ 'a.txt': 'alpha' });
    fake.on('write_plan', {
      call: plan([step('s1', 'Read a.txt'), step('s2', 'Sum up', { needs_tool: false, depends_on: ['s1'] })], {
        before_work: true,
      }),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('do_step', { content: 'alpha' });
    fake.on('compose_answer', { content: 'a.txt says alpha' });
    const t = await TaskDriver.start(env, 'Read a.txt', p.dir, {
      taskId: 'task-replay-approve-1',
      sessionId: 'replay-approve',
    });
    await t.waitFor('review_requested');
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    await t.result();
    return [t.taskId];
  },
  async revise(env, fake) {
    const p = makeProject();
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'x', { needs_tool: false })], { before_work: true }) },
      { call: plan([step('s1', 'y', { needs_tool: false })]) }
    );
    fake.on('do_step', { content: 'y' });
    fake.on('compose_answer', { content: 'y' });
    const t = await TaskDriver.start(env, 'Do y', p.dir, {
      taskId: 'task-replay-revise-1',
      sessionId: 'replay-revise',
    });
    const r = await t.waitFor('review_requested');
    await t.handle.signal(reviewSignal, { decision: 'revise', feedback: 'y, not x' });
    await t.waitFor('review_requested', (e) => e.planHash !== r.planHash);
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    await t.result();
    return [t.taskId];
  },
  async clarify(env, fake) {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Greet', { needs_tool: false, questions: ['Who?'] })]) });
    fake.on('do_step', { content: 'Hello Ada' });
    fake.on('compose_answer', { content: 'Hello Ada' });
    const t = await TaskDriver.start(env, 'Greet', p.dir, {
      taskId: 'task-replay-clarify-1',
      sessionId: 'replay-clarify',
    });
    await t.waitFor('questions');
    await t.handle.signal(clarifySignal, { answers: { 'Who?': 'Ada' } });
    await t.result();
    return [t.taskId];
  },
  deny_and_allow_session: (env, fake) =>
    denyOneAllowTheOther(env, fake, { taskId: 'task-replay-permissions-1', sessionId: 'replay-permissions' }),
  /** The same run since the pick checks its calls' paths and the project context is a local activity. */
  paths_checked_with_pick: (env, fake) =>
    denyOneAllowTheOther(env, fake, { taskId: 'task-replay-permissions-2', sessionId: 'replay-permissions-2' }),
  /**
   * A session's task since its changes ask for one patch and its search attributes are coalesced: started with
   * the session's attributes, it waits for a review and for a permission (allowed for the session, which it tells
   * its session at once), then answers.
   */
  async session_task(env, fake) {
    const p = makeProject({ 'a.txt': 'alpha' });
    writeFileSync(path.join(p.outside, 'x.txt'), 'x');
    const s = await SessionDriver.start(env, p.dir, { sessionId: 'replay-session-task' });
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on('write_plan', {
      call: plan([step('s1', 'Read a.txt and x.txt')], { before_work: true }),
    });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's1', path: '../outside/x.txt' } },
      ],
    });
    fake.on('compose_answer', { content: 'alpha and x' });
    const r = await s.submit('Read both');
    const t = await TaskDriver.attach(env, r.taskId!);
    await t.waitFor('review_requested');
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    const ask = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'allow_session' });
    expect((await t.result()).status).toBe('done');
    return [t.taskId];
  },
  /** Since the Planner's activity picks the first round's tools when no review is due: no pickTools activity. */
  async first_pick_with_plan(env, fake) {
    const p = makeProject({ 'a.txt': 'alpha' });
    fake.on('write_plan', {
      call: plan([step('s1', 'Read a.txt'), step('s2', 'Sum up', { needs_tool: false, depends_on: ['s1'] })]),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('do_step', { content: 'alpha' });
    fake.on('compose_answer', { content: 'a.txt says alpha' });
    const t = await TaskDriver.start(env, 'Read a.txt', p.dir, {
      taskId: 'task-replay-first-pick-1',
      sessionId: 'replay-first-pick',
    });
    await t.result();
    expect((await t.scheduledActivities()).map((a) => a.type)).toEqual([
      'writePlan',
      'callTool',
      'doStep',
      'composeAnswer',
    ]);
    return [t.taskId];
  },
  async open_step(env, fake) {
    const p = makeProject({ 'a.txt': 'alpha' });
    fake.on('write_plan', { call: plan([step('s1', 'Copy a.txt to b.txt')]) });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt', step_done: false } }] },
      { calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'b.txt', content: 'alpha' } }] }
    );
    fake.on('compose_answer', { content: 'b.txt holds alpha' });
    const t = await TaskDriver.start(env, 'Copy a.txt to b.txt', p.dir, {
      taskId: 'task-replay-open-step-1',
      sessionId: 'replay-open-step',
    });
    await t.result();
    return [t.taskId];
  },
  async replan(env, fake) {
    const p = makeProject();
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Open PDF')]) },
      { call: plan([step('s2', 'Explain', { needs_tool: false })]) }
    );
    fake.on('pick_tools', { calls: [{ name: 'no_suitable_tool', args: { step_id: 's1', reason: 'no PDF reader' } }] });
    fake.on('do_step', { content: 'cannot' });
    fake.on('compose_answer', { content: 'cannot read PDFs' });
    const t = await TaskDriver.start(env, 'Read the PDF', p.dir, {
      taskId: 'task-replay-replan-1',
      sessionId: 'replay-replan',
    });
    await t.result();
    return [t.taskId];
  },
  async scientific(env) {
    const p = makeProject();
    const t = await TaskDriver.start(env, 'Cite sources', p.dir, {
      taskId: 'task-replay-scientific-1',
      sessionId: 'replay-scientific',
      mode: 'scientific',
    });
    await t.result();
    return [t.taskId];
  },
  async session(env, fake) {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir, {
      sessionId: 'replay-session',
      memory: { summarisationThresholdChars: 100, numHistoryChars: 120 },
      continueAsNewAfter: 3,
    });
    for (let i = 1; i <= 3; i++)
      fake.on('route_request', { call: { route: 'chat', reply: `reply ${i} ${'y'.repeat(50)}` } });
    fake.always('summarize_memory', { content: 'summary so far' });
    for (let i = 1; i <= 3; i++) await s.submit(`message ${i} ${'x'.repeat(50)}`);
    await s.submit('/compact');
    // Wait for the continue-as-new, then record the first run (it holds the summary child and the hand-over).
    const first = (await s.handle.describe()).runId;
    for (let i = 0; i < 100 && (await s.handle.describe()).runId === first; i++)
      await new Promise((r) => setTimeout(r, 100));
    return [`session-replay-session@${first}`];
  },
  /**
   * A session that went to sleep, woken by a message (update-with-start from its result): the woken run reads the
   * grants it slept with, drops the one that lapsed, answers, and goes to sleep again.
   */
  async session_wake(env, fake) {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir, {
      sessionId: 'replay-session-wake',
      idleCloseMs: 500,
      grantTtlMs: 1,
    });
    fake.on('route_request', { call: { route: 'chat', reply: 'first' } }, { call: { route: 'chat', reply: 'second' } });
    await s.submit('one');
    await s.handle.signal(grantSignal, { path: p.outside, op: 'read' });
    const sleptRun = await until('the session sleeps', async () => {
      const d = await s.handle.describe();
      return d.status.name === 'COMPLETED' ? d.runId : undefined;
    });
    const slept = SessionSleepSchema.parse(await env.client.workflow.getHandle(s.handle.workflowId, sleptRun).result());
    const start = new WithStartWorkflowOperation('sessionWorkflow', {
      workflowId: s.handle.workflowId,
      taskQueue: env.taskQueue,
      args: [
        {
          sessionId: 'replay-session-wake',
          projectDir: p.dir,
          idleCloseMs: 500,
          carry: slept.carry,
          wakeFrom: sleptRun,
        },
      ],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    await env.client.workflow.executeUpdateWithStart(submitUpdate, {
      args: [{ text: 'two' }],
      startWorkflowOperation: start,
    });
    const woken = (await env.client.workflow.getHandle(s.handle.workflowId).describe()).runId;
    await until('the woken run sleeps', async () => {
      const d = await env.client.workflow.getHandle(s.handle.workflowId, woken).describe();
      return d.status.name === 'COMPLETED' ? true : undefined;
    });
    return [`session-replay-session-wake@${woken}`];
  },
};

/**
 * A rewind: a two-step task, then a redo from its second step (the files restored, Temporal's reset, the reset run
 * holding the round until the rewind's report, then running it again). The reset run is recorded.
 */
Object.assign(scenarios, {
  async rewind(env: TestEnv, fake: FakeModel) {
    const p = makeProject({ 'a.txt': 'one\n' });
    const edit = {
      name: 'workspace__edit_file',
      args: { step_id: 's2', path: 'a.txt', old_string: 'one', new_string: 'two' },
    };
    fake.on('write_plan', {
      call: plan([step('s1', 'Write b.txt'), step('s2', 'Edit a.txt', { depends_on: ['s1'] })]),
    });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'b.txt', content: 'b\n' } }] },
      { calls: [edit] },
      { calls: [edit] }
    );
    fake.on('compose_answer', { content: 'done' }, { content: 'done again' });
    const t = await TaskDriver.start(env, 'Write and edit', p.dir, {
      taskId: 'task-replay-rewind-1',
      sessionId: 'replay-rewind',
    });
    await t.result();
    const rewind = await env.client.workflow.execute<typeof rewindWorkflow>('rewindWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: 'rewind-task-replay-rewind-1-1',
      args: [{ taskId: t.taskId, toStep: 's2', rerun: true, force: false }],
    });
    if (rewind.status !== 'rewound') throw new Error(`the rewind did not happen: ${JSON.stringify(rewind)}`);
    await env.client.workflow.getHandle(t.taskId, rewind.runId).result();
    return [`task-replay-rewind-1@${rewind.runId}`];
  },
} satisfies Record<string, Scenario>);

/**
 * A session grant revoked while the session's task waits for its review: the session tells the task, which asks
 * again for the path when the review is approved (and is denied). Returns the session's id and the task's.
 */
async function revokeWhileTaskWaits(env: TestEnv, fake: FakeModel, sessionId: string) {
  const p = makeProject();
  const file = path.join(p.outside, 'x.txt');
  writeFileSync(file, 'x');
  const s = await SessionDriver.start(env, p.dir, { sessionId });
  await s.handle.signal(grantSignal, { path: file, op: 'read' });
  // The message names a file: routed as work without the model. Its one step is denied: the task ends failed.
  fake.on('write_plan', { call: plan([step('s1', 'Read x.txt')], { before_work: true }) });
  fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: file } }] });
  const r = await s.submit('Read x.txt');
  const t = await TaskDriver.attach(env, r.taskId!);
  await t.waitFor('review_requested');
  await s.handle.executeUpdate(revokeGrantUpdate, { args: [{ grantId: 'g1' }] });
  await t.handle.signal(reviewSignal, { decision: 'approve' });
  const ask = await t.waitFor('permission_requested');
  await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'deny' });
  await t.result();
  await s.waitIdle();
  return { session: s.handle.workflowId, task: t.taskId };
}

Object.assign(scenarios, {
  async grant_revoked_session(env: TestEnv, fake: FakeModel) {
    return [(await revokeWhileTaskWaits(env, fake, 'replay-revoke-session')).session];
  },
  async grant_revoked_task(env: TestEnv, fake: FakeModel) {
    return [(await revokeWhileTaskWaits(env, fake, 'replay-revoke-task')).task];
  },
} satisfies Record<string, Scenario>);

/** The long task's runs, each in a scenario of its own (a history file is named by workflow id). */
Object.assign(scenarios, {
  async long_task_hands_over(env: TestEnv, fake: FakeModel) {
    const { first } = await longTask(env, fake, 'task-replay-long-1');
    return [`task-replay-long-1@${first}`];
  },
  async long_task_carried_on(env: TestEnv, fake: FakeModel) {
    const { last } = await longTask(env, fake, 'task-replay-long-2');
    return [`task-replay-long-2@${last}`];
  },
} satisfies Record<string, Scenario>);

async function fetchHistory(env: TestEnv, ref: string) {
  const [workflowId, runId] = ref.split('@');
  return env.client.workflow.getHandle(workflowId, runId).fetchHistory();
}

function recorded(): Array<{ name: string; workflowId: string; history: temporal.api.history.v1.IHistory }> {
  if (!existsSync(HISTORIES)) return [];
  return readdirSync(HISTORIES)
    .filter((f) => f.endsWith('.history.pb'))
    .sort()
    .map((f) => {
      const [name, workflowId] = f.replace(/\.history\.pb$/, '').split('--');
      return {
        name,
        workflowId,
        history: temporal.api.history.v1.History.decode(readFileSync(path.join(HISTORIES, f))),
      };
    });
}

describe('replay of recorded histories', () => {
  if (RECORD) {
    it('records the representative runs', async () => {
      const fake = await FakeModel.start();
      const env = await startTestEnv({ fakeModel: fake, name: 'record' });
      try {
        mkdirSync(HISTORIES, { recursive: true });
        const only = RECORD_WHICH === '1' ? null : RECORD_WHICH.split(',').map((n) => n.trim());
        for (const f of readdirSync(HISTORIES)) if (!only) rmSync(path.join(HISTORIES, f));
        for (const [name, run] of Object.entries(scenarios)) {
          if (only && !only.includes(name)) continue;
          const refs = await run(env, fake);
          fake.assertDone();
          fake.reset();
          for (const ref of refs) {
            const history = await fetchHistory(env, ref);
            // The file name keeps the workflow id: replay must see the id the run had (child ids derive from it).
            writeFileSync(
              path.join(HISTORIES, `${name}--${ref.split('@')[0]}.history.pb`),
              temporal.api.history.v1.History.encode(history).finish()
            );
          }
        }
      } finally {
        await env.shutdown();
        await fake.close();
      }
    }, 300_000);
  }

  it('has a recorded history for every representative run', () => {
    expect(recorded().map((r) => r.name)).toEqual(Object.keys(scenarios).sort());
  });

  it('replays every recorded history with the current workflow code', async () => {
    const results = [];
    for await (const r of Worker.runReplayHistories(
      // The sinks a worker registers (the bundled tracing interceptors report spans to one; replay drops them).
      { workflowBundle: { codePath: process.env.KLEA_TEST_WORKFLOW_BUNDLE! }, sinks: workerSinks(undefined) },
      recorded().map(({ workflowId, history }) => ({ workflowId, history }))
    )) {
      results.push({ workflowId: r.workflowId, error: r.error ? String(r.error) : null });
    }
    expect(results).toEqual(recorded().map((h) => ({ workflowId: h.workflowId, error: null })));
  });

  it('catches a deliberately non-deterministic change', async () => {
    // A copy of the workflow code where the task path asks for the project context twice: a new command that
    // the recorded histories do not have.
    const dir = mkdtempSync(path.join(ROOT, '.klea', 'test', 'nondeterministic-'));
    try {
      for (const d of ['workflows', 'common', 'activities'])
        cpSync(path.join(ROOT, d), path.join(dir, d), { recursive: true });
      const file = path.join(dir, 'workflows', 'task', 'workflow.ts');
      const code = readFileSync(file, 'utf8');
      const marker = 'const planning = new Planning(task);';
      expect(code).toContain(marker);
      writeFileSync(
        file,
        `import { localProjectFacts } from '../shared/activities';\n` +
          code.replace(
            marker,
            `await localProjectFacts.projectContextInfo({ projectDir: input.projectDir });\n  ${marker}`
          )
      );
      const bundle = await buildWorkflowBundle(path.join(dir, 'workflows', 'index.ts'));
      const approve = recorded().find((r) => r.name === 'approve')!;
      await expect(
        Worker.runReplayHistory(
          { workflowBundle: { code: bundle.code }, sinks: workerSinks(undefined) },
          approve.history,
          approve.workflowId
        )
      ).rejects.toThrow(/[Nn]ondeterminism|DeterminismViolation|does not match/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
