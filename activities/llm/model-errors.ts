/**
 * What a failed model request means for the task: the typed failures the workflow's `error` event and the API
 * report (docs/architecture.md §7), and whether Temporal retries them.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { NodeName } from '../../common/model-protocol';
import { Failure } from '../../common/failures';
import { httpStatusOf } from './structured-output';

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

const UNREACHABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR_\w+)$/;

/** The endpoint could not be reached or did not answer in time (as opposed to answering with an error). */
function unreachable(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown; cause?: { code?: unknown; cause?: { code?: unknown } } };
  const names = [e?.name, (err as object | null)?.constructor?.name];
  if (names.some((n) => n === 'TimeoutError' || n === 'APIConnectionError' || n === 'APIConnectionTimeoutError'))
    return true;
  return [e?.code, e?.cause?.code, e?.cause?.cause?.code].some(
    (c) => typeof c === 'string' && UNREACHABLE_CODES.test(c)
  );
}

/**
 * Every model failure leaves the activity typed, so the workflow's `error` event and the API can say what went
 * wrong: `ModelRequestRefused` (a 4xx a retry cannot fix: bad request, auth, unknown model; not retried),
 * `ModelUnavailable` (connection refused, timeouts, 429 and 502-504: retried by Temporal, the type kept when the
 * retries run out) and `ModelServerError` (other 5xx: retried).
 */
export function classifyModelError(node: NodeName, err: unknown, hint = ''): unknown {
  const status = httpStatusOf(err);
  const message = errorText(err);
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429) {
    return ApplicationFailure.nonRetryable(
      `model request for ${node} was refused (HTTP ${status}): ${message}${hint}`,
      Failure.ModelRequestRefused
    );
  }
  if (status === 408 || status === 429 || status === 502 || status === 503 || status === 504 || unreachable(err)) {
    return ApplicationFailure.retryable(
      `model endpoint unavailable for ${node}${status ? ` (HTTP ${status})` : ''}: ${message}`,
      Failure.ModelUnavailable
    );
  }
  if (status !== undefined && status >= 500) {
    return ApplicationFailure.retryable(
      `model request for ${node} failed (HTTP ${status}): ${message}`,
      Failure.ModelServerError
    );
  }
  return err;
}
