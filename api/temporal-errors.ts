/**
 * The one mapping from Temporal's failures to the API's errors (`toApiError`), for every call `TemporalCalls`
 * makes:
 *
 * - no such workflow → 404; a workflow that does not answer the query or update → 404 (it is not what the
 *   route addresses, e.g. a session id on a task route);
 * - a workflow that has ended → 409 naming its final status; an update its validator refused → 409;
 * - Temporal unreachable or not answering within the deadline → 503 `temporal_unavailable`;
 * - no worker to answer a query or take an update → 503 `no_worker`;
 * - an answer encrypted with a key the API does not have → 500 `payload_key` naming the key id (the API's and
 *   the workers' KLEA_PAYLOAD_KEY differ: nothing a client can fix).
 */
import {
  QueryNotRegisteredError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { KleaStatus } from '../common/search-attributes';
import { PayloadKeyError } from '../runtime/payload-codec';
import { ApiError, conflict, gone, modelError, notFound, unavailable } from './errors';
import { Failure } from '../common/failures';

/** A workflow as a route addresses it: `what` names it for people (`task "task-s-1-1"`). */
export interface Target {
  what: string;
  workflowId: string;
  /** When its session was made (ms), when its id says: one Temporal no longer has may have outlived retention. */
  bornAt?: number;
  /** One run of the workflow (an earlier run of a task that continued as new); absent: the latest run. */
  runId?: string;
}

/** The call that failed, as its error names it. */
export interface Call {
  kind: 'query' | 'update' | 'signal' | 'describe' | 'start' | 'terminate' | 'describeTaskQueue' | 'list';
  name?: string;
  /** What an update carries, for messages: "message", "task", "decision". */
  noun?: string;
}

/** What the mapping asks of Temporal to say why a call failed, and what it names in its messages. */
export interface FailureContext {
  address: string;
  namespace: string;
  taskQueue: string;
  callTimeoutMs: number;
  acceptTimeoutMs: number;
  /** The workflow's description, within the call deadline (to name how it ended). */
  describe(target: Target): Promise<WorkflowExecutionDescription>;
  /** Workers polling the task queue; throws when Temporal cannot be asked. */
  workerPresence(): Promise<{ pollers: number }>;
  /** How long the namespace keeps a closed run (ms); undefined when it cannot be asked now. */
  retentionMs(): Promise<number | undefined>;
}

/** gRPC status codes (the client does not re-export grpc-js's enum). */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNAVAILABLE: 14,
} as const;

/** How often an update is sent when the workflow task that carried it failed (see `updateNotApplied`). */
export const UPDATE_ATTEMPTS = 4;

/** The errors a failure wraps, itself first (the client wraps a few levels deep). */
function* chain(err: unknown): Generator<unknown> {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) yield e;
}

/** The PayloadKeyError behind a failure, however deeply the client wrapped it. */
function payloadKeyError(err: unknown): PayloadKeyError | null {
  for (const e of chain(err)) if (e instanceof PayloadKeyError) return e;
  return null;
}

/** The gRPC status code of an error or of any error it wraps. */
export function grpcCode(err: unknown): number | undefined {
  for (const e of chain(err)) if (isGrpcServiceError(e)) return e.code;
  return undefined;
}

/**
 * The workflow task that carried an update failed on the server, so the update was not applied and nothing from
 * that task was kept. It happens when the workflow closes in the very task that also received the update (a
 * `cancel` signal, then at once a decision, while an activity finishes): the server refuses to close a workflow
 * while new events wait (UnhandledCommand) and drops the updates sent with that task. Sending the update again,
 * with the same id, is safe: it reaches the workflow as it now is (usually ended, so the caller hears 409).
 */
export function updateNotApplied(err: unknown): boolean {
  for (const e of chain(err))
    if (isGrpcServiceError(e) && e.code === GRPC.FAILED_PRECONDITION && /workflow task failure/i.test(e.details))
      return true;
  return false;
}

