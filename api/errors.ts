/** The API's one error shape: `{error: {code, message, details?}}` with the right status. */
import type { ErrorRequestHandler } from 'express';
import type { z } from 'zod';
import { describeZodIssues } from '../common/zod-issues';
import { Failure } from '../common/failures';

/** Seconds a client is told to wait (`Retry-After`) before retrying a 503. */
export const RETRY_AFTER_SECONDS = 5;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new ApiError(400, 'invalid_request', message, details);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);
/** 410: it existed, and Temporal no longer keeps it (past the namespace's retention). */
export const gone = (message: string, details?: unknown) => new ApiError(410, 'gone', message, details);
export const conflict = (message: string, details?: unknown) => new ApiError(409, 'conflict', message, details);
/** 503: worth retrying later (every 503 carries `Retry-After`). */
export const unavailable = (
  code: 'temporal_unavailable' | 'no_worker' | 'model_unavailable' | 'not_applied',
  message: string
) => new ApiError(503, code, message);
/** 502: the model answered, but with an error or with output Klea could not use. */
export const badGateway = (message: string) => new ApiError(502, 'model_error', message);

/** Model failures (the activity's ApplicationFailure type) and how the API reports them. */
const MODEL_UNAVAILABLE = new Set<string>([Failure.ModelUnavailable, Failure.ModelNotConfigured]);
const MODEL_ERROR = new Set<string>([
  Failure.ModelServerError,
  Failure.ModelRequestRefused,
  Failure.ModelOutputInvalid,
]);

/** A failed model call as 502 `model_error` / 503 `model_unavailable`; null for any other failure. */
export function modelError(type: string | undefined, message: string): ApiError | null {
  if (type && MODEL_UNAVAILABLE.has(type)) return unavailable('model_unavailable', message);
  if (type && MODEL_ERROR.has(type)) {
    // A refused key is the one thing the operator must fix by hand: say where.
    const hint = /HTTP 40[13]\b/.test(message) ? ' (check the model key: OPENAI_API_KEY or model.api_key)' : '';
    return badGateway(message + hint);
  }
  return null;
}

/** A zod error as a 400 naming each field and why. */
export function validationError(where: 'body' | 'query' | 'path', error: z.ZodError): ApiError {
  const details = describeZodIssues(error, { prefix: [where], unknownKeys: 'per_field' });
  const first = details[0];
  return badRequest(
    `${first.path}: ${first.message}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}`,
    details
  );
}

export const errorHandler: ErrorRequestHandler = (err, _req, res, _next) => {
  if (err instanceof ApiError) {
    if (err.status === 503) res.set('Retry-After', String(RETRY_AFTER_SECONDS));
    res.status(err.status).json({
      error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) },
    });
    return;
  }
  // body-parser errors carry a status and a type.
  const e = err as { status?: number; type?: string; message?: string };
  if (e?.type === 'entity.too.large') {
    res.status(413).json({ error: { code: 'payload_too_large', message: 'request body is too large' } });
    return;
  }
  if (e?.type === 'entity.parse.failed') {
    res.status(400).json({ error: { code: 'invalid_json', message: `request body is not valid JSON: ${e.message}` } });
    return;
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    res.status(e.status).json({ error: { code: 'invalid_request', message: e.message ?? 'bad request' } });
    return;
  }
  console.error('api: unhandled error', err);
  res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
};
