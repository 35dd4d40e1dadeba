/**
 * A whole Klea stack in one process, for benchmarks and the API fuzzer: a real Temporal dev server (in memory,
 * free ports), a Klea worker on the prebuilt bundle, and the fake model (scripted by the caller). bench/ and
 * scripts/ use it too: they may import test/support/, never the tests.
 */
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectClient } from './client-connection';
import { NativeConnection, Runtime } from '@temporalio/worker';
import type { Config } from '../../common/config';
import { resolveConfig } from '../../common/config-resolve';
import { startDevServer, type DevServer } from '../../runtime/dev-server';
import { silentLogger } from '../../runtime/log';
import { dataConverterFor } from '../../runtime/payload-codec';
import { findFreePort } from '../../runtime/ports';
import { REPO_ROOT } from '../../runtime/temporal';
import { createKleaWorker, type KleaWorker } from '../../worker/worker';
import { FakeModel } from './fake-model';
import { untilPolling } from './until';
import { WORKER_HEARTBEAT_MS } from '../../common/home';

/** The Temporal server a stack runs on: the dev server it started, or one the caller started (a cluster). */
export type StackServer = Pick<DevServer, 'address' | 'stop'>;

export interface Stack {
  server: StackServer;
  /**
   * The dev server's own Prometheus metrics (e.g. `service_requests{operation="QueryWorkflow"}`); null on a server
   * the caller started.
   */
  serverMetricsUrl: string | null;
  client: Client;
  fake: FakeModel;
  config: Config;
  worker: KleaWorker;
  running: Promise<void>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

export async function startStack(opts: {
  taskQueue: string;
  projectDir?: string;
  /** `temporal.payload_key`: the client and the worker then encrypt payloads (the API fuzzer sets one). */
  payloadKey?: string;
  /** A Temporal server already running (a cluster): used instead of a dev server, and stopped by `close()`. */
  server?: StackServer;
  /** `worker.host_id`: the worker is a cluster host, polling `klea-host-<id>` too (common/home.ts). */
  hostId?: string;
}): Promise<Stack> {
  const { taskQueue } = opts;
  // Quiet, except for what says something is wrong (a failing workflow task must never pass unnoticed).
  const loud = (level: string, message: string, meta?: Record<string, unknown>) =>
    process.stderr.write(`stack ${level}: ${message} ${meta ? JSON.stringify(meta).slice(0, 2000) : ''}\n`);
  // Once per process: a second stack (a benchmark's cluster beside its dev server) shares the first one's runtime.
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    Runtime.install({
      workerHeartbeatInterval: WORKER_HEARTBEAT_MS,
      logger: {
        log: (level, message, meta) => (level === 'WARN' || level === 'ERROR' ? loud(level, message, meta) : undefined),
        trace() {},
        debug() {},
        info() {},
        warn: (m, meta) => loud('WARN', m, meta),
        error: (m, meta) => loud('ERROR', m, meta),
      },
    });
  }
  // The server's own account of a workflow task it failed (a command it refused) is logged at info level only.
  let serverLines = '';
  const metricsPort = opts.server ? null : await findFreePort();
  const server =
    opts.server ??
    (await startDevServer({
      port: await findFreePort(),
      httpPort: await findFreePort(),
      metricsPort: metricsPort!,
      logLevel: 'info',
      onOutput: (chunk) => {
        serverLines += chunk;
        const lines = serverLines.split('\n');
        serverLines = lines.pop() ?? '';
        for (const line of lines)
          if (/Failing the workflow task|"level":"(warn|error)"|\b(WARN|ERROR)\b/i.test(line))
            process.stderr.write(`temporal: ${line.slice(0, 2000)}\n`);
      },
    }));
  const fake = await FakeModel.start();
  const config = resolveConfig(
    {
      model: { name: 'fake', base_url: fake.url, api_key: 'k' },
      temporal: {
        address: server.address,
        task_queue: taskQueue,
        ...(opts.payloadKey ? { payload_key: opts.payloadKey } : {}),
      },
      ...(opts.projectDir ? { project: { dir: opts.projectDir } } : {}),
      ...(opts.hostId ? { worker: { host_id: opts.hostId } } : {}),
    },
    {}
  );
  const native = await NativeConnection.connect({ address: server.address });
  const { connection, close: closeConnection } = await connectClient(server.address);
  const client = new Client({ connection, dataConverter: dataConverterFor(config) });
  const worker = await createKleaWorker({
    connection: native,
    namespace: 'default',
    taskQueue,
    workflowBundle: { codePath: path.join(REPO_ROOT, 'dist', 'workflow-bundle.js') },
    config,
    log: silentLogger,
  });
  const running = worker.run();
  // The API answers 503 no_worker until a worker polls, so callers get a stack that is ready.
  await untilPolling(client, config.temporal.namespace, taskQueue, 60_000);
  return {
    server,
    serverMetricsUrl: metricsPort === null ? null : `http://127.0.0.1:${metricsPort}/metrics`,
    client,
    fake,
    config,
    worker,
    running,
    async close() {
      worker.worker.shutdown();
      await running;
      await native.close();
      await closeConnection();
      await fake.close();
      await server.stop();
    },
  };
}
