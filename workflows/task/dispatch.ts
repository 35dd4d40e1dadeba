/**
 * Tool dispatch bookkeeping (pure): the idempotency key of each call, what a call's result and a denial look like
 * to triage, and what a step's calls add up to.
 */
import type { GuardedPath } from '../../common/path-guard';
import { canonicalJson } from '../../common/plan';
import { FileChangeSchema, type FileChange } from '../../common/text-diff';
import type { PickedCall, ToolCallResult } from '../../common/tools';
import type { CallOutcome } from './triage';

/**
 * The key the workspace server acts on once: stable across Temporal's retries of a call (same run, same step
 * attempt, same place in the pick), distinct for every new attempt of the step, and for every run: a task re-run
 * from a step by a rewind (a reset, so a new run) makes new calls, which act again.
 */
export function callKey(
  run: { workflowId: string; runId: string },
  stepId: string,
  attempt: number,
  index: number,
  round = 1
): string {
  // A step's later rounds (it was left open for more calls) get keys of their own.
  const place = `${stepId}/attempt-${attempt}/${round > 1 ? `round-${round}/` : ''}call-${index}`;
  return `${run.workflowId}/${run.runId}/${place}`;
}

/** A call's result as triage and the step see it; a cut output says where the whole of it is kept. */
export function callOutcome(
  call: Pick<PickedCall, 'qualifiedName'> & { args?: PickedCall['args'] },
  r: ToolCallResult
): CallOutcome {
  const text = r.ref ? `[full output of ${r.bytes} bytes kept as ${r.ref}]\n${r.text}` : r.text;
  const change = fileChangeOf(call.qualifiedName, r);
  const changed = change ? [change.path] : r.changed;
  const nothing = foundNothing(call, r);
  return {
    tool: call.qualifiedName,
    status: nothing ? 'ok' : r.status,
    text: nothing ? `${text}\n${FOUND_NOTHING}` : text,
    ...(nothing ? { foundNothing: true } : {}),
    ...(change ? { change } : {}),
    ...(changed?.length ? { changed } : {}),
  };
}

/** What a search that found nothing says beside its exit code. */
export const FOUND_NOTHING = 'note: no match (the search found nothing; that is its answer, not an error)';

/** Programs whose exit status 1 means "no line matched" (POSIX grep, and the searchers that follow it). */
const SEARCHERS = /^(?:grep|egrep|fgrep|rg|git\s+grep)\s/;
/** Shell syntax that makes a command more than one program (a pipe, a list, a substitution, a redirection). */
const COMPOUND = /[|;&`$<>()\n]/;

/**
 * Whether a workspace command was one search (grep and its kind, nothing piped or chained) that exited 1 with no
 * output: it found nothing, which answers the question it asked. A Planner checks "is there a TODO in report.py?"
 * with `grep TODO report.py`; taken for a failure, each file without one was tried again and planned again.
 */
export function foundNothing(call: { qualifiedName: string; args?: PickedCall['args'] }, r: ToolCallResult): boolean {
  if (call.qualifiedName !== 'workspace__run_command' || r.status !== 'error') return false;
  const command = typeof call.args?.command === 'string' ? call.args.command.trim() : '';
  const s = r.structured;
  return (
    SEARCHERS.test(command) &&
    !COMPOUND.test(command.replace(/'[^']*'|"[^"\\$`]*"/g, "''")) &&
    s?.exit_code === 1 &&
    !s.stdout &&
    !s.stderr &&
    !s.timed_out &&
    !s.stopped
  );
}

/** The tools whose results carry a file's change (other servers' structured content is not trusted for it). */
const CHANGE_TOOLS: readonly string[] = ['workspace__write_file', 'workspace__edit_file'];

/** The change a successful write or edit of the workspace server reports, if any. */
export function fileChangeOf(tool: string, r: ToolCallResult): FileChange | null {
  if (r.status !== 'ok' || !CHANGE_TOOLS.includes(tool)) return null;
  const parsed = FileChangeSchema.safeParse(r.structured?.change);
  return parsed.success ? parsed.data : null;
}

/**
 * A call naming Klea's own state: never dispatched, never asked about; like a denied path, a non-halting error for
 * its step (a new plan could not reach it either).
 */
export function forbiddenOutcome(call: Pick<PickedCall, 'qualifiedName'>, p: GuardedPath): CallOutcome {
  return { tool: call.qualifiedName, status: 'denied', text: `refused: ${p.requested} is ${p.reason}` };
}

/** A call the user denied a path to: never dispatched, a non-halting error for its step. */
export function deniedOutcome(call: Pick<PickedCall, 'qualifiedName'>, p: GuardedPath): CallOutcome {
  return { tool: call.qualifiedName, status: 'denied', text: `${p.requested} (${p.reason}) was denied by the user` };
}

/** A call a step made, with what it returned. */
export interface MadeCall {
  call: Pick<PickedCall, 'qualifiedName' | 'args' | 'stepId'>;
  outcome: CallOutcome;
}

/**
 * What one step's calls add up to: why no tool did it (the picker said none fits, or named none), the text of its
 * results (each labelled with its call when there are several), and what was repaired on the way. A pick that
 * holds a call for the step and also says no tool fits it is taken at its call: the call ran, and that is told.
 */
