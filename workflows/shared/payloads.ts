/** Validation of workflow inputs and message payloads against their zod schemas, with messages naming the field. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { z } from 'zod';
import { Failure } from '../../common/failures';
import { formatZodIssues } from '../../common/zod-issues';

/** `path: message` per issue in zod's words; `whole` names the payload itself when an issue has no path. */
const describeIssues = (error: z.ZodError, whole: string) => formatZodIssues(error, { whole });

/** For update validators: the parsed payload, or an Error the caller sees (nothing reaches history). */
export function parseOrThrow<S extends z.ZodType>(schema: S, what: string, value: unknown, whole: string): z.output<S> {
  const p = schema.safeParse(value);
  if (!p.success) throw new Error(`${what}: ${describeIssues(p.error, whole)}`);
  return p.data;
}

/**
 * For signals, which cannot answer their sender: the parsed payload, or why it was ignored (the caller reports that
 * as an `error` event, so someone signalling from the Temporal CLI sees it).
 */
export function parseSignal<S extends z.ZodType>(
  schema: S,
  value: unknown,
  whole: string
): { ok: true; value: z.output<S> } | { ok: false; problem: string } {
  const p = schema.safeParse(value);
  return p.success ? { ok: true, value: p.data } : { ok: false, problem: describeIssues(p.error, whole) };
}

/** For workflow inputs: the parsed input, or a non-retryable failure of the run (retrying cannot fix it). */
export function parseInput<S extends z.ZodType>(schema: S, what: string, value: unknown): z.output<S> {
  const p = schema.safeParse(value);
  if (!p.success)
    throw ApplicationFailure.nonRetryable(`${what}: ${describeIssues(p.error, 'input')}`, Failure.InvalidInput);
  return p.data;
}
