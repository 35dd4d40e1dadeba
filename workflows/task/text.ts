/** Small text helpers of the task workflow (pure). */
import type { PickedCall } from '../../common/tools';

export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
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
