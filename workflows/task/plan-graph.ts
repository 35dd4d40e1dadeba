/** The plan as a dependency graph: which steps can run now, and in which order conflicting tool calls go. */
import type { Plan, PlanStep } from '../../common/plan';
import type { StepStatus } from '../../common/task';

export const isTerminal = (s: StepStatus) => s === 'done' || s === 'failed';

/** Pending steps whose dependencies have all finished (a failed dependency counts: its result says why). */
export function readySteps(steps: readonly PlanStep[], status: ReadonlyMap<string, StepStatus>): PlanStep[] {
  return steps.filter(
    (s) => status.get(s.id) === 'pending' && s.depends_on.every((d) => isTerminal(status.get(d) ?? 'done'))
  );
}

export function allFinished(steps: readonly PlanStep[], status: ReadonlyMap<string, StepStatus>): boolean {
  return steps.every((s) => isTerminal(status.get(s.id) ?? 'pending'));
}

/** The ready steps that can run now, and those among them that first need the user's answers to their questions. */
export function nextRound(
  steps: readonly PlanStep[],
  status: ReadonlyMap<string, StepStatus>,
  isAnswered: (stepId: string) => boolean
): { runnable: PlanStep[]; asking: PlanStep[] } {
  const ready = readySteps(steps, status);
  const asking = ready.filter((s) => s.questions.length > 0 && !isAnswered(s.id));
  return { runnable: ready.filter((s) => !asking.includes(s)), asking };
}

/** The steps still to run that depend on step `id`. */
export function pendingDependents(
  steps: readonly PlanStep[],
  status: ReadonlyMap<string, StepStatus>,
  id: string
): string[] {
  return steps.filter((s) => s.depends_on.includes(id) && status.get(s.id) === 'pending').map((s) => s.id);
}

/**
 * Whether a new plan only repeats the plan before it: each of its steps is one of the earlier plan's (the same
 * instruction, expectations and need of a tool; ids, titles and order aside), and one of them is a step that was
 * tried and failed (`failed`). A model at temperature 0 that writes the plan again after a step failed runs that step
 * again with the same instruction, and it fails the same way. A plan of the earlier steps not tried yet is new work.
 */
export function repeatsFailedPlan(next: Plan, before: Plan | null, failed: (s: PlanStep) => boolean): boolean {
  if (!before) return false;
  const key = (s: PlanStep) =>
    JSON.stringify([s.instruction.trim(), s.needs_tool, s.expect?.changes ?? [], s.expect?.check ?? null]);
  const earlier = new Map(before.steps.map((s) => [key(s), s]));
  const same = next.steps.map((s) => earlier.get(key(s)));
  return same.every((s) => s !== undefined) && same.some((s) => failed(s!));
}
