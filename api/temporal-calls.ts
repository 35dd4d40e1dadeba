/**
 * Every Temporal call the API makes goes through here, and `toApiError` is the one place where Temporal's
 * failures become the API's errors:
 *
 * - no such workflow → 404; a workflow that does not answer the query or update → 404 (it is not what the
 *   route addresses, e.g. a session id on a task route);
 * - a workflow that has ended → 409 naming its final status; an update its validator refused → 409;
 * - Temporal unreachable or not answering within the deadline → 503 `temporal_unavailable`;
 * - no worker to answer a query or take an update → 503 `no_worker`;
 * - an answer encrypted with a key the API does not have → 500 `payload_key` naming the key id (the API's and
 *   the workers' KLEA_PAYLOAD_KEY differ: nothing a client can fix).
 *
 * Each call has a deadline: without one the client retries an unreachable server for about 20 s and waits for
 * an update that no worker takes for ever.
 */
import { randomUUID } from 'node:crypto';
import {
  QueryNotRegisteredError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
  isGrpcServiceError,
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
import { PayloadKeyError } from '../runtime/payload-codec';
import { KleaStatus } from '../common/search-attributes';
import type * as workflows from '../workflows';
import { ApiError, badRequest, conflict, modelError, notFound, unavailable } from './errors';

/**
 * The workflow entry points by the name they are registered under. A type-only import: the compiler checks a
 * workflow's name and input, and no workflow code is loaded into the API process (importing the functions, as
 * `client.workflow.start(taskWorkflow)` needs, would run the workflow modules and their activity proxies here).
 */
type Workflows = typeof workflows;
export type WorkflowName = keyof Workflows;

/** A workflow as a route addresses it: `what` names it for people (`task "task-s-1-1"`). */
export interface Target {
  what: string;
  workflowId: string;
}

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

/** gRPC status codes (the client does not re-export grpc-js's enum). */
const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNAVAILABLE: 14,
} as const;

/** How often an update is sent when the workflow task that carried it failed (see `updateNotApplied`). */
const UPDATE_ATTEMPTS = 4;
const UPDATE_RETRY_DELAY_MS = 100;

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

interface Call {
  kind: 'query' | 'update' | 'signal' | 'describe' | 'start' | 'terminate' | 'describeTaskQueue' | 'list';
  name?: string;
  /** What an update carries, for messages: "message", "task", "decision". */
  noun?: string;
}

/** The gRPC status code of an error or of any error it wraps. */
/** The PayloadKeyError behind a failure, however deeply the client wrapped it. */
function payloadKeyError(err: unknown): PayloadKeyError | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof PayloadKeyError) return e;
  return null;
}

function grpcCode(err: unknown): number | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return e.code;
  }
  return undefined;
}

/**
 * The workflow task that carried an update failed on the server, so the update was not applied and nothing from
 * that task was kept. It happens when the workflow closes in the very task that also received the update (a
 * `cancel` signal, then at once a decision, while an activity finishes): the server refuses to close a workflow
 * while new events wait (UnhandledCommand) and drops the updates sent with that task. Sending the update again,
 * with the same id, is safe: it reaches the workflow as it now is (usually ended, so the caller hears 409).
 */
function updateNotApplied(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && e.code === GRPC.FAILED_PRECONDITION && /workflow task failure/i.test(e.details))
      return true;
  }
  return false;
}

function isClosed(err: unknown): boolean {
  const text = `${(err as Error)?.message ?? ''} ${String((err as { cause?: { message?: string } })?.cause?.message ?? '')}`;
  return /already completed|workflow execution.*(completed|closed|terminated)|execution is closed|aborted by closing workflow/i.test(
    text
  );
}

