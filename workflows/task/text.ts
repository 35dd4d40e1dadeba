/** Small text helpers of the task workflow (pure). */
import { withoutRuntimeFrames } from '../../common/command-output';
import type { PickedCall } from '../../common/tools';

export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}

/** A line that only rules output off (`=====`, `-----`, `^^^^`): it says nothing of what happened. */
const RULE = /^[ \t]*([=\-_*~^#])\1{4,}[ \t]*$/;

/**
 * A command's output as the evidence of a failure, within `max` characters: ruling lines and the runtime's own stack
 * frames (`withoutRuntimeFrames`) left out, and, when still too long, its start and its end kept with what is between
 * them left out. A test run says which test failed first and why at its end (a Python traceback ends with its error,
 * a run with its summary): with the start alone, a 1.5B model shown the first of two failures rewrote a test whose
 * other assertion, `125 != 130`, it never saw.
 */
export function cutOutput(text: string, max: number): string {
  const lines = withoutRuntimeFrames(text)
    .split('\n')
    .filter((l) => !RULE.test(l));
  const kept = lines.join('\n');
  if (kept.length <= max) return kept;
  const half = Math.floor(max / 2);
  const head = kept.slice(0, half);
  const tail = kept.slice(kept.length - half);
  return `${head}\n… [${kept.length - 2 * half} characters left out] …\n${tail}`;
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
