/**
 * What shows that a tool step did its work (pure). A step is judged by what happened, not by the model's say-so:
 * a step whose calls all failed did nothing; a step that was to change files did so only if they changed; a step
 * with a check worked only if the check, run by Klea itself in the sandbox, exits 0. What is missing is shown to
 * the model in up to `MAX_REPAIR_ROUNDS` more picks, and then the step is not achieved.
 */
import { plainPath, plannedFiles, plannedFolders, type StepExpect } from '../../common/plan';
import { isWithin } from '../../common/posix-path';
import { cutOutput } from './text';
import type { CallOutcome } from './triage';

/** Picks a step gets to make good what its evidence shows missing, before it counts as not achieved. */
export const MAX_REPAIR_ROUNDS = 2;
/** How much of a failed call's or check's output the reason (and the repair pick) sees. */
const OUTPUT_CHARS = 800;

/** Whether a call did not do what it was asked (a denied or refused call is the user's or the policy's). */
const failed = (c: CallOutcome) => c.status === 'error' || c.status === 'failed';

/**
 * What the step's calls (and its check, when it has one and it ran) show is not done, or null when nothing is
 * missing. Calls that were denied or refused are left to triage: the user's decision is not the step's failure.
 */
export function missingEvidence(calls: readonly CallOutcome[], expect?: StepExpect, check?: CallOutcome | null) {
  const tried = calls.filter((c) => c.status !== 'denied' && c.status !== 'refused');
  if (tried.length && tried.every(failed)) {
    const last = tried[tried.length - 1];
    return `every call failed; the last, ${last.tool}: ${cutOutput(last.text, OUTPUT_CHARS)}`;
  }
  const unchanged = unchangedFiles(calls, expect);
  if (unchanged.length) return notChanged(unchanged, calls);
  if (check && checkFails(check, expect))
    return `the check \`${expect?.check ?? ''}\` failed: ${cutOutput(check.text, OUTPUT_CHARS)}`;
  return null;
}

/** What is missing of `unchanged` (files, and folders written with their "/"), said plainly. */
function notChanged(unchanged: readonly string[], calls: readonly CallOutcome[]): string {
  const files = unchanged.filter((p) => !p.endsWith('/'));
  const folders = unchanged.filter((p) => p.endsWith('/'));
  const written = new Set(calls.flatMap((c) => c.changed ?? []).map(plainPath));
  return [
    files.length ? `${files.join(', ')} ${files.length > 1 ? 'were' : 'was'} not changed` : '',
    ...folders.map((d) =>
      written.has(plainPath(d))
        ? `${plainPath(d)} was written as a file where the folder ${d} was to be`
        : `nothing was made, moved or changed in the folder ${d}`
    ),
  ]
    .filter(Boolean)
    .join('; ');
}

/**
 * Whether the step's check says it did not work: it exited non-zero (and could run at all), or it searched for what
 * the step was to write and found nothing. For a step that is to change nothing, a search that found nothing is its
 * answer.
 */
export function checkFails(check: CallOutcome, expect?: StepExpect): boolean {
  if (check.foundNothing) return plannedFiles({ expect }).length > 0;
  return check.status !== 'ok' && !unrunnable(check);
}

/**
 * A check the shell could not run at all (not found, or not executable: exit 127 or 126) says nothing of the step:
 * the Planner named a command this machine does not have. It is shown in the step's calls, and not held against it.
 */
export const unrunnable = (check: CallOutcome) => /^exit code: 12[67]\b/.test(check.text);

/**
 * The files of the step's `expect.changes` that none of its calls changed, and its folders (`logs/`) that none made,
 * removed or changed anything in. A name the step wrote into a file it changed is a value the plan took for a file
 * (`changes: ["config.ini", "db.internal"]` for "point config.ini at host db.internal"): it is not asked of the step
 * as a file. A file where a folder was to be is no change to the folder.
 */
export function unchangedFiles(calls: readonly CallOutcome[], expect?: StepExpect): string[] {
  const paths = calls.flatMap((c) => c.changed ?? []);
  // A command reports a folder it made or removed with a "/" after its name (tools/checkpoints/recorder.ts).
  const files = new Set(paths.filter((p) => !p.endsWith('/')).map(plainPath));
  const folders = new Set(paths.filter((p) => p.endsWith('/')).map(plainPath));
  const written = calls.flatMap((c) => (c.change ? addedLines(c.change.diff) : [])).join('\n');
  const unchanged = plannedFiles({ expect }).filter((p) => !files.has(p) && !(files.size && namesInText(written, p)));
  const untouched = plannedFolders({ expect }).filter(
    (d) => ![...folders].some((p) => isWithin(d, p)) && ![...files].some((p) => p !== d && isWithin(d, p))
  );
  return [...unchanged, ...untouched.map((d) => `${d}/`)];
}

/** The lines a unified diff adds (its `+` lines, not the `+++` header). */
function addedLines(diff: string): string[] {
  return diff
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1));
}

/** Whether `text` holds `name` whole: not inside a longer name or path. */
function namesInText(text: string, name: string): boolean {
  const edge = /[\w./-]/;
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    const before = text[at - 1];
    // A full stop after it ends a sentence, not the name.
    const end = text[at + name.length] === '.' && !/\w/.test(text[at + name.length + 1] ?? '') ? 1 : 0;
    const after = text[at + name.length + end];
    if ((before === undefined || !edge.test(before)) && (after === undefined || !edge.test(after))) return true;
  }
  return false;
}

/**
 * The command Klea runs to check a step, or null: none asked, or none can run (read-only access), or the step's
 * own last call ran that very command after its last change (its outcome is the check's).
 */
export function checkToRun(expect: StepExpect | undefined, readOnly: boolean): string | null {
  const command = expect?.check?.trim();
  return command && !readOnly ? command : null;
}

/** The step's last call, when it ran `command` and nothing changed after it: the check's outcome already. */
export function ownCheck(
  made: ReadonlyArray<{ call: { qualifiedName: string; args: Record<string, unknown> }; outcome: CallOutcome }>,
  command: string
): CallOutcome | null {
  const last = made[made.length - 1];
  if (!last || last.call.qualifiedName !== 'workspace__run_command') return null;
  const cmd = typeof last.call.args.command === 'string' ? last.call.args.command.trim() : '';
  const cwd = last.call.args.cwd;
  return cmd === command && (cwd === undefined || cwd === '.' || cwd === '') ? last.outcome : null;
}
