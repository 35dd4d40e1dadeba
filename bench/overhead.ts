/**
 * Worker memory per parked task (waiting for review) ÷ per parked bare workflow, measured side by side in one
 * run. What a step and a task cost in time is measured against a hand-written agent in ./steps.ts.
 */
import os from 'node:os';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { TaskInput } from '../common/task';
import type { taskWorkflow } from '../workflows';
import { stateQuery } from '../workflows/task/messages';
import type { BenchResult } from './history';
import type { BenchEnv } from './support';
import type { bareParked } from './bare-workflows';

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

export async function benchOverhead(env: BenchEnv): Promise<BenchResult[]> {
  const bare = await bareWorker(env);
  const results: BenchResult[] = [];
  try {
    // Memory per parked task.
    const P = 500;
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    env.fake.always('write_plan', {
      call: {
        goal: 'park',
        steps: [{ id: 's1', title: 'x', instruction: 'x', depends_on: [], needs_tool: false, questions: [] }],
        review: { before_work: true, after_step_ids: [] },
      },
    });
    const parked: string[] = [];
    for (let i = 0; i < P; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, P - i) }, async (_, j) => {
          const taskId = `task-bench-park-${i + j}-${Date.now()}`;
          const input: TaskInput = {
            taskId,
            sessionId: 'bench-park',
            prompt: 'park',
            projectDir: os.tmpdir(),
            mode: 'general',
            toolAccess: 'full',
            route: false,
          };
          const h = await env.client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
            taskQueue: env.config.temporal.task_queue,
            workflowId: taskId,
            args: [input],
          });
          return h.workflowId;
        })
      );
      parked.push(...batch);
    }
    for (const id of parked) {
      for (;;) {
        // A query may time out while the worker is busy starting the others: ask again.
        const s = await env.client.workflow
          .getHandle(id)
          .query(stateQuery)
          .catch(() => null);
        if (s?.status === 'awaiting_review') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    global.gc?.();
    const kleaPerTask = (process.memoryUsage().rss - rss0) / P;
    const rss1 = process.memoryUsage().rss;
    await Promise.all(
      Array.from({ length: P }, (_, i) =>
        env.client.workflow.start<typeof bareParked>('bareParked', {
          taskQueue: bare.queue,
          workflowId: `bare-park-${i}-${Date.now()}`,
        })
      )
    );
    await new Promise((r) => setTimeout(r, 3000));
    global.gc?.();
    const barePerWf = Math.max((process.memoryUsage().rss - rss1) / P, 1);
    results.push({
      name: `worker memory per parked task (${P} waiting for review) ÷ per parked bare workflow`,
      figures: [
        ['Klea, RSS per parked task', `${(kleaPerTask / 1024).toFixed(1)} KiB`],
        ['bare Temporal, RSS per parked workflow', `${(barePerWf / 1024).toFixed(1)} KiB`],
      ],
      ratio: kleaPerTask / barePerWf,
      goal: 'report',
      ok: true,
    });
    for (const id of parked)
      await env.client.workflow
        .getHandle(id)
        .terminate('bench over')
        .catch(() => undefined);
    env.fake.reset();
  } finally {
    await bare.stop();
  }
  return results;
}
