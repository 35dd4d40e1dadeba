/** The worker process: configuration, Temporal runtime and connection, search attributes, then run until stopped. */
import { existsSync } from 'node:fs';
import { NativeConnection, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { Connection } from '@temporalio/client';
import { loadConfigOrExit } from '../runtime/config';
import { createLogger } from '../runtime/log';
import { freeLoopbackPort, parseHostPort } from '../runtime/metrics';
import { startTracing } from '../runtime/tracing';
import { ensureSearchAttributes, temporalConnectionOptions } from '../runtime/temporal';
import { exitWithParent } from '../runtime/supervised';
import { isModelConfigured } from '../common/config';
import { WORKFLOW_BUNDLE_PATH } from './bundle';
import { createKleaWorker, sdkPrometheusOptions, type KleaWorkerOptions } from './worker';
import { WORKER_HEARTBEAT_MS } from '../common/home';

/** Runs a worker process until SIGTERM/SIGINT; `extra` adds interceptors (tests use one to pause activities). */
export async function runWorkerProcess(extra: Pick<KleaWorkerOptions, 'interceptors'> = {}): Promise<void> {
  const log = createLogger('worker');
  // `--host-id <id>` (npm run worker -- --host-id h1): the same as KLEA_HOST_ID, and seen in the process list.
  const hostFlag = process.argv.indexOf('--host-id');
  if (hostFlag >= 0 && process.argv[hostFlag + 1]) process.env.KLEA_HOST_ID = process.argv[hostFlag + 1];
  const { config, file } = loadConfigOrExit('worker');
  if (!existsSync(WORKFLOW_BUNDLE_PATH)) {
    log.error(`the workflow bundle ${WORKFLOW_BUNDLE_PATH} is missing: run "npm run build" first`);
    process.exit(1);
  }
  const metricsAt = config.worker.metrics_address;
  if (metricsAt) parseHostPort(metricsAt, 'worker.metrics_address');
  // The Core runtime's Prometheus exporter listens on a loopback port of its own; the worker's metrics server
  // (worker.metrics_address) serves its text after Klea's.
  const sdkMetricsAt = metricsAt ? `127.0.0.1:${await freeLoopbackPort()}` : undefined;
  Runtime.install({
    // A killed worker is seen gone by its missing heartbeats (GET /healthz, the hosts a session may start on).
    workerHeartbeatInterval: WORKER_HEARTBEAT_MS,
    logger: {
      log: (level, message, meta) => {
        if (level === 'ERROR') log.error(message, meta);
        // A host's own task queue carries activities only: that it polls no workflows there is as it should be.
        else if (level === 'WARN' && !message.startsWith('No workflows registered')) log.warn(message, meta);
      },
      trace() {},
      debug() {},
      info() {},
      warn: (m, meta) => log.warn(m, meta),
      error: (m, meta) => log.error(m, meta),
    },
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      // The SDK's own worker metrics (polls, task latencies, slots), named the Prometheus way (`_total`,
      // `_seconds`). Must be set before any connection or worker exists.
      ...(sdkMetricsAt ? { metrics: { prometheus: sdkPrometheusOptions(sdkMetricsAt) } } : {}),
    },
  });
  const tracing = startTracing('klea-worker', { log });

  const { address, namespace, task_queue: taskQueue } = config.temporal;
  const options = temporalConnectionOptions(config);
  const connection = await NativeConnection.connect(options);
  try {
    const client = await Connection.connect(options);
    const added = await ensureSearchAttributes(client, namespace);
    if (added.length) log.info('registered search attributes', { added: added.join(',') });
    await client.close();
  } catch (err) {
    log.warn('could not check search attributes (filtering in the Temporal UI may not work)', { error: String(err) });
  }

  const worker = await createKleaWorker({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH },
    config,
    log: createLogger('activity'),
    tracing,
    ...(sdkMetricsAt ? { sdkMetricsUrl: `http://${sdkMetricsAt}/metrics` } : {}),
    ...extra,
  });
  log.info('worker polling', {
    address,
    namespace,
    taskQueue,
    ...(config.worker.host_id
      ? { host: config.worker.host_id, hostTaskQueue: `klea-host-${config.worker.host_id}` }
      : {}),
    config: file ?? 'defaults',
    model: isModelConfigured(config) ? config.model.name : 'NOT CONFIGURED (set OPENAI_API_KEY / OPENAI_BASE_URL)',
    payloads: config.temporal.payload_key ? 'encrypted' : 'plain',
  });
  exitWithParent(() => process.kill(process.pid, 'SIGTERM'));
  // Worker.run() installs SIGINT/SIGTERM handlers that drain in-flight work before resolving.
  await worker.run();
  await connection.close();
  await tracing?.shutdown();
  log.info('worker stopped');
}

/** The one way a worker process ends on a start-up error: a single line on stderr and exit code 1. */
export function exitOnError(err: unknown): never {
  process.stderr.write(`worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
