/** Shared set-up for benchmarks: a real dev server, a Klea worker on the prebuilt bundle, and the fake model. */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startStack, type Stack } from '../testing/stack';

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
