/** Builds a Klea worker: the prebuilt workflow bundle plus the activities made by createActivities(deps). */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { activityContext } from '../activities/activity-context';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import { McpPool } from '../activities/mcp/pool';
import type { Config } from '../common/config';
import { groupTaskQueue, hostIdentityTag, hostTaskQueue } from '../common/home';
import { ProjectLeases } from '../activities/project/lease';
import { workspaceKey } from '../activities/mcp/servers';
import { allowedRoots } from '../runtime/project-roots';
import { workerIdentity } from '../common/sandbox-status';
import type { Logger } from '../runtime/log';
import { dataConverterFor } from '../runtime/payload-codec';
import { sandboxReport } from '../runtime/sandbox-probe';
import { scrapeText, serveMetrics, workerMetrics, type MetricsServer } from '../runtime/metrics';
import type { Tracing } from '../runtime/tracing';
import { activityInterceptors, workerSinks } from './telemetry';

export interface KleaWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** Either a prebuilt bundle (production) or code built in-process (tests). */
  workflowBundle: NonNullable<WorkerOptions['workflowBundle']>;
  config: Config;
  log: Logger;
  identity?: string;
  /** Workflow and activity interceptors (tests pause activities at a chosen boundary with one). */
  interceptors?: WorkerOptions['interceptors'];
  /** Export spans through this (runtime/tracing.ts); none: workflow spans are discarded, activities make none. */
  tracing?: Tracing;
  /** The Core runtime's Prometheus exporter (sdkPrometheusOptions), served after Klea's own metrics. */
  sdkMetricsUrl?: string;
}

/** The Core runtime's Prometheus exporter, with names as Prometheus has them (`_total`, `_seconds`). */
export function sdkPrometheusOptions(bindAddress: string) {
  return { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true };
}

export interface KleaWorker {
  worker: Worker;
  /** On a worker host (worker.host_id): the worker of its own task queue `klea-host-<id>`, activities only. */
  hostWorker?: Worker;
  /** On a host of a group (worker.group_id): the worker of the group's task queue `klea-group-<id>`. */
  groupWorker?: Worker;
  /** On a host of a group: its leases on the group's projects. */
  leases?: ProjectLeases;
  pool: McpPool;
  /** Where Klea's Prometheus metrics are served (`worker.metrics_address`), when they are. */
  metricsAddress?: string;
  /** Runs until shutdown (SIGTERM/SIGINT or worker.shutdown()), then stops every MCP server it started. */
  run(): Promise<void>;
}

/** Activities of one workflow task that start on this worker at once, without a trip through the task queue. */
export const EAGER_ACTIVITIES_PER_WORKFLOW_TASK = 16;

/** How often every running activity tells Temporal it is alive (its heartbeat timeout is a few times this). */
export const HEARTBEAT_EVERY_MS = 3000;

/**
 * Every activity heartbeats while it runs, so an activity on a worker that died is retried elsewhere after its
 * heartbeat timeout instead of its (long) start-to-close timeout, and cancellation reaches it (a tool call passes
 * it on to its MCP server). The only periodic heartbeat: activities add none of their own.
 */
function withHeartbeats<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      const ctx = activityContext();
      if (!ctx) return fn(...args);
      const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        return await fn(...args);
      } finally {
        clearInterval(timer);
      }
    };
  }
  return wrapped as T;
}

/** The longest identity a worker gives itself: Temporal's limit.maxIDLength as the compose file sets it, less room. */
const MAX_IDENTITY = 250;

/** The project roots this worker holds, as real paths where they exist (what a host says it holds). */
function projectRoots(config: Config): string[] {
  return allowedRoots(config).map((r) => {
    try {
      return realpathSync(r);
    } catch {
      return path.resolve(r);
    }
  });
}

