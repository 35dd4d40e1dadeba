/**
 * The small profile's help with the files a plan is to change (docs/models.md): pure functions over the plan's
 * structure, the project's listing and the file names the texts hold, never their words.
 *
 * - `requestedNewFiles`: a new file the request names that no step plans to create goes to a step.
 * - `thinkingSteps`: a step that works over other steps' results and names no file needs no tool (over data files:
 *   such steps are one step, worked out by a program).
 * - `sameFileSteps`: steps that are to change the same files are one step.
 * - `followUpSteps`: a step before or after a change that names only the changed files, and is to change and check
 *   nothing, is part of the change.
 * - `checksAfterChanges`: a step that does not wait for the change a check is the evidence of does not run that check.
 * - `unnamedChanges`: a file of the project no text of the task names is not asked of a step as a change.
 * - `changesForFailedCheck`: a new plan after a failed check that changes nothing changes the files the request names.
 * - `valuesAsChanges`: a step whose planned changes were all values, not files, changes the files its instruction names.
 */
import { changesSomething, plainPath, plannedFiles, withExpect, type Plan, type PlanStep } from '../../common/plan';
import { namedByStem, namedFiles, newFileNames } from './named-files';
import { isDataFile } from './program';
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
 * `expect.changes` holds given to a step: the first whose instruction names it, else every step that needs a tool,
 * runs no check and is to change nothing (`sameFileSteps` then makes them one), else the first that needs a tool.
 * A small Planner splits "write a script that …" into the script's own steps (make the folder, copy the files; read
 * the data, print the result) and plans the script itself nowhere, so no step writes it; given to the first of them
 * only, the script did only what that step said (it made the folder and copied nothing). Not for a request put as a question (`isQuestion`): a file it names that is not there is one it
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
    const naming = tooling.find((s) => filesNamedIn(s.instruction, files).includes(file));
    const idle = tooling.filter((s) => !s.expect?.check && !changesSomething(s));
    const targets = naming ? [naming] : idle.length ? idle : tooling.slice(0, 1);
    if (!targets.length) break;
    steps = steps.map((s) => (targets.includes(s) ? withChanges(s, [...(s.expect?.changes ?? []), file]) : s));
    for (const target of targets)
      repairs.push(`step "${target.id}": the request names the new file ${file}, which no step was to create`);
  }
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with each step that works over other steps' results marked as one that needs no tool: it needs a tool
 * by its plan, yet expects nothing (no files to change, no check), names no file, and every step it depends on
 * names a file of the project or works over results itself. A small Planner splits a question about a file into
 * "read app.py", "find the handlers", "count them", each with a tool; the picks for the last two found no call to
 * make (a listing of the file, failed) and the answer came from nothing. As a step without a tool it answers from
 * what its dependencies returned. Where the files they work on are data (./program: a table, records, lines), the
 * steps keep their tool and are joined into one instead (`joinSteps`), for a program to work it all out in one go: a
 * small model that filters and counts records by eye gets it wrong. Only meaningful with a complete listing.
 */
export function thinkingSteps(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const named = new Map(plan.steps.map((s) => [s.id, namedFiles(files, s.instruction)]));
  const readsFile = new Set(plan.steps.filter((s) => named.get(s.id)!.length).map((s) => s.id));
  const candidate = (s: PlanStep) =>
    s.needs_tool &&
    s.depends_on.length > 0 &&
    !changesSomething(s) &&
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
  // The files a thinking step works over: those the steps it builds on name, through other thinking steps.
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const over = (id: string, seen = new Set<string>()): string[] =>
    byId.get(id)!.depends_on.flatMap((d) => {
      if (seen.has(d)) return [];
      seen.add(d);
      return thinking.has(d) ? over(d, seen) : (named.get(d) ?? []);
    });
  const computing = new Set([...thinking].filter((id) => over(id).some(isDataFile)));
  const steps = plan.steps.map((s) => (thinking.has(s.id) && !computing.has(s.id) ? { ...s, needs_tool: false } : s));
  const repairs = plan.steps
    .filter((s) => thinking.has(s.id) && !computing.has(s.id))
    .map((s) => `step "${s.id}" works over the results of ${s.depends_on.join(', ')} and names no file: no tool`);
  const joined = joinSteps(
    { ...plan, steps },
    (a, b) => computing.has(a.id) && computing.has(b.id),
    (a, b) => `steps "${a.id}" and "${b.id}" work over the same data: one step, for one program`
  );
  return { plan: joined.plan, repairs: [...repairs, ...joined.repairs] };
}