/** A call refused because the workflow's run has closed (completed, failed, terminated ...). */
export function isClosed(err: unknown): boolean {
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

/** 409 naming how a workflow ended and, for a task, its final status (done, failed, cancelled). */
export function endedConflict(target: Target, desc: WorkflowExecutionDescription): ApiError {
  const execution = desc.status.name;
  const kleaStatus = desc.typedSearchAttributes.get(KleaStatus);
  const status = execution === 'COMPLETED' && kleaStatus ? kleaStatus : execution.toLowerCase();
  return conflict(`${target.what} ${ENDED[execution] ?? 'has ended'} (status ${status})`, { status });
}

/** The one mapping from a Temporal failure to the API's error; anything unknown is returned as it is (500). */
export async function toApiError(
  err: unknown,
  target: Target | undefined,
  call: Call,
  ctx: FailureContext
): Promise<unknown> {
  if (err instanceof ApiError) return err;
  const what = target?.what ?? 'workflow';

  const keyError = payloadKeyError(err);
  if (keyError) return new ApiError(500, 'payload_key', keyError.message, { keyId: keyError.keyId });

  if (err instanceof QueryNotRegisteredError) {
    return notFound(`no ${what}: workflow "${target?.workflowId}" has no "${call.name}" query`);
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const reason = (err.cause as Error | undefined)?.message ?? err.message;
    if ((err.cause as { type?: string } | undefined)?.type === Failure.GrantNotFound) return notFound(reason);
    if (/^No registered handler for update: /.test(reason)) {
      return notFound(`no ${what}: workflow "${target?.workflowId}" has no "${call.name}" update`);
    }
    // A message the model could not route is the model's failure, not a conflict with the session's state.
    const model = modelError((err.cause as { type?: string } | undefined)?.type, reason);
    return model ?? conflict(reason);
  }
  if (err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC.NOT_FOUND || isClosed(err)) {
    if (!target || !isClosed(err)) return (target && (await pastRetention(target, ctx))) ?? notFound(`no ${what}`);
    try {
      return endedConflict(target, await ctx.describe(target));
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
  if (timedOut && (call.kind === 'query' || call.kind === 'update')) return whyNoAnswer(call, ctx);
  if (timedOut || code === GRPC.UNAVAILABLE || code === GRPC.RESOURCE_EXHAUSTED) return temporalUnavailable(ctx);
  return err;
}

/**
 * 410 for a session or task Temporal no longer has although its id says it was made longer ago than the namespace
 * keeps closed runs: it ran and was removed. (An id made up with an old date is answered 410 too: there is no
 * telling it apart.) Undefined when the id does not say when, or it was made within retention.
 */
async function pastRetention(target: Target, ctx: FailureContext): Promise<ApiError | undefined> {
  if (target.bornAt === undefined) return undefined;
  const retention = await ctx.retentionMs().catch(() => undefined);
  if (retention === undefined || Date.now() - target.bornAt <= retention) return undefined;
  const days = Math.round((retention / 86_400_000) * 10) / 10;
  return gone(
    `${target.what} is no longer kept: Temporal keeps a closed session or task for ${days} day(s) after it ends ` +
      '(the namespace retention), and this one ended longer ago than that',
    { retentionDays: days }
  );
}

function temporalUnavailable(ctx: Pick<FailureContext, 'address' | 'namespace'>): ApiError {
  return unavailable(
    'temporal_unavailable',
    `Temporal (${ctx.address}, namespace "${ctx.namespace}") is unreachable or did not answer in time; ` +
      'try again shortly'
  );
}

/** A query or update that timed out: Temporal down, no worker, or a worker that did not take it in time. */
async function whyNoAnswer(call: Call, ctx: FailureContext): Promise<ApiError> {
  let pollers: number;
  try {
    pollers = (await ctx.workerPresence()).pollers;
  } catch {
    return temporalUnavailable(ctx);
  }
  const queue = `task queue "${ctx.taskQueue}"`;
  if (call.kind === 'query') {
    return unavailable(
      'no_worker',
      pollers === 0
        ? `no worker is polling ${queue}, so nothing can answer; start a worker and try again`
        : `no worker answered within ${ctx.callTimeoutMs / 1000} s although one polled ${queue} recently`
    );
  }
  const noun = call.noun ?? 'update';
  return unavailable(
    'no_worker',
    `no worker took the ${noun} within ${ctx.acceptTimeoutMs / 1000} s` +
      (pollers === 0
        ? ` (none is polling ${queue})`
        : ` although one polled ${queue} recently (it may have just stopped)`) +
      `; Temporal holds the ${noun} in memory only, so a worker that comes back soon may still act on it, or it ` +
      'may be dropped: look at the events before sending it again'
  );
}
