/**
 * What integration tests use: a client to the shared dev server, a worker on a task queue unique to the test
 * file, and a Klea config pointing the model at a FakeModel.
 */
import { randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectClient } from './client-connection';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Tracing } from '../../runtime/tracing';
import { NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { Config } from '../../common/config';
import { resolveConfig } from '../../common/config-resolve';
import { silentLogger, type Logger } from '../../runtime/log';
import { dataConverterFor } from '../../runtime/payload-codec';
import { createKleaWorker } from '../../worker/worker';
import type { FakeModel } from './fake-model';
import { untilPolling } from './until';
import { WORKER_HEARTBEAT_MS } from '../../common/home';

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K];
};

let runtimeInstalled = false;
function quietRuntime() {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      workerHeartbeatInterval: WORKER_HEARTBEAT_MS,
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m, meta) => console.error(m, meta) },
    });
  } catch {
    /* already installed by another helper in this process */
  }
}

export function temporalAddress(): string {
  const address = process.env.KLEA_TEST_TEMPORAL_ADDRESS;
  if (!address)
    throw new Error(
      'KLEA_TEST_TEMPORAL_ADDRESS is not set: run integration tests through jest (global set-up starts the dev server)'
    );
  return address;
}

function merge<T>(base: T, over: DeepPartial<T> | undefined): T {
  if (!over) return base;
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(over)) {
    const cur = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' ? merge(cur, v as never) : v;
  }
  return out as T;
}

export function testConfig(opts: {
  fakeModel?: FakeModel;
  taskQueue: string;
  overrides?: DeepPartial<Config>;
}): Config {
  const base = resolveConfig(
    {
      model: opts.fakeModel
        ? { name: 'fake-model', base_url: opts.fakeModel.url, api_key: 'test-key', timeout_ms: 10_000 }
        : {},
      temporal: { address: temporalAddress(), task_queue: opts.taskQueue },
    },
    {}
  );
  // Tests make their projects in the system's temporary directory: a suite that names no project directory of its
  // own lets the worker serve any of them (a suite that does keeps the default, that directory alone).
  if (!opts.overrides?.project?.dir && !opts.overrides?.project?.allowed_roots)
    base.project.allowed_roots = [realpathSync(os.tmpdir()), path.resolve(base.project.dir)];
  return merge(base, opts.overrides);
}

export interface TestEnv {
  client: Client;
  taskQueue: string;
  config: Config;
  worker: Worker;
  /** Where the worker serves Klea's metrics (`worker.metrics_address`), when configured. */
  metricsAddress(): string | undefined;
  /** Stops the worker (waits for it to drain) and closes connections. */
  shutdown(): Promise<void>;
  /** Stops only the worker; `restartWorker` starts a new one on the same queue. */
  stopWorker(): Promise<void>;
  restartWorker(): Promise<void>;
}

export async function startTestEnv(
  opts: {
    fakeModel?: FakeModel;
    overrides?: DeepPartial<Config>;
    name?: string;
    taskQueue?: string;
    /** The worker's logger (silent unless a test reads what the worker logs). */
    log?: Logger;
    /** Traces: the worker exports through it and the client propagates context (as api/index.ts sets it up). */
    tracing?: Tracing;
    /** The Core runtime's Prometheus exporter, when the test installed the runtime with one (worker/run.ts does). */
    sdkMetricsUrl?: string;
  } = {}
): Promise<TestEnv> {
  quietRuntime();
  const taskQueue = opts.taskQueue ?? `test-${opts.name ?? 'klea'}-${randomUUID().slice(0, 8)}`;
  const config = testConfig({ fakeModel: opts.fakeModel, taskQueue, overrides: opts.overrides });
  const bundlePath = process.env.KLEA_TEST_WORKFLOW_BUNDLE;
  if (!bundlePath) throw new Error('KLEA_TEST_WORKFLOW_BUNDLE is not set (global set-up builds it)');

  const nativeConnection = await NativeConnection.connect({ address: config.temporal.address });
  const { connection, close: closeConnection } = await connectClient(config.temporal.address);
  // With a payload key the test's client encrypts and decrypts as the API's does.
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverterFor(config),
    ...(opts.tracing ? { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } } : {}),
  });

  const makeWorker = () =>
    createKleaWorker({
      connection: nativeConnection,
      namespace: config.temporal.namespace,
      taskQueue,
      workflowBundle: { codePath: bundlePath },
      config,
      log: opts.log ?? silentLogger,
      tracing: opts.tracing,
      sdkMetricsUrl: opts.sdkMetricsUrl,
    });

  let worker = await makeWorker();
  let running = worker.run();
  await untilPolling(client, config.temporal.namespace, taskQueue);

  const env: TestEnv = {
    client,
    taskQueue,
    config,
    get worker() {
      return worker.worker;
    },
    metricsAddress: () => worker.metricsAddress,
    async stopWorker() {
      if (worker.worker.getState() === 'RUNNING') worker.worker.shutdown();
      await running;
    },
    async restartWorker() {
      await env.stopWorker();
      worker = await makeWorker();
      running = worker.run();
    },
    async shutdown() {
      await env.stopWorker();
      await nativeConnection.close();
      await closeConnection();
    },
  };
  return env;
}

export const uniqueId = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  meta?: Record<string, unknown>;
}

/** A logger that keeps every line, for tests that assert what an operator would read in the worker's log. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (msg: string, meta?: Record<string, unknown>) => {
    lines.push({ level, msg, meta });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
