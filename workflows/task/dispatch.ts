/**
 * Tool dispatch bookkeeping (pure): the idempotency key of each call, what a call's result and a denial look like
 * to triage, and what a step's calls add up to.
 */
import type { GuardedPath } from '../../common/path-guard';
import { FileChangeSchema, type FileChange } from '../../common/text-diff';
import type { PickedCall, ToolCallResult } from '../../common/tools';
import type { CallOutcome } from './triage';

/**
 * The key the workspace server acts on once: stable across Temporal's retries of a call (same step attempt, same
 * place in the pick), distinct for every new attempt of the step.
 */
export function callKey(workflowId: string, stepId: string, attempt: number, index: number): string {
  return `${workflowId}/${stepId}/attempt-${attempt}/call-${index}`;
}

/** A call's result as triage and the step see it; a cut output says where the whole of it is kept. */
export function callOutcome(call: Pick<PickedCall, 'qualifiedName'>, r: ToolCallResult): CallOutcome {
  const text = r.ref ? `[full output of ${r.bytes} bytes kept as ${r.ref}]\n${r.text}` : r.text;
  const change = fileChangeOf(call.qualifiedName, r);
  return { tool: call.qualifiedName, status: r.status, text, ...(change ? { change } : {}) };
}

/** The tools whose results carry a file's change (other servers' structured content is not trusted for it). */
const CHANGE_TOOLS: readonly string[] = ['workspace__write_file', 'workspace__edit_file'];

/** The change a successful write or edit of the workspace server reports, if any. */
export function fileChangeOf(tool: string, r: ToolCallResult): FileChange | null {
  if (r.status !== 'ok' || !CHANGE_TOOLS.includes(tool)) return null;
  const parsed = FileChangeSchema.safeParse(r.structured?.change);
  return parsed.success ? parsed.data : null;
}

/** A call the user denied a path to: never dispatched, a non-halting error for its step. */
export function deniedOutcome(call: Pick<PickedCall, 'qualifiedName'>, p: GuardedPath): CallOutcome {
  return { tool: call.qualifiedName, status: 'denied', text: `${p.requested} (${p.reason}) was denied by the user` };
}

/**
 * What one step's calls add up to: why no tool did it (the picker said none fits, or named none), and the text of
 * its results, each labelled with its tool when there are several.
 */
export function stepToolResult(
  stepId: string,
  outcomes: readonly CallOutcome[],
  noSuitable: ReadonlyArray<{ stepId: string; reason: string }>
): { noTool: string | null; text: string } {
  const none = noSuitable.find((n) => n.stepId === stepId);
  const noTool = none ? none.reason : outcomes.length === 0 ? 'the tool picker named no tool for this step' : null;
  const text = outcomes.map((o) => (outcomes.length > 1 ? `[${o.tool}] ${o.text}` : o.text)).join('\n\n');
  return { noTool, text };
}
