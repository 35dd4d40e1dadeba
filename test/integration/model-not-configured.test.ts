import { temporal } from '@temporalio/proto';
import type { taskWorkflow } from '../../workflows';
import { eventsQuery } from '../../workflows/task/messages';
import { startTestEnv, uniqueId, type TestEnv } from '../support/harness';

describe('no model configured', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await startTestEnv({ name: 'nomodel' });
  });
  afterAll(async () => env?.shutdown());

  it('fails the model activity at once, naming the variables to set', async () => {
    const sessionId = uniqueId('s');
    const handle = await env.client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: `task-${sessionId}-1`,
      args: [
        {
          taskId: `task-${sessionId}-1`,
          sessionId,
          prompt: 'hi',
          projectDir: '/tmp',
          mode: 'general',
          toolAccess: 'full',
        },
      ],
    });
    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/OPENAI_API_KEY/);
    expect(result.error).toMatch(/KLEA_MODEL/);
    const events = await handle.query(eventsQuery, { after: 0 });
    expect(events.filter((e) => e.type === 'error')).toEqual([expect.objectContaining({ code: 'ModelNotConfigured' })]);
    // Not retried: one activity, one attempt, failed as non-retryable.
    const history = (await handle.fetchHistory()).events ?? [];
    const scheduled = history.filter((e) => e.activityTaskScheduledEventAttributes);
    const names = scheduled.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    expect(names.filter((n) => n === 'routeRequest')).toHaveLength(1);
    const started = history.filter((e) => e.activityTaskStartedEventAttributes);
    expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual(names.map(() => 1));
    const failed = history
      .filter((e) => e.activityTaskFailedEventAttributes)
      .map((e) => e.activityTaskFailedEventAttributes!);
    expect(failed).toHaveLength(1);
    expect(failed[0].retryState).toBe(temporal.api.enums.v1.RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE);
    expect(failed[0].failure?.applicationFailureInfo).toMatchObject({ type: 'ModelNotConfigured', nonRetryable: true });
  });
});
