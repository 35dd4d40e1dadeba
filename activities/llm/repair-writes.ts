/**
 * `writesForFailure` (small profile, docs/models.md): in a repair round after a failed run, the file the failure is
 * in is written whole, from plain text, with the failure shown, where the model's pick would only run or read again.
 */
import { plainPath, plannedFiles, type StepExpect } from '../../common/plan';
import type { PickedCall } from '../../common/tools';
import { escape, isWhole, type NamedFile, type ReadCall } from './named-files';
import { CHANGES_FILE, plannedWrite, READ_FILE, RUN_COMMAND } from './small-model';

/** What `writesForFailure` looks at of a step. */
export interface FailureStep {
  id: string;
  /** What the evidence shows is not done (a repair round): the failed call's or check's output. */
  notDone?: string;
  /** The files of `expect.changes` its calls have not changed (`writesForUnchanged` writes those). */
  unchanged?: readonly string[];
  /** Files it names, as they are now. */
  files?: readonly NamedFile[];
  expect?: StepExpect;
  earlierCalls?: readonly ReadCall[];
  /** The files the task's finished steps changed. */
  taskChanged?: readonly string[];
}

/**
 * Whether `output` names the project file `path`: as written, or as the end of a longer path (a traceback gives
 * `/tmp/…/project/tests/test_x.py` for `tests/test_x.py`).
 */
export function namedInOutput(path: string, output: string): boolean {
  return new RegExp(`(?<![\\w.-])${escape(plainPath(path))}(?![\\w/-]|\\.\\w)`).test(output);
}

/**
 * The calls of a repair round with, for each step whose evidence is a failure (a check or a call that exited
 * non-zero) and whose pick would only run a command it ran already, read a file its prompt shows whole, or do
 * nothing, a `write_file` of the file the failure is in, for the whole-file writes to write with the failure shown.
 * That file is one the prompt shows the step whole and that the task has changed or the step's plan is to change:
 * the one the failure names, or the only such file. A file the task neither changed nor plans to change (the check
 * script, the user's own code a run only reports on) is never written. With the 1.5B model, a step that ran the new
 * tests it depended on saw `AssertionError: 125 != 130` from the test file an earlier step wrote, and ran the same
 * tests twice more; the task was planned again, and went past five minutes.
 */
export function writesForFailure(steps: readonly FailureStep[], calls: readonly PickedCall[]): PickedCall[] {
  let out = [...calls];
  for (const s of steps) {
    const failure = s.notDone;
    if (!failure || s.unchanged?.length) continue;
    const shown = (s.files ?? []).filter(isWhole);
    const ran = new Set((s.earlierCalls ?? []).flatMap((c) => (c.tool === RUN_COMMAND ? [commandOf(c.args)] : [])));
    if (s.expect?.check) ran.add(s.expect.check.trim());
    const shownPaths = new Set(shown.map((f) => plainPath(f.path)));
    const idle = (c: PickedCall) =>
      (c.qualifiedName === RUN_COMMAND && ran.has(commandOf(c.args))) ||
      (c.qualifiedName === READ_FILE && typeof c.args.path === 'string' && shownPaths.has(plainPath(c.args.path)));
    const own = out.filter((c) => c.stepId === s.id);
    if (own.some((c) => CHANGES_FILE.has(c.qualifiedName) || !idle(c))) continue;
    const theTasks = new Set(
      [...(s.taskChanged ?? []), ...(s.earlierCalls ?? []).flatMap((c) => c.changed ?? []), ...plannedFiles(s)].map(
        plainPath
      )
    );
    const mayChange = shown.filter((f) => theTasks.has(plainPath(f.path)));
    const named = mayChange.filter((f) => namedInOutput(f.path, failure));
    const target = named[0] ?? (mayChange.length === 1 ? mayChange[0] : undefined);
    if (!target) continue;
    out = [...out.filter((c) => c.stepId !== s.id), plannedWrite(s.id, target.path)];
  }
  return out;
}

const commandOf = (args: Record<string, unknown>) => (typeof args.command === 'string' ? args.command.trim() : '');
