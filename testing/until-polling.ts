/** Waiting for a worker, so that a test, benchmark or fuzz run starts against a stack that is ready. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Resolves once a worker polls the task queue; throws when none does within the timeout. */
export async function untilPolling(
  client: Client,
  namespace: string,
  taskQueue: string,
  timeoutMs = 15_000
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if ((res.pollers ?? []).length > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no worker polled ${taskQueue} within ${timeoutMs} ms`);
}
