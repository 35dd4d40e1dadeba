/** Shared set-up for benchmarks: a real dev server, a Klea worker on the prebuilt bundle, and the fake model. */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { taskStartAttributes } from '../common/search-attributes';
import type { TaskInput } from '../common/task';
import type { taskWorkflow } from '../workflows';
import { startStack, type Stack } from '../test/support/stack';

export type BenchEnv = Stack;
/**
 * Benchmarks work in fresh directories under the system's temporary directory, so that is the project root the
 * worker allows (`project.allowed_roots` defaults to the project directory).
 */
export const startBenchEnv = (taskQueue = 'bench'): Promise<BenchEnv> =>
  startStack({ taskQueue, projectDir: realpathSync(os.tmpdir()) });

export async function historyBytes(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** Step ids offered in a pick_tools request (the enum of the step_id parameter). */
export function offeredStepIds(toolSchemas: Array<{ parameters?: Record<string, unknown> }>): string[] {
  const props = (toolSchemas[0]?.parameters as { properties?: { step_id?: { enum?: string[] } } })?.properties;
  return props?.step_id?.enum ?? [];
}

/** Starts a task the way a session starts its tasks (with their first search attributes), on `taskQueue`. */
export function startKleaTask(
  client: Client,
  taskQueue: string,
  input: TaskInput
): Promise<WorkflowHandle<typeof taskWorkflow>> {
  return client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
    taskQueue,
    workflowId: input.taskId,
    args: [input],
    typedSearchAttributes: taskStartAttributes(input.sessionId, input.mode),
  });
}