/** The longest merged title and instruction a plan step may hold (`PlanStepSchema`). */
const MAX_TITLE = 200;
const MAX_INSTRUCTION = 4000;
const MAX_CHECK = 500;

const sameFiles = (a: readonly string[], b: readonly string[]) =>
  a.length > 0 && a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** Whether `from` depends on `on`, directly or through other steps. */
function dependsOn(steps: ReadonlyMap<string, PlanStep>, from: string, on: string, seen = new Set<string>()): boolean {
  for (const d of steps.get(from)?.depends_on ?? []) {
    if (d === on) return true;
    if (!seen.has(d)) {
      seen.add(d);
      if (dependsOn(steps, d, on, seen)) return true;
    }
  }
  return false;
}

/** The `expect` of two steps joined: the files either changes, and their checks as one. */
function withPlanned(first: PlanStep, later: PlanStep, check: string | undefined): Partial<PlanStep> {
  const all = [...(first.expect?.changes ?? []), ...(later.expect?.changes ?? [])];
  const changes = all.filter((c, i) => all.findIndex((d) => plainPath(d) === plainPath(c)) === i);
  const expect = { ...first.expect, ...(changes.length ? { changes } : {}), ...(check ? { check } : {}) };
  return Object.keys(expect).length ? { expect } : {};
}

/** Two checks as one command (the same check once), or null when they do not fit in one. */
function bothChecks(a: string | undefined, b: string | undefined): string | null | undefined {
  const checks = [...new Set([a?.trim(), b?.trim()].filter((c): c is string => !!c))];
  const joined = checks.map((c) => (checks.length > 1 ? `(${c})` : c)).join(' && ');
  if (joined.length > MAX_CHECK) return null;
  return joined || undefined;
}

/**
 * The plan with the steps that are to change the same files (the same `expect.changes`, as a set) made one step, at
 * the first of them (`joinSteps`). A small Planner splits one change of one file into "open the file", "find the
 * line", "change it", "save it", each expecting the file changed: the first wrote the whole change from the request
 * and the next found nothing left to change (not achieved), or invented more ("add the following content:" with no
 * content: a second line in a hello-world script), or spent its rounds changing nothing.
 */
export function sameFileSteps(plan: Plan): { plan: Plan; repairs: string[] } {
  return joinSteps(
    plan,
    (a, b) => sameFiles(plannedFiles(a), plannedFiles(b)),
    (a) => `change the same files (${plannedFiles(a).join(', ')}): one step`
  );
}

/**
 * The plan with each step that is to change nothing and check nothing, and whose texts name only files of the project
 * a step it depends on, or one that depends on it, is to change, joined with that step (`joinSteps`). A small Planner
 * wraps a one-line change in a step that reads the file before it and one that writes the file back after it; each
 * was shown the file and the request, and each wrote the change again, several times over, the last flipping the
 * file between two layouts. Joined, what they ask is done by the step that changes the file, and judged by that
 * change.
 */
export function followUpSteps(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  /** Whether `step` is to change and check nothing, and names only files `changer` is to change. */
  const about = (step: PlanStep, changer: PlanStep) => {
    if (changesSomething(step) || step.expect?.check?.trim() || !step.needs_tool || !changesSomething(changer))
      return false;
    const named = namedFiles(files, `${step.title}\n${step.instruction}`);
    const changed = new Set(plannedFiles(changer));
    return named.length > 0 && named.every((f) => changed.has(plainPath(f)));
  };
  return joinSteps(
    plan,
    (first, later) => about(later, first) || about(first, later),
    (first, later) =>
      `name only files step "${about(later, first) ? first.id : later.id}" changes, and the other is to change ` +
      `and check nothing: one step`
  );
}

/**
 * The plan with each pair of steps that `together` holds made one step, at the first of them: its instruction is
 * theirs in order, its check both checks, its questions theirs, and the steps that depended on any of them depend on
 * it. A later step joins only when every step it depends on is the first one or one the first depends on, and the
 * first does not depend on it through another step, so no order the plan gave is lost and no cycle is made.
 * `why(first, later)` ends the repair line: `steps "a" and "b" <why>` (or is the whole line when it starts so).
 */
