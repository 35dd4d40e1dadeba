/** How a failed Temporal call reads to the API's client: the status, the code and a message that says why. */
import {
  QueryNotRegisteredError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError } from '../../api/errors';
import { toApiError, updateNotApplied, type FailureContext, type Target } from '../../api/temporal-errors';
import { PayloadKeyError } from '../../runtime/payload-codec';
import { newSessionId, sessionBornAt, sessionTarget, taskTarget } from '../../api/targets';

const DAY = 86_400_000;
const task: Target = { what: 'task "task-s-1-1"', workflowId: 'task-s-1-1' };

/** An error as the gRPC client throws it. */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

function context(over: Partial<FailureContext> = {}): FailureContext {
  return {
    address: '127.0.0.1:7233',
    namespace: 'default',
    taskQueue: 'klea',
    callTimeoutMs: 5000,
    acceptTimeoutMs: 10_000,
    describe: () => Promise.reject(new Error('not described')),
    workerPresence: () => Promise.resolve({ pollers: 1 }),
    retentionMs: () => Promise.resolve(DAY),
    ...over,
  };
}

const ended = (execution: string, kleaStatus?: string) =>
  ({
    status: { name: execution },
    typedSearchAttributes: { get: () => kleaStatus },
  }) as unknown as WorkflowExecutionDescription;

async function mapped(err: unknown, call: Parameters<typeof toApiError>[2], ctx = context()) {
  const res = await toApiError(err, task, call, ctx);
  expect(res).toBeInstanceOf(ApiError);
  const e = res as ApiError;
  return { status: e.status, code: e.code, message: e.message, details: e.details };
}

describe('Temporal failures as API errors', () => {
  it('a workflow without the query is not what the route addresses: 404 naming the query', async () => {
    const res = await mapped(new QueryNotRegisteredError('no such query', 1), { kind: 'query', name: 'state' });

    expect(res).toMatchObject({ status: 404, code: 'not_found' });
    expect(res.message).toBe('no task "task-s-1-1": workflow "task-s-1-1" has no "state" query');
  });

  it('an ended task is a 409 naming its final status, as the task said it', async () => {
    const err = new Error('workflow execution already completed');
    const ctx = context({ describe: () => Promise.resolve(ended('COMPLETED', 'cancelled')) });

    const res = await mapped(err, { kind: 'signal', name: 'review' }, ctx);

    expect(res).toEqual({
      status: 409,
      code: 'conflict',
      message: 'task "task-s-1-1" has already completed (status cancelled)',
      details: { status: 'cancelled' },
    });
  });

  it('an update the validator refused is a 409 with its reason; a routing failure is the model error', async () => {
    const refused = new WorkflowUpdateFailedError('failed', new Error('no plan review is pending'));
    const model = new WorkflowUpdateFailedError(
      'failed',
      ApplicationFailure.nonRetryable('the model is down', 'ModelUnavailable')
    );

    const a = await mapped(refused, { kind: 'update', name: 'review', noun: 'decision' });
    const b = await mapped(model, { kind: 'update', name: 'submit', noun: 'message' });

    expect([a.status, a.code, a.message]).toEqual([409, 'conflict', 'no plan review is pending']);
    expect([b.status, b.code]).toEqual([503, 'model_unavailable']);
  });

  it('Temporal unreachable is 503 temporal_unavailable naming the server', async () => {
    const res = await mapped(grpcError(14, 'connection refused'), { kind: 'signal', name: 'cancel' });

    expect(res.code).toBe('temporal_unavailable');
    expect(res.message).toMatch(/^Temporal \(127\.0\.0\.1:7233, namespace "default"\) is unreachable/);
  });

  it('a query or update nobody answered says whether any worker polls', async () => {
    const none = context({ workerPresence: () => Promise.resolve({ pollers: 0 }) });

    const query = await mapped(grpcError(4, 'deadline exceeded'), { kind: 'query', name: 'state' }, none);
    const update = await mapped(
      new WorkflowUpdateRPCTimeoutOrCancelledError('timed out'),
      { kind: 'update', name: 'review', noun: 'decision' },
      context()
    );

    expect([query.status, query.code]).toEqual([503, 'no_worker']);
    expect(query.message).toMatch(/no worker is polling task queue "klea"/);
    expect(update.code).toBe('no_worker');
    expect(update.message).toMatch(/^no worker took the decision within 10 s although one polled/);
  });

  it('an update dropped with a failed workflow task is recognised, however deeply wrapped, and is not_applied', async () => {
    const dropped = grpcError(9, 'unexpected workflow task failure');
    const wrapped = Object.assign(new Error('update failed'), { cause: dropped });

    const res = await mapped(wrapped, { kind: 'update', name: 'review', noun: 'decision' });

    expect(updateNotApplied(wrapped)).toBe(true);
    expect(updateNotApplied(grpcError(9, 'something else'))).toBe(false);
    expect([res.status, res.code]).toEqual([503, 'not_applied']);
    expect(res.message).toMatch(/^the decision was not applied: task "task-s-1-1" changed state/);
  });

  it("an answer under another payload key is a 500 naming the key id, not Temporal's failure", async () => {
    const err = Object.assign(new Error('query failed'), { cause: new PayloadKeyError('unknown key k9', 'k9') });

    const res = await mapped(err, { kind: 'query', name: 'state' });

    expect(res).toEqual({ status: 500, code: 'payload_key', message: 'unknown key k9', details: { keyId: 'k9' } });
  });

  it('a session or task Temporal no longer has, made longer ago than retention, is 410 gone, not 404', async () => {
    const sessionId = newSessionId('1a2b3c4d-0000', Date.now() - 2 * DAY);
    const old = taskTarget(`task-${sessionId}-3`);
    const fresh = sessionTarget(newSessionId('5e6f7a8b-0000'));
    const notFound = grpcError(5, 'workflow not found');

    const res = await toApiError(notFound, old, { kind: 'query', name: 'state' }, context());
    const recent = await toApiError(notFound, fresh, { kind: 'query', name: 'state' }, context());
    const undated = await toApiError(notFound, sessionTarget('s-1a2b3c4d'), { kind: 'describe' }, context());

    expect(res).toMatchObject({ status: 410, code: 'gone', details: { retentionDays: 1 } });
    expect((res as Error).message).toMatch(
      new RegExp(`^task "task-${sessionId}-3" is no longer kept: Temporal keeps a closed session or task for 1 day`)
    );
    expect(recent).toMatchObject({ status: 404, code: 'not_found' });
    expect(undated).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('a session id says when it was made', () => {
    const at = Date.UTC(2025, 0, 2, 3, 4, 5);

    const id = newSessionId('1a2b3c4d-9999-aaaa', at);

    expect(id).toMatch(/^s-[0-9a-z]{9}1a2b3c4d$/);
    expect(sessionBornAt(id)).toBe(at);
    expect(sessionBornAt('s-1a2b3c4d')).toBeUndefined();
  });

  it('anything else is left as it is', async () => {
    const err = new Error('something unexpected');

    await expect(toApiError(err, task, { kind: 'query', name: 'state' }, context())).resolves.toBe(err);
  });
});
