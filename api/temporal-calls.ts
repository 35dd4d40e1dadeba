/**
 * Every Temporal call the API makes goes through here. Each call has a deadline: without one the client retries an
 * unreachable server for about 20 s and waits for an update that no worker takes for ever. What a failed call
 * becomes for the API's client (404, 409, 503 ...) is decided in one place, `toApiError` (temporal-errors.ts).
 */
import { hostOfIdentity, hostRootsOfIdentity, hostTaskQueue } from '../common/home';
import { randomUUID } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowUpdateStage,
  type Client,
  type QueryDefinition,
  type SignalDefinition,
  type UpdateDefinition,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { TypedSearchAttributes } from '@temporalio/common';
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import { temporal } from '@temporalio/proto';
import type * as workflows from '../workflows';
import { badRequest, unavailable } from './errors';
import {
  endedConflict,
  GRPC,
  grpcCode,
  isClosed,
  toApiError,
  UPDATE_ATTEMPTS,
  updateNotApplied,
  type Call,
  type Target,
} from './temporal-errors';

export type { Target } from './temporal-errors';

/**
 * The workflow entry points by the name they are registered under. A type-only import: the compiler checks a
 * workflow's name and input, and no workflow code is loaded into the API process (importing the functions, as
 * `client.workflow.start(taskWorkflow)` needs, would run the workflow modules and their activity proxies here).
 */
type Workflows = typeof workflows;
export type WorkflowName = keyof Workflows;

export interface TemporalCallsOptions {
  namespace: string;
  taskQueue: string;
  address: string;
  /** Deadline of one call (query, signal, describe, start). */
  callTimeoutMs?: number;
  /** How long an update may wait for a worker to accept it. */
  acceptTimeoutMs?: number;
}

export const DEFAULT_CALL_TIMEOUT_MS = 5_000;
export const DEFAULT_ACCEPT_TIMEOUT_MS = 10_000;
/** A poller seen within this window counts as a live worker (an idle worker renews its long poll every minute). */
const POLLER_FRESH_MS = 90_000;

/** Pause between sends of an update whose workflow task failed (see `updateNotApplied`). */
const UPDATE_RETRY_DELAY_MS = 100;
/**
 * How long a worker seen polling is taken to be there without asking again. Temporal itself lists a worker that
 * stopped for about a minute (POLLER_FRESH_MS), so this adds nothing to what `requireWorker` can miss, and it saves
 * a round trip on every message sent within it.
 */
const PRESENCE_KEPT_MS = 2_000;

/** What a call that found the workflow's run closed does instead of failing: given the run's description. */
export type WhenEnded<T> = (desc: WorkflowExecutionDescription) => Promise<T>;

/** How to start a workflow that an update or signal wakes (update-with-start, signal-with-start). */
export interface WakeStart {
  workflowType: WorkflowName;
  options: WorkflowStartOptions<Workflows[WorkflowName]>;
}

/** One run as Temporal's visibility lists it. */
export interface ListedRun {
  workflowId: string;
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, TIMED_OUT, … */
  execution: string;
  startTime: Date | null;
  closeTime: Date | null;
  attributes: TypedSearchAttributes;
  /** The run's static summary (null when it has none or it could not be read). */
  summary: string | null;
}

/** Summaries never change: kept per run, up to this many. */
const SUMMARY_CACHE_SIZE = 5000;

const tsToDate = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): Date | null =>
  t ? new Date(Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)) : null;

export class TemporalCalls {
  readonly taskQueue: string;
  readonly callTimeoutMs: number;
  readonly acceptTimeoutMs: number;
  private readonly namespace: string;
  private readonly address: string;

  constructor(
    readonly client: Client,
    opts: TemporalCallsOptions
  ) {
    this.namespace = opts.namespace;
    this.taskQueue = opts.taskQueue;
    this.address = opts.address;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.acceptTimeoutMs = opts.acceptTimeoutMs ?? DEFAULT_ACCEPT_TIMEOUT_MS;
  }

