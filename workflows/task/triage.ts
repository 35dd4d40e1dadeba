/**
 * Deterministic triage of a finished step: the clear cases are decided here, in code; only a tool error whose
 * meaning needs judgement goes to the `evaluate_step` model node.
 */
import type { FileChange } from '../../common/text-diff';

export type CallStatus = 'ok' | 'error' | 'refused' | 'denied' | 'failed';

export interface CallOutcome {
  tool: string;
  status: CallStatus;
  text: string;
  /** For a write or edit of the workspace server: the file's change as a unified diff. */
  change?: FileChange;
  /** The project files the call created, changed or deleted, as the workspace server reports them. */
  changed?: string[];
  /** A search command that found nothing (`foundNothing` in ./dispatch): ok for a step that looks, not for a check of a change. */
  foundNothing?: boolean;
}

export interface TriageInput {
  /** Set when no tool fits the step (the picker said so, or named none). */
  noTool: string | null;
  calls: readonly CallOutcome[];
  attempts: number;
  maxAttempts: number;
  replansLeft: number;
  /**
   * This attempt made the very calls (tools and arguments) of an earlier failed attempt at the same instruction.
   * A model at temperature 0 asked again answers the same way: another retry or replan would only repeat them.
   */
  repeatsFailedAttempt?: boolean;
  /**
   * What the evidence shows the step has not done, after its repair rounds (./evidence.ts): the step is not
   * achieved, decided here without a model call.
   */
  missing?: string | null;
  /**
   * The step's check ran and failed after its repair rounds: what the plan did so far does not pass, and a new plan,
   * shown the check's output, does the rest another way.
   */
  checkFailed?: boolean;
  /**
   * The check failed just as it did in a step that led to an earlier new plan (`failureKey`): what the plans since
   * then did changed nothing the check sees. A model at temperature 0 shown the same failure writes the same kind of
   * plan again: the step ends, not achieved, rather than asking for another.
   */
  sameCheckFailure?: boolean;
  /**
   * The steps still to run that depend on this one. A step not achieved that others build on leads to a new plan at
   * once: run on a missing result, they only fail in turn (a test run after a fix that was never made).
   */
  buildsOn?: readonly string[];
}

export type TriageDecision =
  | { outcome: 'move_on'; ok: boolean; reason: string }
  | { outcome: 'retry'; reason: string }
  | { outcome: 'replan'; reason: string }
  | { outcome: 'evaluate'; reason: string };

const replanOr = (input: TriageInput, reason: string): TriageDecision =>
  input.replansLeft > 0
    ? { outcome: 'replan', reason }
    : { outcome: 'move_on', ok: false, reason: `${reason} (no replans left)` };

export function triage(input: TriageInput): TriageDecision {
  const d = firstTriage(input);
  // Only what the tool judged wrong (an error) is the model's to repeat; a crash or a timeout may pass on a retry,
  // and a refusal leads to a replan whose prompt says why.
  return input.repeatsFailedAttempt && d.outcome === 'evaluate' ? noProgress(d) : d;
}

/** A decision to try again, for an attempt that repeated a failed one: the step ends, not achieved. */
function noProgress(d: TriageDecision): TriageDecision {
  return {
    outcome: 'move_on',
    ok: false,
    reason: `${d.reason} (the same calls as the failed attempt before it: trying again would repeat them)`,
  };
}

