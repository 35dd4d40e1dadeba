/**
 * Folders a plan names (`expect.changes` holds `logs/`), for the small profile (./small-model): a folder is made by a
 * command, never written as a file.
 */
import { plainPath, plannedFolders, type StepExpect } from '../../common/plan';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { shellQuoted } from './shell-words';
import { callWithoutPick, CHANGES_FILE, RUN_COMMAND } from './small-model';

/**
 * The calls with each `write_file` or `edit_file` aimed at a folder its step's plan names (`expect.changes` holds
 * `logs/`, the call's path is `logs`) made a `run_command` that makes that folder, and a repair line for each. With
 * the 1.5B model, "create a directory named logs" was written as an empty file `logs`, and the files that were to move
 * into it then could not. Without `run_command` (read-only access), the call stays as it was made.
 */
export function foldersNotFiles(
  steps: ReadonlyArray<{ id: string; expect?: StepExpect }>,
  calls: readonly PickedCall[],
  tools: readonly ToolDescriptor[]
): { calls: PickedCall[]; repairs: Array<{ stepId: string; repair: string }> } {
  const runner = tools.find((t) => t.qualifiedName === RUN_COMMAND);
  const folders = new Map(steps.map((s) => [s.id, new Set(plannedFolders(s))]));
  const repairs: Array<{ stepId: string; repair: string }> = [];
  const out = calls.map((c) => {
    const target = typeof c.args.path === 'string' ? plainPath(c.args.path) : '';
    if (!runner || !CHANGES_FILE.has(c.qualifiedName) || !folders.get(c.stepId)?.has(target)) return c;
    repairs.push({
      stepId: c.stepId,
      repair: `${target}: the plan has it as a folder; made with mkdir, not written as a file`,
    });
    const made = callWithoutPick(runner, c.stepId, { command: `mkdir -p -- ${shellQuoted(target)}` });
    return c.stepDone === false ? { ...made, stepDone: false as const } : made;
  });
  return { calls: out, repairs };
}
