/**
 * The small profile's help with the files a plan is to change (docs/models.md): pure functions over the plan's
 * structure, the project's listing and the file names the texts hold, never their words.
 *
 * - `requestedNewFiles`: a new file the request names that no step plans to create goes to a step.
 * - `thinkingSteps`: a step that works over other steps' results and names no file needs no tool.
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

/**
 * The plan with each step that works over other steps' results marked as one that needs no tool: it needs a tool
 * by its plan, yet expects nothing (no files to change, no check), names no file, and every step it depends on
 * names a file of the project or works over results itself. A small Planner splits a question about a data file
 * into "read users.json", "filter the users", "count them", each with a tool; the picks for the last two found no
 * call to make (a listing of the data file, failed) and the answer came from nothing. As a step without a tool it
 * answers from what its dependencies returned. Only meaningful with a complete listing.
 */
export function thinkingSteps(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const readsFile = new Set(plan.steps.filter((s) => namedFiles(files, s.instruction).length).map((s) => s.id));
  const candidate = (s: PlanStep) =>
    s.needs_tool &&
    s.depends_on.length > 0 &&
    !plannedFiles(s).length &&
    !s.expect?.check?.trim() &&
    !filesNamedIn(s.instruction, files).length;
  // Until nothing changes: a step over a thinking step may think too, in whatever order the plan lists them.
  const thinking = new Set<string>();
  for (let grew = true; grew;) {
    grew = false;
    for (const s of plan.steps)
      if (!thinking.has(s.id) && candidate(s) && s.depends_on.every((d) => readsFile.has(d) || thinking.has(d))) {
        thinking.add(s.id);
        grew = true;
      }
  }
  const steps = plan.steps.map((s) => (thinking.has(s.id) ? { ...s, needs_tool: false } : s));
  const repairs = plan.steps
    .filter((s) => thinking.has(s.id))
    .map((s) => `step "${s.id}" works over the results of ${s.depends_on.join(', ')} and names no file: no tool`);
  return { plan: { ...plan, steps }, repairs };
}
