/**
 * The worker process of bench/memory.ts: it hosts one Temporal worker (Klea's, or the bare comparison's) and
 * nothing else, so its memory is the worker's own. The bench process talks to it over the IPC channel:
 * `{ kind: 'measure' }` answers with the process's memory after a full garbage collection of every isolate,
 * `{ kind: 'stop' }` shuts the worker down.
 *
 * Workflows run in a worker thread with its own V8 isolate, which `global.gc()` in this thread does not reach. So
 * the thread is started through a subclass of `worker_threads.Worker` that hands it a private message port: on
 * that port the thread collects its garbage and answers with its heap statistics. Both kinds of worker get the
 * same treatment.
 */
import v8 from 'node:v8';
import workerThreads, { MessageChannel, type MessagePort } from 'node:worker_threads';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { resolveConfig } from '../common/config-resolve';
import { silentLogger } from '../runtime/log';
import { createKleaWorker, sdkPrometheusOptions } from '../worker/worker';

export interface MemoryWorkerArgs {
  kind: 'klea' | 'bare';
  address: string;
  taskQueue: string;
  /** The prebuilt workflow bundle this worker runs. */
  bundlePath: string;
  /** The fake model's URL and the project the tasks work on (Klea only). */
  modelUrl: string;
  projectDir: string;
  /** Workflow cache size: large enough that no parked run is evicted. */
  cachedWorkflows: number;
  /** Where the Temporal SDK's own Prometheus metrics are served (workflow tasks, the sticky cache); none if unset. */
  sdkMetricsAddress?: string;
}

export interface HeapFigures {
  usedHeapSize: number;
  totalHeapSize: number;
  externalMemory: number;
}

export interface MemoryReading {
  rss: number;
  /** This thread (activities, the worker's bookkeeping). */
  main: HeapFigures;
  /** The workflow threads (the workflow sandbox and every cached run). */
  threads: HeapFigures[];
  /** Workflow runs the worker holds in its cache. */
  cachedWorkflows: number;
}

const heapFigures = (s: v8.HeapInfo): HeapFigures => ({
  usedHeapSize: s.used_heap_size,
  totalHeapSize: s.total_heap_size,
  externalMemory: s.external_memory,
});

const gcPorts: MessagePort[] = [];

/** Runs in each workflow thread before the SDK's own entry: answers a collect request on its private port. */
const THREAD_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const v8 = require('node:v8');
workerData.kleaBenchGcPort.on('message', () => {
  globalThis.gc();
  globalThis.gc();
  workerData.kleaBenchGcPort.postMessage(v8.getHeapStatistics());
});
workerData.kleaBenchGcPort.unref();
require(workerData.kleaBenchEntry);
`;

class CollectableWorker extends workerThreads.Worker {
  constructor(filename: string | URL, options: workerThreads.WorkerOptions = {}) {
    const { port1, port2 } = new MessageChannel();
    super(THREAD_BOOTSTRAP, {
      ...options,
      eval: true,
      workerData: { kleaBenchGcPort: port2, kleaBenchEntry: String(filename) },
      transferList: [port2, ...(options.transferList ?? [])],
    });
    port1.unref();
    gcPorts.push(port1);
  }
}

async function collectThread(port: MessagePort): Promise<HeapFigures> {
  const stats = new Promise<v8.HeapInfo>((resolve) => port.once('message', resolve));
  port.postMessage('collect');
  return heapFigures(await stats);
}

async function measure(cachedWorkflows: () => number): Promise<MemoryReading> {
  const gc = global.gc;
  if (!gc) throw new Error('the memory worker needs node --expose-gc');
  const threads = await Promise.all(gcPorts.map(collectThread));
  gc();
  await new Promise((r) => setImmediate(r));
  gc();
  return {
    rss: process.memoryUsage().rss,
    main: heapFigures(v8.getHeapStatistics()),
    threads,
    cachedWorkflows: cachedWorkflows(),
  };
}

async function main(args: MemoryWorkerArgs): Promise<void> {
  // Installed before the SDK creates its workflow threads.
  (workerThreads as { Worker: typeof workerThreads.Worker }).Worker = CollectableWorker;
  Runtime.install({
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    ...(args.sdkMetricsAddress
      ? { telemetryOptions: { metrics: { prometheus: sdkPrometheusOptions(args.sdkMetricsAddress) } } }
      : {}),
  });
  const connection = await NativeConnection.connect({ address: args.address });
  const workflowBundle = { codePath: args.bundlePath };
  let run: () => Promise<void>;
  let shutdown: () => void;
  let cached: () => number;
  if (args.kind === 'klea') {
    const config = resolveConfig(
      {
        model: { name: 'fake', base_url: args.modelUrl, api_key: 'k' },
        temporal: { address: args.address, task_queue: args.taskQueue },
        worker: { max_cached_workflows: args.cachedWorkflows },
        project: { dir: args.projectDir },
      },
      {}
    );
    const worker = await createKleaWorker({
      connection,
      namespace: 'default',
      taskQueue: args.taskQueue,
      workflowBundle,
      config,
      log: silentLogger,
    });
    run = () => worker.run();
    shutdown = () => worker.worker.shutdown();
    cached = () => worker.worker.getStatus().numCachedWorkflows;
  } else {
    const worker = await Worker.create({
      connection,
      taskQueue: args.taskQueue,
      workflowBundle,
      activities: { noop: async () => undefined },
      maxCachedWorkflows: args.cachedWorkflows,
    });
    run = () => worker.run();
    shutdown = () => worker.shutdown();
    cached = () => worker.getStatus().numCachedWorkflows;
  }
  process.on('message', (msg: { kind: string }) => {
    if (msg.kind === 'measure') void measure(cached).then((reading) => process.send?.({ kind: 'reading', reading }));
    else if (msg.kind === 'stop') shutdown();
  });
  const running = run();
  process.send?.({ kind: 'started' });
  await running;
  await connection.close();
  process.disconnect?.();
}

if (require.main === module) {
  main(JSON.parse(process.argv[2] ?? '{}') as MemoryWorkerArgs).catch((err: unknown) => {
    process.stderr.write(`memory worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
