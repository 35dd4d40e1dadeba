import type { TaskResult } from '../../common/task';
import { startTestEnv, uniqueId, type TestEnv } from '../support/harness';

describe('no model configured', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await startTestEnv({ name: 'nomodel' });
  });
  afterAll(async () => env?.shutdown());

  it('fails the model activity at once, naming the variables to set', async () => {
    const sessionId = uniqueId('s');
    const handle = await env.client.workflow.start('taskWorkflow', {
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
    const result = (await handle.result()) as TaskResult;
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/OPENAI_API_KEY/);
    expect(result.error).toMatch(/KLEA_MODEL/);
    // Not retried: exactly one attempt is in the history.
    const history = await handle.fetchHistory();
    const scheduled =
      history.events?.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'routeRequest') ??
      [];
    const failed = history.events?.filter((e) => e.activityTaskFailedEventAttributes) ?? [];
    expect(scheduled).toHaveLength(1);
    expect(failed[0]?.activityTaskFailedEventAttributes?.retryState).toBeDefined();
  });
});