function joinSteps(
  plan: Plan,
  together: (first: PlanStep, later: PlanStep) => boolean,
  why: (first: PlanStep, later: PlanStep) => string
): { plan: Plan; repairs: string[] } {
  let steps = [...plan.steps];
  const repairs: string[] = [];
  /** Steps joined into another: their dependents depend on that one. */
  const joinedInto = new Map<string, string>();
  for (let i = 0; i < steps.length; i++) {
    for (let j = i + 1; j < steps.length; j++) {
      const first = steps[i];
      const later = steps[j];
      if (!together(first, later)) continue;
      const byId = new Map(steps.map((s) => [s.id, s]));
      const allowed = new Set([first.id, ...first.depends_on]);
      if (!later.depends_on.every((d) => allowed.has(d)) || dependsOn(byId, first.id, later.id)) continue;
      const check = bothChecks(first.expect?.check, later.expect?.check);
      const instruction = `${first.instruction.trim()}\n${later.instruction.trim()}`;
      const questions = [...new Set([...first.questions, ...later.questions])];
      if (check === null || instruction.length > MAX_INSTRUCTION || questions.length > 5) continue;
      const title = `${first.title}; ${later.title}`;
      const merged: PlanStep = {
        ...first,
        title: title.length > MAX_TITLE ? first.title : title,
        instruction,
        needs_tool: first.needs_tool || later.needs_tool,
        questions,
        ...withPlanned(first, later, check),
      };
      joinedInto.set(later.id, first.id);
      const reason = why(first, later);
      repairs.push(reason.startsWith('steps ') ? reason : `steps "${first.id}" and "${later.id}" ${reason}`);
      steps = steps
        .filter((s) => s !== later)
        .map((s) => {
          if (s === first) return merged;
          if (!s.depends_on.includes(later.id)) return s;
          const depends_on = [...new Set(s.depends_on.map((d) => (d === later.id ? first.id : d)))];
          return { ...s, depends_on };
        });
      j--;
    }
  }
  if (!joinedInto.size) return { plan, repairs };
  const follow = (id: string): string => (joinedInto.has(id) ? follow(joinedInto.get(id)!) : id);
  const after = [...new Set(plan.review.after_step_ids.map(follow))];
  return { plan: { ...plan, steps, review: { ...plan.review, after_step_ids: after } }, repairs };
}

/**
 * The plan with the check left out of each step that is to change nothing when a step it does not wait for, directly
 * or through others, is to change files and that step, or one that waits for it, runs the same check: the check is
 * the evidence of that change, and before it (or beside it) it fails by design. A small Planner gave finding the bug,
 * fixing the file and running the tests each the failing test as their check: the first step's check failed (the bug
 * is not fixed yet), its repair rounds found nothing to do, and the task was planned again from a step that could
 * never pass. Planned again, the same model put the fix beside the finding and the run after the fix, with the same
 * result.
 */
