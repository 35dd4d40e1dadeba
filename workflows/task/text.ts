/** Small text helpers of the task workflow (pure). */
import { TimeoutFailure } from '@temporalio/workflow';
import type { PickedCall } from '../../common/tools';

export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}

/** Whether a failure chain holds a timeout (an activity's schedule-to-close time ran out, say). */
export function isTimeout(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth++)
    if (e instanceof TimeoutFailure) return true;
  return false;
}

/** The innermost message of a failure chain (ActivityFailure → ApplicationFailure → ...). */
export function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}

/**
 * The type of the innermost typed failure of a chain (`ModelOutputInvalid`, `ModelNotConfigured`, an error class a
 * retried activity ended with), for the `error` event's code; `fallback` when none has a type.
 */
export function failureCode(err: unknown, fallback: string): string {
  let code = fallback;
  for (let e = err as { type?: unknown; cause?: unknown } | undefined; e && typeof e === 'object';) {
    if (typeof e.type === 'string' && e.type) code = e.type;
    e = e.cause as typeof e;
  }
  return code;
}

export function withAnswers(instruction: string, answers: Record<string, string> | undefined): string {
  if (!answers || !Object.keys(answers).length) return instruction;
  return `${instruction}\n\nAnswers from the user:\n${Object.entries(answers)
    .map(([q, a]) => `Q: ${q}\nA: ${a}`)
    .join('\n')}`;
}

/** One line for the Temporal UI: `step 3 · workspace__grep "TODO"`. */
export function callSummary(call: Pick<PickedCall, 'stepId' | 'qualifiedName' | 'args'>): string {
  const first = Object.values(call.args).find((v) => typeof v === 'string') as string | undefined;
  const arg = first ? ` ${JSON.stringify(first.length > 40 ? `${first.slice(0, 39)}…` : first)}` : '';
  return `step ${call.stepId} · ${call.qualifiedName}${arg}`.replace(/\n/g, ' ');
}
