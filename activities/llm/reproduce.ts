/**
 * Small profile (docs/models.md): a step that is to fix files first runs the check that is to pass once it has,
 * so its pick and its whole-file writes see what is wrong before they change anything.
 */
import { changesSomething, plainPath, plannedFiles, type StepExpect } from '../../common/plan';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { namedFiles, newFileNames } from './named-files';
import { piped } from './shell-words';
import { callWithoutPick, RUN_COMMAND } from './small-model';

/** What `reproducesFirst` looks at of a step. */
export interface FixingStep {
  id: string;
  expect?: StepExpect;
  /** The checks of the steps that depend on this one: what is to pass once its change is made. */
  laterChecks?: readonly string[];
  earlierCalls?: ReadonlyArray<unknown>;
  notDone?: string;
}

/**
 * For each step that has made no call yet and is to change files the project has, a run of the check that is to
 * pass once it has (its own, else that of a step after it) as its first call, without a pick and left open: the
 * step's next pick and its writes then see the failure (as a call made so far, not as missing evidence), as a
 * developer runs the failing test before fixing the code. A small model asked to fix a function so that a named test
 * passes rewrote the file three times without anything having shown it the test or its error, and each rewrite left
 * the file as it was.
 *
 * Only a check that runs files of the project the step does not change (a test of the code it fixes): a check that
 * runs the very script the step is to fix (a clean-up script deleting the wrong files, say) is not run before the
 * fix. Nor one that names files not there yet, nor one that pipes output into another command (`piped`). Only where
 * `run_command` is offered; the run passes the permission gate like any command.
 */
export function reproducesFirst(
  tools: readonly ToolDescriptor[],
  steps: readonly FixingStep[],
  files: readonly string[] | null | undefined
): PickedCall[] {
  const runner = tools.find((t) => t.qualifiedName === RUN_COMMAND);
  if (!runner || !files?.length) return [];
  const existing = new Set(files);
  const calls: PickedCall[] = [];
  for (const s of steps) {
    if (s.earlierCalls?.length || s.notDone || !changesSomething(s)) continue;
    const changed = plannedFiles(s).map(plainPath);
    if (!changed.some((f) => existing.has(f))) continue;
    const check = [s.expect?.check, ...(s.laterChecks ?? [])]
      .map((c) => c?.trim() ?? '')
      .find((c) => c && reproduces(c, changed, files));
    // Left open: its failure is what the step is to fix, not evidence against it.
    if (check) calls.push({ ...callWithoutPick(runner, s.id, { command: check }), stepDone: false });
  }
  return calls;
}

/** Whether `check` runs files of the project, none of them one the step changes, and names no file not there. */
function reproduces(check: string, changed: readonly string[], files: readonly string[]): boolean {
  if (piped(check) || newFileNames(files, check).length) return false;
  const runs = namedFiles(files, check);
  return runs.length > 0 && !runs.some((f) => changed.includes(plainPath(f)));
}
