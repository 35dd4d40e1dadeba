/** Plans and steps as the Planner writes them, for unit tests of what Klea does with a plan. */
import type { Plan, PlanStep } from '../../common/plan';

export const planStep = (id: string, instruction: string, more: Partial<PlanStep> = {}): PlanStep => ({
  id,
  title: id,
  instruction,
  depends_on: [],
  needs_tool: true,
  questions: [],
  ...more,
});

export const planOf = (...steps: PlanStep[]): Plan => ({
  goal: 'g',
  steps,
  review: { before_work: false, after_step_ids: [] },
});
