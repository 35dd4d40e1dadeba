/**
 * Worker memory per parked task: RSS a Klea worker gains for each task waiting for review ÷ RSS a bare Temporal
 * worker gains for each workflow waiting for a signal (goal: at most 2).
 *
 * What is measured, and how both sides are kept alike:
 * - Each side's worker runs alone in its own child process (bench/memory-worker.ts), so the figures hold what the
 *   worker holds and nothing of this process: not the fake model (which keeps every request it received), not
 *   the Temporal client, not the in-process stack's own worker. The two processes start the same way, with the
 *   same workflow cache size (large enough that no parked run is evicted, as Temporal sizes it by default for a
 *   worker with a few GiB of heap) and the same garbage collection before each reading: a full collection of
 *   the main isolate and of the workflow thread's isolate, where every cached run lives.
 * - Each worker first parks `WARM` runs, which pays what is paid once (its workflow sandbox, the code V8
 *   compiles lazily on first use, the connection to the model, the MCP server), then is read; then it parks
 *   `PARKED` more runs and is read again. A figure per run is the difference between the two readings ÷
 *   `PARKED`.
 * - A run counts as parked once a query says so (the task's `state` says `awaiting_review`; the bare workflow's
 *   `parked` query says true), so both sides are read after all their runs have had the same kind of
 *   workflow task and a query.
 * The heap figures beside the RSS say where the memory goes: the workflow thread's heap holds the runs' state.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { isFinalStatus } from '../common/events';
import { stateQuery } from '../workflows/task/messages';
import { parkedQuery, type bareParked } from './bare-workflows';
import type { BenchResult } from './history';
import type { MemoryReading, MemoryWorkerArgs } from './memory-worker';
import { scriptParkedTasks, runAlone, startKleaTask, type BenchEnv } from './support';
import { untilPolling } from '../test/support/until';

const PARKED = 500;
const WARM = 20;
const BATCH = 50;

interface Side {
  kind: MemoryWorkerArgs['kind'];
  bundlePath: string;
  projectDir: string;
  start(env: BenchEnv, queue: string, id: string): Promise<unknown>;
  isParked(env: BenchEnv, id: string): Promise<boolean>;
}

/** Per parked run: growth of RSS and of the workflow thread's heap between the two readings. */
interface PerRun {
  rss: number;
  workflowHeap: number;
  mainHeap: number;
}