export function stepToolResult(
  stepId: string,
  made: readonly MadeCall[],
  noSuitable: ReadonlyArray<{ stepId: string; reason: string }>
): { noTool: string | null; text: string; repairs: string[] } {
  const none = noSuitable.find((n) => n.stepId === stepId);
  const repairs =
    none && made.length ? [`the picker also said no tool fits (${none.reason}); the step's call ran`] : [];
  const noTool = made.length ? null : (none?.reason ?? 'the tool picker named no tool for this step');
  const text = made
    .map(({ call, outcome }) =>
      made.length > 1 ? `[${callLabel(call)}: ${outcome.status}] ${outcome.text}` : outcome.text
    )
    .join('\n\n');
  return { noTool, text, repairs };
}

/** `workspace__run_command "python hello.py"`: the tool and its first string argument, short. */
export function callLabel(call: Pick<PickedCall, 'qualifiedName' | 'args'>): string {
  const first = Object.values(call.args).find((v) => typeof v === 'string') as string | undefined;
  const arg = first ? ` ${JSON.stringify(first.length > 60 ? `${first.slice(0, 59)}…` : first)}` : '';
  return `${call.qualifiedName}${arg}`.replace(/\n/g, ' ');
}

/**
 * The call of `made` that `call` repeats (same tool, same arguments) since the step last changed a file, or null.
 * Within one attempt of a step such a repeat learns nothing new (a failed call fails again); once a file has
 * changed, running the same command again is a new look (the tests after a fix).
 */
export function repeatedCall(
  call: Pick<PickedCall, 'qualifiedName' | 'args'>,
  made: readonly MadeCall[]
): MadeCall | null {
  const args = canonicalJson(call.args);
  for (let i = made.length - 1; i >= 0; i--) {
    const m = made[i];
    if (m.call.qualifiedName === call.qualifiedName && canonicalJson(m.call.args) === args) return m;
    if (m.outcome.changed?.length) return null;
  }
  return null;
}

/** Whether `call` repeats a call the step already made since it last changed a file (`repeatedCall`). */
export const repeatsCall = (call: Pick<PickedCall, 'qualifiedName' | 'args'>, made: readonly MadeCall[]): boolean =>
  repeatedCall(call, made) !== null;

/** The workspace tools that change a file named by their `path`. */
const FILE_CHANGING: readonly string[] = ['workspace__write_file', 'workspace__edit_file'];

/**
 * For a call that repeats a failed change of a file: a read of that file instead, so the next pick sees the file as
 * it is now rather than sending the same failing change again. Null for any other repeat.
 */
export function readInsteadOf(call: PickedCall, made: readonly MadeCall[]): PickedCall | null {
  const earlier = repeatedCall(call, made);
  const path = call.args.path;
  if (!earlier || earlier.outcome.status !== 'error' || !FILE_CHANGING.includes(call.qualifiedName)) return null;
  if (typeof path !== 'string') return null;
  const read: PickedCall = {
    stepId: call.stepId,
    server: 'workspace',
    tool: 'read_file',
    qualifiedName: 'workspace__read_file',
    args: { path },
    readOnly: true,
    idempotent: true,
  };
  return repeatsCall(read, made) ? null : read;
}

/**
 * The calls of a later pick for step `stepId` that it has not made already. A failed call is never sent again
 * unchanged: a repeated failed change of a file reads the file instead (said in `repairs`), and the step goes on
 * with it in view.
 */
export function freshCalls(
  stepId: string,
  next: { calls: PickedCall[]; guarded: GuardedPath[][] },
  made: readonly MadeCall[],
  repairs: string[]
): Array<{ call: PickedCall; guarded: GuardedPath[] }> {
  const fresh: Array<{ call: PickedCall; guarded: GuardedPath[] }> = [];
  for (const [i, call] of next.calls.entries()) {
    if (call.stepId !== stepId) continue;
    if (!repeatsCall(call, made)) {
      fresh.push({ call, guarded: next.guarded[i] });
      continue;
    }
    const read = readInsteadOf(call, made);
    if (!read) continue;
    repairs.push(`${callLabel(call)} repeated a failed call: the file was read instead`);
    fresh.push({
      call: { ...read, stepDone: false },
      guarded: next.guarded[i].map((g) => ({ ...g, op: 'read' as const })),
    });
  }
  return fresh;
}

/**
 * Same-file ordering across every call of a batch, later rounds of open steps included: a call waits for the
 * calls picked before it that touch one of its files; calls on other files run at once.
 */
export class FileOrder {
  private readonly last = new Map<string, Promise<unknown>>();

  enqueue(paths: readonly string[], run: (waitFor: Promise<unknown>[]) => Promise<CallOutcome>): Promise<CallOutcome> {
    const own = [...new Set(paths)];
    const waitFor = own.flatMap((p) => this.last.get(p) ?? []);
    const done = run(waitFor);
    if (own.length) {
      const settled = done.catch(() => undefined);
      for (const p of own) this.last.set(p, settled);
    }
    return done;
  }
}
