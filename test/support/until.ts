/** Waiting in tests, benchmarks and the fuzzer: for a condition, or for a worker so a run starts on a ready stack. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Waits until `probe` gives a value (polling every `intervalMs`), or fails naming what never happened. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 100
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`never happened within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Resolves once a worker polls the task queue; throws when none does within the timeout. */
export async function untilPolling(
  client: Client,
  namespace: string,
  taskQueue: string,
  timeoutMs = 15_000
): Promise<void> {
  await until(
    `a worker polls ${taskQueue}`,
    async () => {
      const res = await client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      return (res.pollers ?? []).length > 0 ? true : undefined;
    },
    timeoutMs,
    50
  );
}
