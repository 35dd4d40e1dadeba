/**
 * Speed and memory benchmarks, each measured side by side in one run:
 * - per-step overhead of a Klea tool step ÷ a bare Temporal workflow step (an empty activity), with an
 *   in-process loop as the floor;
 * - 8 independent 500 ms steps: run one after another ÷ run by Klea as a batch;
 * - tasks per second: bare Temporal ÷ Klea;
 * - model calls per tool step.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { TaskInput } from '../common/task';
import type { taskWorkflow } from '../workflows';
import type { BenchResult } from './history';
import { offeredStepIds, type BenchEnv } from './support';
import type { bareSteps } from './bare-workflows';

const project = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-bench-'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'f.txt'), 'x\n');
  return dir;
};

async function bareWorker(env: BenchEnv): Promise<{ queue: string; stop: () => Promise<void> }> {
  const queue = 'bench-bare';
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./bare-workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
  const connection = await NativeConnection.connect({ address: env.server.address });
  const worker = await Worker.create({
    connection,
    taskQueue: queue,
    workflowBundle: { code },
    activities: { noop: async () => undefined },
  });
  const running = worker.run();
  return {
    queue,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

let seq = 0;
/** A Klea task of `n` tool steps (a chain, or all independent); returns its duration in ms. */
async function kleaTask(
  env: BenchEnv,
  n: number,
  opts: { chain: boolean; command?: string; review?: boolean } = { chain: true }
): Promise<{ ms: number; taskId: string }> {
  const dir = project();
  const steps = Array.from({ length: n }, (_, i) => ({
    id: `s${i + 1}`,
    title: `step ${i + 1}`,
    instruction: 'do it',
    depends_on: opts.chain && i > 0 ? [`s${i}`] : [],
    needs_tool: true,
    questions: [],
  }));
  env.fake.on('write_plan', {
    call: { goal: 'bench', steps, review: { before_work: Boolean(opts.review), after_step_ids: [] } },
  });
  env.fake.always('pick_tools', (req) => ({
    calls: offeredStepIds(req.toolSchemas).map((id) =>
      opts.command
        ? { name: 'workspace__run_command', args: { step_id: id, command: opts.command } }
        : { name: 'workspace__read_file', args: { step_id: id, path: 'f.txt' } }
    ),
  }));
  env.fake.always('compose_answer', { content: 'done' });
  const taskId = `task-bench-o-${++seq}-${Date.now()}`;
  const input: TaskInput = {
    taskId,
    sessionId: 'bench',
    prompt: 'bench',
    projectDir: dir,
    mode: 'general',
    toolAccess: 'full',
    route: false,
  };
  const started = performance.now();
  const handle = await env.client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
    taskQueue: env.config.temporal.task_queue,
    workflowId: taskId,
    args: [input],
  });
  if (opts.review) return { ms: 0, taskId };
  await handle.result();
  return { ms: performance.now() - started, taskId };
}

export async function benchOverhead(env: BenchEnv): Promise<BenchResult[]> {
  const bare = await bareWorker(env);
  const results: BenchResult[] = [];
  try {
    const N = 20;
    // Warm both paths once (bundles, MCP server start, connections).
    await kleaTask(env, 2);
    await env.client.workflow.execute<typeof bareSteps>('bareSteps', {
      taskQueue: bare.queue,
      workflowId: `bare-warm-${Date.now()}`,
      args: [2],
    });
    env.fake.reset();

    // Per-step overhead.
    const k = await kleaTask(env, N);
    const modelCalls = env.fake.requests.length;
    env.fake.reset();
    let t0 = performance.now();
    await env.client.workflow.execute<typeof bareSteps>('bareSteps', {
      taskQueue: bare.queue,
      workflowId: `bare-${Date.now()}`,
      args: [N],
    });
    const bareMs = performance.now() - t0;
    t0 = performance.now();
    const noop = async () => undefined;
    for (let i = 0; i < N; i++) await noop();
    const loopMs = performance.now() - t0;
    results.push({
      name: 'per-step overhead: Klea tool step ÷ bare Temporal step',
      figures: [
        ['Klea, per tool step (pick + path check + MCP call)', `${(k.ms / N).toFixed(1)} ms`],
        ['bare Temporal, per empty activity', `${(bareMs / N).toFixed(1)} ms`],
        ['in-process loop, per call (floor)', `${((loopMs / N) * 1000).toFixed(2)} µs`],
      ],
      ratio: k.ms / N / (bareMs / N),
      goal: 'report',
      ok: true,
    });
    results.push({
      name: 'model calls per tool step',
      figures: [
        ['model calls in a 20-step task', String(modelCalls)],
        ['tool steps', String(N)],
      ],
      ratio: modelCalls / N,
      goal: '≤ 1.2 (plan + one pick per batch + answer)',
      ok: modelCalls / N <= 1.2,
    });

    // Parallel steps.
    const seqRun = await kleaTask(env, 8, { chain: true, command: 'sleep 0.5' });
    env.fake.reset();
    const parRun = await kleaTask(env, 8, { chain: false, command: 'sleep 0.5' });
    env.fake.reset();
    results.push({
      name: '8 independent 500 ms steps: one after another ÷ Klea batch',
      figures: [
        ['8 chained steps', `${Math.round(seqRun.ms)} ms`],
        ['8 independent steps (one batch)', `${Math.round(parRun.ms)} ms`],
      ],
      ratio: seqRun.ms / parRun.ms,
      goal: '≥ 4',
      ok: seqRun.ms / parRun.ms >= 4,
    });

    // Throughput.
    const M = 20;
    t0 = performance.now();
    await Promise.all(Array.from({ length: M }, () => kleaTask(env, 1)));
    const kleaTps = M / ((performance.now() - t0) / 1000);
    env.fake.reset();
    t0 = performance.now();
    await Promise.all(
      Array.from({ length: M }, (_, i) =>
        env.client.workflow.execute<typeof bareSteps>('bareSteps', {
          taskQueue: bare.queue,
          workflowId: `bare-tps-${i}-${Date.now()}`,
          args: [3],
        })
      )
    );
    const bareTps = M / ((performance.now() - t0) / 1000);
    results.push({
      name: 'tasks per second: bare Temporal (3 activities) ÷ Klea (1-step task, 5 activities)',
      figures: [
        ['Klea', `${kleaTps.toFixed(1)} tasks/s`],
        ['bare Temporal', `${bareTps.toFixed(1)} workflows/s`],
      ],
      ratio: bareTps / kleaTps,
      goal: 'report',
      ok: true,
    });
  } finally {
    await bare.stop();
  }
  return results;
}