export async function createKleaWorker(opts: KleaWorkerOptions): Promise<KleaWorker> {
  const pool = new McpPool(opts.log);
  // The identity says where this worker runs commands, so /healthz can tell without running one.
  const sandbox = await sandboxReport(opts.config.tools.sandbox);
  if (sandbox.problem) opts.log.warn(`run_command is unavailable on this worker: ${sandbox.problem}`);
  // On a cluster the identity names the worker host too (` host=<id>`), so the API finds the hosts that poll.
  const hostId = opts.config.worker.host_id;
  const groupId = opts.config.worker.group_id;
  const identityWith = (roots: readonly string[] | null) =>
    workerIdentity(
      `${process.pid}@${os.hostname()}${hostId ? hostIdentityTag(hostId, roots, groupId) : ''}`,
      sandbox.status,
      sandbox.reason
    );
  // Temporal refuses an identity longer than its limit.maxIDLength (255 in deploy/temporal-dynamicconfig.yaml): a
  // host whose roots do not fit says only its id (the API then takes it to hold any project).
  const withRoots = identityWith(hostId ? projectRoots(opts.config) : null);
  const identity = opts.identity ?? (withRoots.length <= MAX_IDENTITY ? withRoots : identityWith(null));
  // The payload codec runs here, outside the workflow sandbox: workflows and activities see plaintext, history
  // holds ciphertext. A payload this worker has no key for fails its workflow task, naming the key id.
  const dataConverter = dataConverterFor(opts.config);
  const interceptors: NonNullable<WorkerOptions['interceptors']> = {
    ...opts.interceptors,
    activity: [...activityInterceptors(opts.tracing), ...(opts.interceptors?.activity ?? [])],
  };
  // Off unless configured: no address, no listener.
  const metricsAt = opts.config.worker.metrics_address;
  const metrics: MetricsServer | undefined = metricsAt
    ? await serveMetrics(
        workerMetrics().registry,
        metricsAt,
        'worker.metrics_address',
        opts.sdkMetricsUrl ? () => scrapeText(opts.sdkMetricsUrl!) : undefined
      )
    : undefined;
  if (metrics) opts.log.info('serving metrics', { address: `http://${metrics.address}/metrics` });
  const leases = groupLeases(opts, pool);
  const activities = withHeartbeats(createActivities({ config: opts.config, log: opts.log, pool, leases }));
  const worker = await Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: opts.workflowBundle,
    activities,
    identity,
    interceptors,
    sinks: workerSinks(opts.tracing),
    ...(dataConverter ? { dataConverter } : {}),
    // Graceful shutdown gives in-flight activities a moment to finish before they are cancelled.
    shutdownGraceTime: '10s',
    ...(opts.config.worker.max_cached_workflows !== null
      ? { maxCachedWorkflows: opts.config.worker.max_cached_workflows }
      : {}),
    maxConcurrentActivityTaskExecutions: opts.config.worker.max_concurrent_activities,
    // A batch schedules its tool calls in one workflow task: the server hands up to this many straight back to
    // this worker (while it has free slots) instead of through the task queue, so they start together. The SDK's
    // default is 3, and the other calls of a batch of 8 started one by one after them.
    maxEagerActivityReservationsPerWorkflowTask: EAGER_ACTIVITIES_PER_WORKFLOW_TASK,
    stickyQueueScheduleToStartTimeout: opts.config.worker.sticky_queue_timeout_ms,
  }).catch(async (err: unknown) => {
    await metrics?.close();
    throw err;
  });
  // A worker host also polls its own task queue, `klea-host-<id>`: the activities of the projects it holds
  // (common/home.ts). Same activities, same MCP servers: one workspace server per project on this host.
  // A host of a group polls the group's task queue too, `klea-group-<id>`: its projects' activities that any host
  // of the group may run (those that change a project run where its lease is held).
  const activityWorker = (taskQueue: string) =>
    Worker.create({
      connection: opts.connection,
      namespace: opts.namespace,
      taskQueue,
      activities,
      identity,
      interceptors: { activity: interceptors.activity },
      ...(dataConverter ? { dataConverter } : {}),
      shutdownGraceTime: '10s',
      maxConcurrentActivityTaskExecutions: opts.config.worker.max_concurrent_activities,
    }).catch(async (err: unknown) => {
      await metrics?.close();
      throw err;
    });
  const hostWorker = hostId ? await activityWorker(hostTaskQueue(hostId)) : undefined;
  const groupWorker = hostId && groupId ? await activityWorker(groupTaskQueue(groupId)) : undefined;
  const all = [worker, hostWorker, groupWorker].filter((w): w is Worker => w !== undefined);
  return {
    worker,
    hostWorker,
    groupWorker,
    leases,
    pool,
    metricsAddress: metrics?.address,
    async run() {
      leases?.start();
      try {
        // One stopping (a signal, or shutdown()) stops the others: a host half polling is never left. All of them
        // have stopped (their activities ended) before anything below runs.
        const ran = await Promise.allSettled(
          all.map((w) =>
            w.run().finally(() => {
              for (const other of all) if (other !== w && other.getState() === 'RUNNING') other.shutdown();
            })
          )
        );
        const failed = ran.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      } finally {
        // The MCP servers (and the commands they run) stop first; only then are the leases given up, so another
        // host of the group takes the projects at once and never beside a command of this one.
        await pool.shutdown();
        await leases?.stop();
        await metrics?.close();
      }
    },
  };
}

/**
 * A host of a group's leases (activities/project/lease.ts): renewed while it reaches Temporal; a project lost, or
 * taken (from another host, or back), has its workspace server stopped, with the commands it runs, so the next call
 * starts one that reads the project's state afresh from the shared volume.
 */
function groupLeases(opts: KleaWorkerOptions, pool: McpPool): ProjectLeases | undefined {
  const { host_id: hostId, group_id: groupId, group_dir: groupDir, group_lease_ms: leaseMs } = opts.config.worker;
  if (!hostId || !groupId || !groupDir) return undefined;
  const stopServer = (projectDir: string) => pool.stop({ key: workspaceKey(projectDir) });
  return new ProjectLeases({
    groupDir: path.resolve(groupDir),
    hostId,
    leaseMs,
    connected: async () => {
      await opts.connection.withDeadline(Date.now() + leaseMs / 4, () =>
        opts.connection.workflowService.getSystemInfo({})
      );
      return true;
    },
    onLost: async (projectDir) => {
      opts.log.warn('a group project is no longer held here: its workspace server is stopped', { projectDir });
      await stopServer(projectDir);
    },
    onTaken: async (projectDir, from) => {
      opts.log.info('took a group project', { projectDir, from: from?.hostId ?? null });
      await stopServer(projectDir);
    },
    warn: (message, fields) => opts.log.warn(message, fields),
  });
}
