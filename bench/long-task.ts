/**
 * A long task's history per run: a 400-step task (four steps to a round, each reading a file) runs with the default
 * `task.continue_as_new_after_events`, continuing as new when its history grows (by events, or by bytes when
 * Temporal suggests it); every run of its chain is measured, for 3.6 KB and for 10.8 KB reads side by side. Goal: the
 * largest run stays under 10 MB (Temporal warns from 10 MB and fails a run at 50 MB).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { TaskInputSchema } from '../common/task';
import type { BenchResult } from './history';
import { scriptToolSteps, runAlone, startKleaTask, type BenchEnv } from './support';

const STEPS = 400;
const LIMIT_BYTES = 10 * 2 ** 20;

/** Every run of a workflow id, oldest first: its history's bytes and events. */
async function runsOf(env: BenchEnv, workflowId: string): Promise<Array<{ bytes: number; events: number }>> {
  const runs: Array<{ bytes: number; events: number }> = [];
  for await (const w of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await env.client.workflow.getHandle(workflowId, w.runId).fetchHistory();
    runs.push({
      bytes: temporal.api.history.v1.History.encode(history).finish().length,
      events: history.events?.length ?? 0,
    });
  }
  return runs.reverse();
}

async function runTask(env: BenchEnv, partBytes: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-bench-'));
  mkdirSync(dir, { recursive: true });
  for (let i = 1; i <= 5; i++)
    writeFileSync(path.join(dir, `part${i}.txt`), `Part ${i}: ${'lorem ipsum '.repeat(partBytes / 12)}\n`);
  scriptToolSteps(env.fake, {
    goal: `Read ${STEPS} parts`,
    steps: Array.from({ length: STEPS }, (_, i) => ({
      id: `s${i + 1}`,
      title: `Read part ${i + 1}`,
      instruction: `Read part${(i % 5) + 1}.txt and note what it says.`,
      depends_on: i >= 4 ? [`s${i - 3}`] : [],
    })),
    call: (id) => ({ name: 'read_file', args: { path: `part${(Number(id.slice(1)) % 5) + 1}.txt` } }),
    answer: `Read ${STEPS} parts.`,
  });
  const taskId = `task-bench-long-${partBytes}-${Date.now()}`;
  const handle = await startKleaTask(env.client, env.config.temporal.task_queue, {
    taskId,
    sessionId: 'bench',
    prompt: `Read ${STEPS} parts`,
    projectDir: dir,
  });
  const result = (await handle.result()) as { status: string; error: string | null };
  env.fake.reset();
  if (result.status !== 'done') throw new Error(`bench task failed: ${result.error}`);
  return runsOf(env, taskId);
}

export async function benchLongTask(env: BenchEnv): Promise<BenchResult> {
  const threshold = TaskInputSchema.shape.continueAsNewAfterEvents.parse(undefined);
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(2)} MB`;
  const figures: Array<[string, string]> = [['continue-as-new after', `${threshold} events (default)`]];
  let largest = 0;
  for (const partBytes of [3_600, 10_800]) {
    const runs = await runTask(env, partBytes);
    const most = Math.max(...runs.map((r) => r.bytes));
    largest = Math.max(largest, most);
    const reads = `${(partBytes / 1000).toFixed(1)} KB reads`;
    figures.push(
      [`${reads}: runs (history events each)`, `${runs.length} (${runs.map((r) => r.events).join(', ')})`],
      [`${reads}: largest run`, mb(most)],
      [`${reads}: all runs together`, mb(runs.reduce((a, r) => a + r.bytes, 0))]
    );
  }
  return {
    name: `history bytes per run of a ${STEPS}-step task (continue-as-new): largest run ÷ 10 MB`,
    figures,
    ratio: largest / LIMIT_BYTES,
    goal: '≤ 1 (under 10 MB per run)',
    ok: largest < LIMIT_BYTES,
  };
}

if (require.main === module) runAlone(benchLongTask);