export function checksAfterChanges(plan: Plan): { plan: Plan; repairs: string[] } {
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    if (!check || changesSomething(s)) return s;
    const sameCheck = (t: PlanStep) => t !== s && t.expect?.check?.trim() === check;
    // The step that runs the check once step `u` has changed files: `u` itself, or one that waits for it.
    const runnerAfter = (u: PlanStep) =>
      sameCheck(u) ? u : plan.steps.find((t) => sameCheck(t) && dependsOn(byId, t.id, u.id));
    const change = plan.steps.find((u) => changesSomething(u) && !dependsOn(byId, s.id, u.id) && runnerAfter(u));
    if (!change) return s;
    const runner = runnerAfter(change)!;
    repairs.push(
      runner === change
        ? `step "${s.id}": its check is that of step "${change.id}", which is to make it pass: left to that step`
        : `step "${s.id}": its check is that of step "${runner.id}", run after step "${change.id}" changes files: left to that step`
    );
    const { check: _check, ...others } = s.expect ?? {};
    return withExpect(s, others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with each file of the project left out of a step's `expect.changes` when no text of the task names it:
 * not the request, the plan's goal, nor the step's own title or instruction. The Planner took it from the listing
 * with nothing said of what to do to it: with the 1.5B model, a request to create an ignore file planned the
 * project's one script as a change beside it, and the step wrote the ignore patterns over the script. A new file is left as planned, and
 * the step may still change any file it is led to (this only stops asking it to). A file named without its extension
 * ("our readme") is named. Only meaningful with a complete
 * listing.
 */
export function unnamedChanges(
  plan: Plan,
  request: string,
  files: readonly string[]
): { plan: Plan; repairs: string[] } {
  const existing = new Set(files);
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const texts = [request, plan.goal, s.title, s.instruction];
    const named = (f: string) => texts.some((t) => namedFiles([f], t).length > 0 || namedByStem(f, t));
    const gone = plannedFiles(s).filter((f) => existing.has(f) && !named(f));
    if (!gone.length) return s;
    repairs.push(
      `step "${s.id}": expect.changes named ${gone.join(', ')}, which neither the request nor the step names: left out`
    );
    return withoutPlanned(s, gone);
  });
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with each step whose every `expect.changes` entry named no file (`before`: the plan as the Planner wrote
 * it; `plan`: with those entries left out) to change the files of the project its instruction names. The Planner
 * meant the step to change something and wrote what it changes instead of where: with the 0.5B model,
 * `["DEBUG = false"]` for "In .env, set DEBUG to false", `["<COPYRIGHT HOLDER>"]` for a LICENSE. Left with no
 * change to make, the step was judged done by the read it began with, and nothing was changed. Not a glob: with the
 * 1.5B model, `["*.DS_Store"]` for "delete every .DS_Store file" made the step change `.DS_Store`, and it edited the
 * file instead of deleting them all. Not for a request put as a question (`isQuestion`): what it asks to
 * change is for `keepAskedChanges` to say. Only meaningful with a complete listing.
 */
export function valuesAsChanges(
  before: Plan,
  plan: Plan,
  request: string,
  files: readonly string[]
): { plan: Plan; repairs: string[] } {
  if (isQuestion(request)) return { plan, repairs: [] };
  const planned = new Map(before.steps.map((s) => [s.id, s.expect?.changes ?? []]));
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const values = planned.get(s.id) ?? [];
    // A glob (`*.DS_Store`) names files, not a value: which of them a step that deletes them changes is its own.
    if (!values.length || values.some((v) => /[*?[\]{}]/.test(v)) || s.expect?.changes?.length || !s.needs_tool)
      return s;
    const named = namedFiles(files, s.instruction);
    if (!named.length) return s;
    repairs.push(
      `step "${s.id}": expect.changes named ${values.map((v) => JSON.stringify(v)).join(', ')}, no file; ` +
        `its instruction names ${named.join(', ')}: to change`
    );
    return withChanges(s, named);
  });
  return { plan: { ...plan, steps }, repairs };
}

/** A step with `files` left out of its `expect.changes` (an `expect` left with nothing in it goes). */
export function withoutPlanned(step: PlanStep, files: readonly string[]): PlanStep {
  const changes = (step.expect?.changes ?? []).filter((c) => !files.includes(plainPath(c)));
  const { changes: _changes, ...others } = step.expect ?? {};
  return withExpect(step, changes.length ? { ...others, changes } : others);
}

/**
 * A new plan, after a step's check failed, that is to change no file at all: the steps that run that check again are
 * to change the files the task has changed so far (`changed`: what it wrote is what fails), or, where it has changed
 * none, the project's files the request names other than those the check itself names (the test or script it runs).
 * A check passes only once something changes, and a plan that only runs it again fails the same way: with the 1.5B
 * model, a request to fix one file and run a script that proves it was planned as steps that only ran scripts, and
 * each replan ran the failing check again until none were left. Not for a request put as a question (`isQuestion`), nor when there
 * is no such file (nothing says which file to change).
 */
export function changesForFailedCheck(
  plan: Plan,
  failedCheck: string,
  request: string,
  files: readonly string[],
  changed: readonly string[] = []
): { plan: Plan; repairs: string[] } {
  const check = failedCheck.trim();
  const unchanged = { plan, repairs: [] };
  if (!check || isQuestion(request) || plan.steps.some((s) => changesSomething(s))) return unchanged;
  const checked = new Set(namedFiles(files, check));
  const existing = new Set(files);
  const ours = changed.map(plainPath).filter((f) => existing.has(f));
  const toChange = ours.length ? ours : namedFiles(files, request).filter((f) => !checked.has(f));
  const rerun = plan.steps.filter((s) => s.needs_tool && s.expect?.check?.trim() === check);
  if (!toChange.length || !rerun.length) return unchanged;
  const steps = plan.steps.map((s) => (rerun.includes(s) ? withChanges(s, toChange) : s));
  const repairs = rerun.map(
    (s) =>
      `step "${s.id}": its check \`${check}\` failed before and the plan changes no file: ` +
      `it is to change ${toChange.join(', ')}, ${ours.length ? 'which the task changed' : 'which the request names'}`
  );
  return { plan: { ...plan, steps }, repairs };
}