const ENDED: Record<string, string> = {
  COMPLETED: 'has already completed',
  FAILED: 'has already failed',
  CANCELLED: 'was cancelled',
  TERMINATED: 'was terminated',
  TIMED_OUT: 'has timed out',
};

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

  private handle(target: Target): WorkflowHandle {
    return this.client.workflow.getHandle(target.workflowId);
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

  private readonly summaries = new Map<string, string | null>();

  /**
   * A page of runs from Temporal's visibility matching `query` (newest first), with each run's static summary.
   * The page token is Temporal's own; one it does not accept is a 400 naming the cursor.
   */
  async list(
    query: string,
    pageSize: number,
    pageToken?: Uint8Array
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
          summary: await this.summaryOf(workflowId, runId),
        };
      })
    );
    const next = res.nextPageToken?.length ? res.nextPageToken : null;
    return { runs, next };
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
    opts: { noun: string; workerChecked?: boolean }
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
  async workerPresence(timeoutMs = this.callTimeoutMs): Promise<{ pollers: number; identities: string[] }> {
    const res = await this.within(timeoutMs, () =>
      this.client.workflowService.describeTaskQueue({
        namespace: this.namespace,
        taskQueue: { name: this.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
    );
    const now = Date.now();
    const fresh = (res.pollers ?? []).filter((p) => {
      const t = p.lastAccessTime;
      const ms = t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
      return now - ms < POLLER_FRESH_MS;
    });
    return { pollers: fresh.length, identities: fresh.map((p) => p.identity ?? '') };
  }

  /** 503 `no_worker` unless a worker polls; for an existing workflow, 404 or 409 first when that is the truth. */
  async requireWorker(noun: string, target?: Target): Promise<void> {
    let presence: { pollers: number };
    try {
      presence = await this.workerPresence();
    } catch (err) {
      throw await this.toApiError(err, target, { kind: 'describeTaskQueue' });
    }
    if (presence.pollers > 0) return;
    if (target) {
      const desc = await this.describe(target);
      if (desc.status.name !== 'RUNNING') throw this.ended(target, desc);
    }
    throw unavailable(
      'no_worker',
      `no worker is polling task queue "${this.taskQueue}", so the ${noun} was not sent; start a worker ` +
        '(make start, or npm run worker) and try again'
    );
  }

  /** 409 naming how a workflow ended and, for a task, its final status (done, failed, cancelled). */
  private ended(target: Target, desc: WorkflowExecutionDescription): ApiError {
    const execution = desc.status.name;
    const kleaStatus = desc.typedSearchAttributes.get(KleaStatus);
    const status = execution === 'COMPLETED' && kleaStatus ? kleaStatus : execution.toLowerCase();
    return conflict(`${target.what} ${ENDED[execution] ?? 'has ended'} (status ${status})`, { status });
  }

  /** The one mapping from a Temporal failure to the API's error; anything unknown is returned as it is (500). */
  async toApiError(err: unknown, target: Target | undefined, call: Call): Promise<unknown> {
    if (err instanceof ApiError) return err;
    const what = target?.what ?? 'workflow';

    const keyError = payloadKeyError(err);
    if (keyError) return new ApiError(500, 'payload_key', keyError.message, { keyId: keyError.keyId });

    if (err instanceof QueryNotRegisteredError) {
      return notFound(`no ${what}: workflow "${target?.workflowId}" has no "${call.name}" query`);
    }
    if (err instanceof WorkflowUpdateFailedError) {
      const reason = (err.cause as Error | undefined)?.message ?? err.message;
      if (/^No registered handler for update: /.test(reason)) {
        return notFound(`no ${what}: workflow "${target?.workflowId}" has no "${call.name}" update`);
      }
      // A message the model could not route is the model's failure, not a conflict with the session's state.
      const model = modelError((err.cause as { type?: string } | undefined)?.type, reason);
      return model ?? conflict(reason);
    }
    if (err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC.NOT_FOUND || isClosed(err)) {
      if (!target || !isClosed(err)) return notFound(`no ${what}`);
      try {
        const desc = await this.within(this.callTimeoutMs, () => this.handle(target).describe());
        return this.ended(target, desc);
      } catch {
        return conflict(`${what} has ended`);
      }
    }

    if (updateNotApplied(err)) {
      return unavailable(
        'not_applied',
        `the ${call.noun ?? 'update'} was not applied: ${what} changed state at the moment it arrived, ` +
          `${UPDATE_ATTEMPTS} times in a row; nothing changed, look at its state and try again`
      );
    }
    const code = grpcCode(err);
    const timedOut = err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || code === GRPC.DEADLINE_EXCEEDED;
    if (timedOut && (call.kind === 'query' || call.kind === 'update')) return this.whyNoAnswer(call);
    if (timedOut || code === GRPC.UNAVAILABLE || code === GRPC.RESOURCE_EXHAUSTED) return this.temporalUnavailable();
    return err;
  }

  private temporalUnavailable(): ApiError {
    return unavailable(
      'temporal_unavailable',
      `Temporal (${this.address}, namespace "${this.namespace}") is unreachable or did not answer in time; ` +
        'try again shortly'
    );
  }

  /** A query or update that timed out: Temporal down, no worker, or a worker that did not take it in time. */
  private async whyNoAnswer(call: Call): Promise<ApiError> {
    let pollers: number;
    try {
      pollers = (await this.workerPresence()).pollers;
    } catch {
      return this.temporalUnavailable();
    }
    const queue = `task queue "${this.taskQueue}"`;
    if (call.kind === 'query') {
      return unavailable(
        'no_worker',
        pollers === 0
          ? `no worker is polling ${queue}, so nothing can answer; start a worker and try again`
          : `no worker answered within ${this.callTimeoutMs / 1000} s although one polled ${queue} recently`
      );
    }
    const noun = call.noun ?? 'update';
    return unavailable(
      'no_worker',
      `no worker took the ${noun} within ${this.acceptTimeoutMs / 1000} s` +
        (pollers === 0
          ? ` (none is polling ${queue})`
          : ` although one polled ${queue} recently (it may have just stopped)`) +
        `; Temporal holds the ${noun} in memory only, so a worker that comes back soon may still act on it, or it ` +
        'may be dropped: look at the events before sending it again'
    );
  }
}
