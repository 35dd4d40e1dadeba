/**
 * Signals sent the way an operator would, with `temporal workflow signal` from the Temporal CLI: a bad payload is
 * never stored and never fails the workflow task; it is reported as an `error` event. And a grant the user makes
 * for the session outlives the task it was made in, whatever becomes of that task.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KleaEvent } from '../../common/events';
import { temporalCliPath } from '../../runtime/temporal';
import type { FakeModel } from '../support/fake-model';
import { clarifyUpdate } from '../../workflows/task/messages';
import { temporalAddress, type TestEnv } from '../support/harness';
import { SessionDriver } from '../support/session-driver';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

const run = promisify(execFile);

/** `temporal workflow signal --name <name> --input <json>` against the test's dev server. */
async function cliSignal(workflowId: string, name: string, input: string): Promise<void> {
  await run(temporalCliPath(), [
    'workflow',
    'signal',
    '--address',
    temporalAddress(),
    '--workflow-id',
    workflowId,
    '--name',
    name,
    '--input',
    input,
  ]);
}

/** The workflow history has no failed workflow task: no handler threw. */
async function expectNoFailedWorkflowTask(handle: TaskDriver['handle'] | SessionDriver['handle']): Promise<void> {
  const history = await handle.fetchHistory();
  expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
}

const errorsOf = (events: KleaEvent[]) =>
  events.filter((e): e is Extract<KleaEvent, { type: 'error' }> => e.type === 'error').map((e) => e.message);

describe('signals from the Temporal CLI', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'cli-signals' }, (f, e) => {
    fake = f;
    env = e;
  });

  it('settings: a bad value is reported and not stored; a good one is applied', async () => {
    const p = makeProject();
    const s = await SessionDriver.start(env, p.dir);
    const workflowId = `session-${s.sessionId}`;

    await cliSignal(workflowId, 'settings', '{"mode":"turbo","toolAccess":"read_only"}');
    await cliSignal(workflowId, 'settings', '"read_only"');
    const reported = await s.waitFor(
      (e) => e.type === 'error' && /settings signal ignored: settings:/.test(e.message),
      'the second bad settings reported'
    );
    expect(reported).toMatchObject({ code: 'InvalidSignal' });
    expect(errorsOf(await s.events())[0]).toMatch(/^settings signal ignored: mode: /);
    expect(await s.state()).toMatchObject({ mode: 'general', toolAccess: 'full' });

    await cliSignal(workflowId, 'settings', '{"toolAccess":"read_only"}');
    await s.waitFor((e) => e.type === 'context' && e.toolAccess === 'read_only', 'the new tool access');
    expect(await s.state()).toMatchObject({ mode: 'general', toolAccess: 'read_only' });
    await expectNoFailedWorkflowTask(s.handle);
  });

  it('cancel: a reason that is not text still cancels, says so, and does not fail the workflow task', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Think', { needs_tool: false })], { before_work: true }) });
    const t = await TaskDriver.start(env, 'Think about it', p.dir);
    await t.waitFor('review_requested');

    await cliSignal(t.taskId, 'cancel', '{"reason":42}');
    expect(await t.result()).toMatchObject({ status: 'cancelled' });
    expect(errorsOf(await t.events())).toEqual([
      expect.stringMatching(/^cancel signal: the reason was not used \(reason: .*\); cancelling anyway$/),
    ]);
    await expectNoFailedWorkflowTask(t.handle);
  });

  it('cancel: a bare string from the CLI is the reason', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Think', { needs_tool: false })], { before_work: true }) });
    const t = await TaskDriver.start(env, 'Think about it', p.dir);
    await t.waitFor('review_requested');

    await cliSignal(t.taskId, 'cancel', '"taking too long"');
    expect(await t.result()).toMatchObject({ status: 'cancelled' });
    expect((await t.state()).error ?? JSON.stringify(await t.events())).toContain('taking too long');
  });

  it('clarify: answers must answer the pending questions; unknown ones are refused with the list', async () => {
    const p = makeProject();
    const questions = ['Whom should I greet?', 'In which language?'];
    fake.on('write_plan', { call: plan([step('s1', 'Write the greeting', { needs_tool: false, questions })]) });
    fake.on('do_step', { content: 'Hallo, Ada!' });
    fake.on('compose_answer', { content: 'Hallo, Ada!' });
    const t = await TaskDriver.start(env, 'Greet someone', p.dir);
    await t.waitFor('questions');

    // Over the CLI: the signal cannot answer, so the problem is an event and the task keeps waiting.
    await cliSignal(t.taskId, 'clarify', '{"answers":{"Whom?":"Ada"}}');
    const [unknown] = await (async () => {
      await t.waitFor('error');
      return errorsOf(await t.events());
    })();
    expect(unknown).toBe(
      'clarify signal: this is not a pending question: "Whom?"; the pending questions are "Whom should I greet?", "In which language?"'
    );
    // Through the update (what the API uses), the caller is told at once and nothing reaches history.
    await expect(
      t.handle.executeUpdate(clarifyUpdate, { args: [{ answers: { 'Whom should I greet?': 'Ada' } }] })
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/^no answer to "In which language\?"/) } });
    expect((await t.state()).status).toBe('awaiting_clarification');

    await cliSignal(
      t.taskId,
      'clarify',
      JSON.stringify({ answers: { [questions[0]]: 'Ada', [questions[1]]: 'German' } })
    );
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'Hallo, Ada!' });
    expect(fake.requestsFor('do_step')[0].text).toContain('German');
    await expectNoFailedWorkflowTask(t.handle);
  });

  it('an allow_session grant is kept by the session even when its task is then terminated', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const s = await SessionDriver.start(env, p.dir);
    fake.on('route_request', { call: { route: 'task', reply: null } });
    // The task reads the outside file, then waits for a review after that step: it is terminated there.
    fake.on('write_plan', {
      call: plan(
        [step('s1', 'Read the outside file'), step('s2', 'Sum up', { needs_tool: false, depends_on: ['s1'] })],
        {
          after_step_ids: ['s1'],
        }
      ),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: outsideFile } }] });
    const r = await s.submit('read it');
    const t = await TaskDriver.attach(env, r.taskId!);
    const req = await t.waitFor('permission_requested');
    await cliSignal(t.taskId, 'permission', JSON.stringify({ requestId: req.requestId, decision: 'allow_session' }));
    await t.waitFor('review_requested');
    await t.handle.terminate('operator stopped it');

    const idle = await s.waitIdle();
    expect(idle.grants).toEqual([expect.objectContaining({ path: outsideFile, op: 'read' })]);

    // The next task reads the same file without asking.
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on('write_plan', { call: plan([step('s1', 'Read the outside file')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: outsideFile } }] });
    fake.on('compose_answer', { content: 'outside data' });
    const r2 = await s.submit('read it again');
    const t2 = await TaskDriver.attach(env, r2.taskId!);
    expect(await t2.result()).toMatchObject({ status: 'done', answer: 'outside data' });
    expect(await t2.countOf('permission_requested')).toBe(0);
  });
});
