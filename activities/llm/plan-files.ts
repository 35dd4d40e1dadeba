/**
 * The small profile's help with the files a plan is to change (docs/models.md): pure functions over the plan's
 * structure, the project's listing and the file names the texts hold, never their words.
 *
 * - `requestedNewFiles`: a new file the request names that no step plans to create goes to a step.
 */
import { plannedFiles, type Plan, type PlanStep } from '../../common/plan';
import { namedFiles, newFileNames } from './named-files';
import { isQuestion } from './small-model';

/** The files a text names: the project's files it names, then the new files it names. */
const filesNamedIn = (text: string, files: readonly string[]) => [
  ...new Set([...namedFiles(files, text), ...newFileNames(files, text)]),
];

const withChanges = (step: PlanStep, changes: string[]): PlanStep => ({
  ...step,
  expect: { ...step.expect, changes },
});

/**
 * The plan with each new file the request names (a file to create: not in the project) that no step's
 * `expect.changes` holds given to a step: the first whose instruction names it, else the first that needs a tool,
 * runs no check and is to change nothing, else the first that needs a tool. A small Planner splits "write a script
 * that …" into the script's own steps (read the data, print the result) and plans the script itself nowhere, so no
 * step writes it. Not for a request put as a question (`isQuestion`): a file it names that is not there is one it
 * asks about. Only meaningful with a complete listing.
 */
export function requestedNewFiles(
  plan: Plan,
  request: string,
  files: readonly string[]
): { plan: Plan; repairs: string[] } {
  if (isQuestion(request)) return { plan, repairs: [] };
  const planned = new Set(plan.steps.flatMap((s) => plannedFiles(s)));
  const missing = newFileNames(files, request).filter((f) => !planned.has(f));
  const repairs: string[] = [];
  let steps = plan.steps;
  for (const file of missing) {
    const tooling = steps.filter((s) => s.needs_tool);
    const target =
      tooling.find((s) => filesNamedIn(s.instruction, files).includes(file)) ??
      tooling.find((s) => !s.expect?.check && !plannedFiles(s).length) ??
      tooling[0];
    if (!target) break;
    steps = steps.map((s) => (s === target ? withChanges(s, [...plannedFiles(s), file]) : s));
    repairs.push(`step "${target.id}": the request names the new file ${file}, which no step was to create`);
  }
  return { plan: { ...plan, steps }, repairs };
}