function firstTriage(input: TriageInput): TriageDecision {
  if (input.noTool !== null) return replanOr(input, `no suitable tool: ${input.noTool}`);

  const by = (s: CallStatus) => input.calls.filter((c) => c.status === s);
  const refused = by('refused');
  if (refused.length)
    return replanOr(
      input,
      /^refused by policy\b/.test(refused[0].text) ? refused[0].text : `refused by policy: ${refused[0].text}`
    );

  const failed = by('failed');
  if (failed.length) {
    const reason = `${failed[0].tool} failed: ${failed[0].text}`;
    return input.attempts < input.maxAttempts ? { outcome: 'retry', reason } : replanOr(input, reason);
  }

  const denied = by('denied');
  // What the step's calls show it did not do (every call failed, a file not changed, a failed check): not achieved.
  if (input.missing && !denied.length) {
    const reason = `not achieved: ${input.missing}`;
    if (input.checkFailed && input.sameCheckFailure)
      return {
        outcome: 'move_on',
        ok: false,
        reason: `${reason} (as before the last new plan: another would repeat it)`,
      };
    if (input.checkFailed) return replanOr(input, reason);
    const on = input.buildsOn ?? [];
    if (on.length) return replanOr(input, `${reason} (${on.join(', ')} ${on.length > 1 ? 'build' : 'builds'} on it)`);
    return { outcome: 'move_on', ok: false, reason };
  }

  const errors = by('error');
  if (errors.length) return { outcome: 'evaluate', reason: `${errors[0].tool} returned an error: ${errors[0].text}` };

  const ok = by('ok');
  if (denied.length) {
    // A denied path is the user's decision: the step continues with what it has, and says what was refused.
    return {
      outcome: 'move_on',
      ok: ok.length > 0,
      reason: `the user denied access: ${denied.map((d) => d.text).join('; ')}`,
    };
  }
  return { outcome: 'move_on', ok: true, reason: 'succeeded' };
}

/**
 * A check's failure (its command and all it printed), as what it says of the code: what a test runner prints that
 * differs from run to run is left out (the time it took: unittest's and pytest's "in 0.02s", node's "(1.2ms)" and
 * "duration_ms 1.2", jest's "Time: 1.2 s"; pytest's numbered temporary folders; long memory addresses), so the same
 * failure run again has the same key, and any other difference (a number the code computes) keeps two apart.
 */
export function failureKey(text: string): string {
  return text
    .replace(/\bin \d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?/g, 'in …s')
    .replace(/\(\d+(?:\.\d+)? ?ms\)/g, '(…ms)')
    .replace(/\bduration_ms:? \d+(?:\.\d+)?/g, 'duration_ms …')
    .replace(/\bTime: +\d+(?:\.\d+)? ?m?s\b/g, 'Time: …')
    .replace(/\/pytest-of-[^/\s]+\/pytest-\d+\//g, '/pytest-of-…/pytest-…/')
    .replace(/\b0x[0-9a-f]{8,}\b/gi, '0x…')
    .replace(/\s+/g, ' ')
    .trim();
}

/** How long a check's output must be (as its `failureKey`) to tell a failure by itself, whatever the command. */
export const TELLING_OUTPUT_CHARS = 40;

/**
 * The keys a failed check is known by, for `sameCheckFailure`: its command with what it printed; and, when what it
 * printed says enough by itself (`TELLING_OUTPUT_CHARS`), what it printed alone, so a new plan that only rewrote the
 * command (`tests/test_x` for `tests/test_x.py`) and failed with the same traceback is the same failure. A short
 * output (nothing, or "FAILED") stays tied to its command: two checks can fail that way for different reasons.
 */
export function failureKeys(check: string, printed: string): string[] {
  const out = failureKey(printed);
  const keys = [failureKey(`${check}\n${printed}`)];
  return out.length >= TELLING_OUTPUT_CHARS ? [...keys, `printed: ${out}`] : keys;
}

/** Turns the evaluator's verdict into a decision within the step's and the task's budgets. */
export function applyVerdict(
  verdict: 'move_on' | 'retry' | 'replan',
  reason: string,
  input: TriageInput
): TriageDecision {
  if (verdict === 'retry')
    return input.attempts < input.maxAttempts ? { outcome: 'retry', reason } : replanOr(input, reason);
  if (verdict === 'replan') return replanOr(input, reason);
  return { outcome: 'move_on', ok: true, reason };
}