export function answer(child: ChildProcess, kind: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: { kind: string }) => {
      if (msg.kind !== kind) return;
      child.off('exit', onExit);
      child.off('message', onMessage);
      resolve(msg as Record<string, unknown>);
    };
    const onExit = (code: number | null) => reject(new Error(`memory worker exited (${code}) before "${kind}"`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

export async function read(child: ChildProcess): Promise<MemoryReading> {
  const reply = answer(child, 'reading');
  child.send({ kind: 'measure' });
  return (await reply).reading as MemoryReading;
}

export const threadHeap = (r: MemoryReading) => r.threads.reduce((sum, t) => sum + t.usedHeapSize, 0);

/** Starts the runs in batches, each batch once the one before is parked (a busy worker lets queries time out). */
async function park(env: BenchEnv, side: Side, queue: string, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    await Promise.all(batch.map((id) => side.start(env, queue, id)));
    for (const id of batch) await untilParked(env, side, id);
  }
}

async function untilParked(env: BenchEnv, side: Side, id: string): Promise<void> {
  for (let busy = 0; ;) {
    try {
      if (await side.isParked(env, id)) return;
    } catch (err) {
      // On a machine this busy a query may time out, or find the run's workflow task timed out and due again:
      // the query is asked again. A run that ended is an error.
      const why = String((err as { cause?: unknown }).cause ?? err);
      if (!/timed out|failed state/.test(why) || ++busy > 100) throw err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function measureSide(env: BenchEnv, side: Side): Promise<PerRun> {
  const queue = `bench-memory-${side.kind}`;
  const args: MemoryWorkerArgs = {
    kind: side.kind,
    address: env.server.address,
    taskQueue: queue,
    bundlePath: side.bundlePath,
    modelUrl: env.fake.url,
    projectDir: side.projectDir,
    cachedWorkflows: 2 * (WARM + PARKED),
  };
  const child = fork(path.join(__dirname, 'memory-worker.js'), [JSON.stringify(args)], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ids = Array.from(
    { length: WARM + PARKED },
    (_, i) => `${side.kind === 'klea' ? 'task-' : ''}mem-${side.kind}-${i}-${Date.now()}`
  );
  try {
    await answer(child, 'started');
    await untilPolling(env.client, env.config.temporal.namespace, queue);
    await park(env, side, queue, ids.slice(0, WARM));
    const before = await read(child);
    await park(env, side, queue, ids.slice(WARM));
    const after = await read(child);
    return {
      rss: (after.rss - before.rss) / PARKED,
      workflowHeap: (threadHeap(after) - threadHeap(before)) / PARKED,
      mainHeap: (after.main.usedHeapSize - before.main.usedHeapSize) / PARKED,
    };
  } finally {
    await Promise.all(
      ids.map((id) =>
        env.client.workflow
          .getHandle(id)
          .terminate('bench over')
          .catch(() => undefined)
      )
    );
    const exited = new Promise((r) => child.once('exit', r));
    if (child.connected) child.send({ kind: 'stop' });
    await exited;
  }
}

async function bareBundle(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./bare-workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} },
  });
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-')), 'bare-bundle.js');
  writeFileSync(file, code);
  return file;
}

export async function benchMemory(env: BenchEnv): Promise<BenchResult> {
  const projectDir = mkdtempSync(path.join(os.tmpdir(), 'klea-bench-'));
  scriptParkedTasks(env.fake, 'park');
  const klea: Side = {
    kind: 'klea',
    bundlePath: path.join(__dirname, '..', 'workflow-bundle.js'),
    projectDir,
    start: (e, queue, taskId) =>
      startKleaTask(e.client, queue, { taskId, sessionId: 'bench-memory', prompt: 'park', projectDir }),
    isParked: async (e, id) => {
      const state = await e.client.workflow.getHandle(id).query(stateQuery);
      if (isFinalStatus(state.status)) throw new Error(`bench task ${id} ended (${state.status}): ${state.error}`);
      return state.status === 'awaiting_review';
    },
  };
  const bare: Side = {
    kind: 'bare',
    bundlePath: await bareBundle(),
    projectDir,
    start: (e, queue, id) =>
      e.client.workflow.start<typeof bareParked>('bareParked', { taskQueue: queue, workflowId: id }),
    isParked: (e, id) => e.client.workflow.getHandle(id).query(parkedQuery),
  };
  let kleaPerRun: PerRun;
  let barePerRun: PerRun;
  try {
    barePerRun = await measureSide(env, bare);
    kleaPerRun = await measureSide(env, klea);
  } finally {
    env.fake.reset();
  }
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const ratio = kleaPerRun.rss / Math.max(barePerRun.rss, 1);
  return {
    name: `worker memory per parked task (${PARKED} waiting for review) ÷ per parked bare workflow`,
    figures: [
      ['Klea, RSS per parked task', kib(kleaPerRun.rss)],
      ['bare Temporal, RSS per parked workflow', kib(barePerRun.rss)],
      ['Klea, workflow-thread heap per parked task', kib(kleaPerRun.workflowHeap)],
      ['bare Temporal, workflow-thread heap per parked workflow', kib(barePerRun.workflowHeap)],
      ['Klea, main-thread heap per parked task', kib(kleaPerRun.mainHeap)],
      ['bare Temporal, main-thread heap per parked workflow', kib(barePerRun.mainHeap)],
    ],
    ratio,
    goal: '≤ 2',
    ok: ratio <= 2,
  };
}

if (require.main === module) runAlone(benchMemory);