  /** The workflow's latest run (so calls follow a task that continued as new), unless the target names a run. */
  private handle(target: Target): WorkflowHandle {
    return this.client.workflow.getHandle(target.workflowId, target.runId);
  }

  private within<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    return this.client.withDeadline(Date.now() + ms, fn);
  }

  private async run<T>(target: Target | undefined, call: Call, fn: () => Promise<T>, ms = this.callTimeoutMs) {
    try {
      return await this.within(ms, fn);
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  query<Ret, Args extends unknown[]>(target: Target, def: QueryDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
    return this.run(target, { kind: 'query', name: def.name }, () => this.handle(target).query(def, ...args));
  }

  /** Signals need no worker: Temporal keeps them until one runs the workflow. */
  signal<Args extends unknown[]>(target: Target, def: SignalDefinition<Args>, ...args: Args): Promise<void> {
    return this.run(target, { kind: 'signal', name: def.name }, () => this.handle(target).signal(def, ...args));
  }

  /** A signal, or, when the workflow's latest run has closed, what `whenEnded` does with its description. */
  async signalUnlessEnded<Arg>(target: Target, def: SignalDefinition<[Arg]>, arg: Arg, whenEnded: WhenEnded<void>) {
    try {
      return await this.within(this.callTimeoutMs, () => this.handle(target).signal(def, arg));
    } catch (err) {
      if (isClosed(err)) return whenEnded(await this.describe(target));
      throw await this.toApiError(err, target, { kind: 'signal', name: def.name });
    }
  }

  describe(target: Target): Promise<WorkflowExecutionDescription> {
    return this.run(target, { kind: 'describe' }, () => this.handle(target).describe());
  }

  async start<N extends WorkflowName>(
    target: Target,
    workflowType: N,
    options: WorkflowStartOptions<Workflows[N]>
  ): Promise<void> {
    await this.run(target, { kind: 'start', name: workflowType }, () =>
      this.client.workflow.start<Workflows[N]>(workflowType, options)
    );
  }

  /** Starts a workflow and waits for its result (a rewind), for at most `ms`; the workflow goes on regardless. */
  async execute<N extends WorkflowName>(
    target: Target,
    workflowType: N,
    options: WorkflowStartOptions<Workflows[N]>,
    ms: number
  ): Promise<Awaited<ReturnType<Workflows[N]>>> {
    return (await this.run(
      target,
      { kind: 'start', name: workflowType },
      () => this.client.workflow.execute<Workflows[N]>(workflowType, options),
      ms
    )) as Awaited<ReturnType<Workflows[N]>>;
  }

  private readonly summaries = new Map<string, string | null>();

  /**
   * A page of runs from Temporal's visibility matching `query` (newest first), with each run's static summary.
   * The page token is Temporal's own; one it does not accept is a 400 naming the cursor.
   */
  async list(
    query: string,
    pageSize: number,
    pageToken?: Uint8Array,
    opts: { summaries?: boolean } = {}
  ): Promise<{ runs: ListedRun[]; next: Uint8Array | null }> {
    const res = await this.run(undefined, { kind: 'list' }, async () => {
      try {
        return await this.client.workflowService.listWorkflowExecutions({
          namespace: this.namespace,
          pageSize,
          query,
          ...(pageToken ? { nextPageToken: pageToken } : {}),
        });
      } catch (err) {
        if (grpcCode(err) === GRPC.INVALID_ARGUMENT)
          throw badRequest(
            pageToken
              ? 'query.cursor: Temporal does not accept this cursor; pass the nextCursor of a previous page'
              : `the listing was refused: ${(err as Error).message}`,
            [{ path: 'query.cursor', message: 'not a cursor from a previous page' }]
          );
        throw err;
      }
    });
    const runs = await Promise.all(
      (res.executions ?? []).map(async (e): Promise<ListedRun> => {
        const workflowId = e.execution?.workflowId ?? '';
        const runId = e.execution?.runId ?? '';
        const status = temporal.api.enums.v1.WorkflowExecutionStatus[e.status ?? 0] ?? 'UNKNOWN';
        return {
          workflowId,
          runId,
          execution: String(status).replace(/^WORKFLOW_EXECUTION_STATUS_/, ''),
          startTime: tsToDate(e.startTime),
          closeTime: tsToDate(e.closeTime),
          attributes: decodeTypedSearchAttributes(e.searchAttributes?.indexedFields),
          summary: opts.summaries === false ? null : await this.summaryOf(workflowId, runId),
        };
      })
    );
    const next = res.nextPageToken?.length ? res.nextPageToken : null;
    return { runs, next };
  }

  /** The runs with their static summaries, for runs listed without them. */
  withSummaries(runs: ListedRun[]): Promise<ListedRun[]> {
    return Promise.all(runs.map(async (r) => ({ ...r, summary: await this.summaryOf(r.workflowId, r.runId) })));
  }

  /** A run's static summary (from describe, once per run); null when it has none or it cannot be read now. */
  private async summaryOf(workflowId: string, runId: string): Promise<string | null> {
    const key = `${workflowId}/${runId}`;
    if (this.summaries.has(key)) return this.summaries.get(key)!;
    try {
      const desc = await this.within(this.callTimeoutMs, () =>
        this.client.workflow.getHandle(workflowId, runId).describe()
      );
      const summary = (await desc.staticSummary()) ?? null;
      if (this.summaries.size >= SUMMARY_CACHE_SIZE) this.summaries.delete(this.summaries.keys().next().value!);
      this.summaries.set(key, summary);
      return summary;
    } catch {
      return null;
    }
  }

  /** Whether `runId` is the latest run of `workflowId` (true when that cannot be told now: it is listed). */
  async isLatestRun(workflowId: string, runId: string): Promise<boolean> {
    try {
      const desc = await this.within(this.callTimeoutMs, () => this.client.workflow.getHandle(workflowId).describe());
      return desc.runId === runId;
    } catch {
      return true;
    }
  }

  /** What a closed run returned (a session that went to sleep: everything it carries). */
  result(target: Target, runId: string): Promise<unknown> {
    return this.run(target, { kind: 'describe' }, () =>
      this.client.workflow.getHandle(target.workflowId, runId, { followRuns: false }).result()
    );
  }

  private retention: { ms: number | undefined; at: number } | null = null;

  /** How long the namespace keeps closed runs (ms), asked at most once a minute; undefined when it cannot be asked. */
  async retentionMs(): Promise<number | undefined> {
    if (this.retention && Date.now() - this.retention.at < 60_000) return this.retention.ms;
    try {
      const res = await this.within(this.callTimeoutMs, () =>
        this.client.workflowService.describeNamespace({ namespace: this.namespace })
      );
      const ttl = res.config?.workflowExecutionRetentionTtl;
      const ms = ttl ? Number(ttl.seconds ?? 0) * 1000 + Math.floor((ttl.nanos ?? 0) / 1e6) : undefined;
      this.retention = { ms, at: Date.now() };
      return ms;
    } catch {
      return undefined;
    }
  }

  /**
   * An update that starts the workflow first when no run of it is open (update-with-start, one round trip): the
   * run `start` describes is started unless one is running, in which case that one takes the update. Two callers
   * doing this at once get one run, which takes both updates.
   */
  async updateWithStart<Ret, Arg>(
    target: Target,
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    opts: { noun: string; workerChecked?: boolean },
    start: WakeStart
  ): Promise<Ret> {
    if (!opts.workerChecked) await this.requireWorker(opts.noun);
    const call: Call = { kind: 'update', name: def.name, noun: opts.noun };
    try {
      return await this.within(this.acceptTimeoutMs, async () => {
        const startWorkflowOperation = new WithStartWorkflowOperation<Workflows[WorkflowName]>(start.workflowType, {
          ...(start.options as WorkflowStartOptions<Workflows[WorkflowName]>),
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        });
        const accepted = await this.client.workflow.startUpdateWithStart(def, {
          args: [arg],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
          startWorkflowOperation,
        });
        return accepted;
      }).then((accepted) => accepted.result());
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  /** A signal that starts the workflow first when no run of it is open (signal-with-start). */
  async signalWithStart<Arg>(target: Target, def: SignalDefinition<[Arg]>, arg: Arg, start: WakeStart): Promise<void> {
    await this.run(target, { kind: 'signal', name: def.name }, () =>
      this.client.workflow.signalWithStart<Workflows[WorkflowName], [Arg]>(start.workflowType, {
        ...(start.options as unknown as WorkflowStartOptions<Workflows[WorkflowName]>),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        signal: def,
        signalArgs: [arg],
      })
    );
  }

  async terminate(target: Target, reason: string): Promise<void> {
    await this.run(target, { kind: 'terminate' }, () => this.handle(target).terminate(reason));
  }

  /**
   * An update that a worker must accept before it counts. Nothing is sent when no worker polls (a message
   * sent then would wait in Temporal and be acted on whenever a worker starts, long after the caller gave up),
   * and acceptance is bounded, so a worker that stopped moments ago (it still looks fresh) cannot hang the call.
   */
  async update<Ret, Arg>(
    target: Target,
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    opts: {
      noun: string;
      workerChecked?: boolean;
      /** When the workflow's latest run has closed: what to do instead (given its description) than answer 409. */
      whenEnded?: WhenEnded<Ret>;
    }
  ): Promise<Ret> {
    if (!opts.workerChecked) await this.requireWorker(opts.noun, target);
    const call: Call = { kind: 'update', name: def.name, noun: opts.noun };
    const updateId = randomUUID();
    const send = () =>
      this.within(this.acceptTimeoutMs, () =>
        this.handle(target).startUpdate(def, { args: [arg], updateId, waitForStage: WorkflowUpdateStage.ACCEPTED })
      );
    let accepted: Awaited<ReturnType<typeof send>>;
    for (let attempt = 1; ; attempt++) {
      try {
        accepted = await send();
        break;
      } catch (err) {
        if (attempt < UPDATE_ATTEMPTS && updateNotApplied(err)) {
          await new Promise((r) => setTimeout(r, UPDATE_RETRY_DELAY_MS * attempt));
          continue;
        }
        if (opts.whenEnded && isClosed(err)) return opts.whenEnded(await this.describe(target));
        throw await this.toApiError(err, target, call);
      }
    }
    try {
      return await accepted.result();
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  /** Workers that polled the task queue recently, and their identities. Throws Temporal's error when it cannot be asked. */
  async workerPresence(
    timeoutMs = this.callTimeoutMs
  ): Promise<{ pollers: number; identities: string[]; hosts: string[]; roots: Map<string, string[]> }> {
    const res = await this.within(timeoutMs, () =>
      this.client.workflowService.describeTaskQueue({
        namespace: this.namespace,
        taskQueue: { name: this.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
    );
    const now = Date.now();
    const fresh = (res.pollers ?? []).filter(
      (p) => now - (tsToDate(p.lastAccessTime)?.getTime() ?? 0) < POLLER_FRESH_MS
    );
    // Every host Temporal still lists (for some minutes after its worker stopped), so a gone host shows as gone.
    const hosts = [...new Set((res.pollers ?? []).map((p) => hostOfIdentity(p.identity)))].filter(
      (h): h is string => h !== null
    );
    // The project roots each host says it holds (the union over its workers; absent: it does not say).
    const roots = new Map<string, string[]>();
    for (const p of res.pollers ?? []) {
      const host = hostOfIdentity(p.identity);
      const said = hostRootsOfIdentity(p.identity);
      if (host && said) roots.set(host, [...new Set([...(roots.get(host) ?? []), ...said])]);
    }
    return { pollers: fresh.length, identities: fresh.map((p) => p.identity ?? ''), hosts: hosts.sort(), roots };
  }

  /** The workers polling a host's task queue (`klea-host-<id>`, activities) recently. */
  async hostPollers(hostId: string, timeoutMs = this.callTimeoutMs): Promise<{ pollers: number; known: boolean }> {
    const res = await this.within(timeoutMs, () =>
      this.client.workflowService.describeTaskQueue({
        namespace: this.namespace,
        taskQueue: { name: hostTaskQueue(hostId), kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      })
    );
    const now = Date.now();
    const all = res.pollers ?? [];
    const fresh = all.filter((p) => now - (tsToDate(p.lastAccessTime)?.getTime() ?? 0) < POLLER_FRESH_MS);
    return { pollers: fresh.length, known: all.length > 0 };
  }

  /**
   * The hosts seen on the task queue, each with whether a worker polls its own queue now; for choosing a session's
   * home, so Temporal's failure is the API's error (503 when it is unreachable).
   */
  async hostsPresent(
    timeoutMs = this.callTimeoutMs
  ): Promise<Array<{ hostId: string; taskQueue: string; pollers: number; roots: string[] | null }>> {
    try {
      const { hosts, roots } = await this.workerPresence(timeoutMs);
      return await Promise.all(
        hosts.map(async (hostId) => ({
          hostId,
          taskQueue: hostTaskQueue(hostId),
          pollers: (await this.hostPollers(hostId, timeoutMs)).pollers,
          roots: roots.get(hostId) ?? null,
        }))
      );
    } catch (err) {
      throw await this.toApiError(err, undefined, { kind: 'describeTaskQueue' });
    }
  }

  /** `hostPollers` with Temporal's failure as the API's error. */
  async hostKnown(hostId: string): Promise<boolean> {
    try {
      return (await this.hostPollers(hostId)).known;
    } catch (err) {
      throw await this.toApiError(err, undefined, { kind: 'describeTaskQueue' });
    }
  }

  /** When a worker was last seen polling (ms), by `requireWorker`. */
  private workerSeenAt = -Infinity;

  /** 503 `no_worker` unless a worker polls; for an existing workflow, 404 or 409 first when that is the truth. */
  async requireWorker(noun: string, target?: Target): Promise<void> {
    if (Date.now() - this.workerSeenAt < PRESENCE_KEPT_MS) return;
    let presence: { pollers: number };
    try {
      presence = await this.workerPresence();
    } catch (err) {
      throw await this.toApiError(err, target, { kind: 'describeTaskQueue' });
    }
    if (presence.pollers > 0) {
      this.workerSeenAt = Date.now();
      return;
    }
    if (target) {
      const desc = await this.describe(target);
      if (desc.status.name !== 'RUNNING') throw endedConflict(target, desc);
    }
    throw unavailable(
      'no_worker',
      `no worker is polling task queue "${this.taskQueue}", so the ${noun} was not sent; start a worker ` +
        '(make start, or npm run worker) and try again'
    );
  }

  /** A failed call as the API's error (temporal-errors.ts), asking Temporal what it needs to say why. */
  private toApiError(err: unknown, target: Target | undefined, call: Call): Promise<unknown> {
    return toApiError(err, target, call, {
      address: this.address,
      namespace: this.namespace,
      taskQueue: this.taskQueue,
      callTimeoutMs: this.callTimeoutMs,
      acceptTimeoutMs: this.acceptTimeoutMs,
      describe: (t) => this.within(this.callTimeoutMs, () => this.handle(t).describe()),
      workerPresence: () => this.workerPresence(),
      retentionMs: () => this.retentionMs(),
    });
  }
}
