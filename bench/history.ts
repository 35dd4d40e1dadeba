/**
 * History size: bytes of workflow history for a 50-step task divided by a 5-step task (goal: at most 12, i.e.
 * history grows linearly, never with the square of the steps).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyBytes, scriptToolSteps, runAlone, startKleaTask, type BenchEnv } from './support';

export interface BenchResult {
  name: string;
  figures: Array<[string, string]>;
  ratio: number;
  goal: string;
  ok: boolean;
}

async function runTask(env: BenchEnv, steps: number, dir: string): Promise<number> {
  scriptToolSteps(env.fake, {
    goal: `Read ${steps} parts`,
    steps: Array.from({ length: steps }, (_, i) => ({
      id: `s${i + 1}`,
      title: `Read part ${i + 1}`,
      instruction: `Read part${(i % 5) + 1}.txt and note what it says.`,
      depends_on: i === 0 ? [] : [`s${i}`],
    })),
    call: (id) => ({ name: 'read_file', args: { path: `part${(Number(id.slice(1)) % 5) + 1}.txt` } }),
    answer: `Read ${steps} parts.`,
  });
  const taskId = `task-bench-${steps}-${Date.now()}`;
  const handle = await startKleaTask(env.client, env.config.temporal.task_queue, {
    taskId,
    sessionId: 'bench',
    prompt: `Read ${steps} parts`,
    projectDir: dir,
  });
  const result = (await handle.result()) as { status: string; error: string | null };
  if (result.status !== 'done') throw new Error(`bench task failed: ${result.error}`);
  env.fake.reset();
  return historyBytes(env.client, taskId);
}

export async function benchHistory(env: BenchEnv): Promise<BenchResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-bench-'));
  mkdirSync(dir, { recursive: true });
  for (let i = 1; i <= 5; i++)
    writeFileSync(path.join(dir, `part${i}.txt`), `Part ${i}: ${'lorem ipsum '.repeat(300)}\n`);
  const small = await runTask(env, 5, dir);
  const large = await runTask(env, 50, dir);
  const ratio = large / small;
  return {
    name: 'history bytes, 50-step task ÷ 5-step task',
    figures: [
      ['5-step task', `${small} B`],
      ['50-step task', `${large} B`],
    ],
    ratio,
    goal: '≤ 12',
    ok: ratio <= 12,
  };
}

if (require.main === module) runAlone(benchHistory);
