/** The token rule (docs/architecture.md §8): with KLEA_API_TOKEN set, every route but /healthz needs the token. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ApiError } from './errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether a request carries the bearer token (always true when none is configured). */
export function hasToken(token: string | null, authorization: string | undefined): boolean {
  if (!token) return true;
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
  return Boolean(match) && timingSafeEqual(digest(match![1].trim()), digest(token));
}

export function bearerAuth(token: string | null): RequestHandler {
  if (!token) return (_req, _res, next) => next();
  const expected = digest(token);
  return (req, _res, next) => {
    const header = req.get('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header);
    // Security: compare fixed-length digests in constant time, so timing reveals nothing about the token.
    if (!match || !timingSafeEqual(digest(match[1].trim()), expected)) {
      next(
        new ApiError(
          401,
          'unauthorized',
          match ? 'the bearer token is not valid' : 'this route needs "Authorization: Bearer <token>"'
        )
      );
      return;
    }
    next();
  };
}
