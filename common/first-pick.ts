/**
 * The first round's tool picks, made by the Planner's activity right after it writes the first plan, when nothing
 * has to happen between the plan and the first round: no review before work (neither the plan nor the review
 * policy asks for one), the token budget not reached, and steps ready at once that need a tool. That saves every
 * task one Temporal round trip (an activity and a workflow task) before its first tool call.
 *
 * The picks are the same `pick_tools` call the workflow would have scheduled, for the same steps with the same
 * prompt: a first round's steps have no dependency results, answers or earlier failures. The workflow still decides:
 * it uses the picks only for a batch of exactly these steps, and every call still passes its permission gate.
 * Pure: used by the activity (what to pick) and by the workflow (whether to use it).
 */
import type { GuardedPath } from './path-guard';
import type { Plan, PlanStep } from './plan';
import type { MeteredUsage } from './model-protocol';
import type { PickedCall } from './tools';

/** What the workflow tells the Planner's activity when it may pick the first round's tools too. */
export interface FirstPickAsk {
  /** Tokens the task may still use before it pauses for a budget review (null: no budget). */
  budgetLeft: number | null;
}

/** The picks for the first round's tool steps, with each call's paths checked, as the pick activity returns them. */
export interface FirstPick {
  stepIds: string[];
  calls: PickedCall[];
  noSuitable: Array<{ stepId: string; reason: string }>;
  /** `modelCalls` when the pick asked the model more than once. */
  usage: MeteredUsage;
  guarded: GuardedPath[][];
  /** What the pick changed in the model's calls, for each step's `repairs`. */
  repairs?: PickRepair[];
}

/** One thing a pick changed in the calls the model made for a step (said in the step's `repairs`). */
export interface PickRepair {
  stepId: string;
  repair: string;
}

/** A pick's repairs for step `stepId`. */
export const repairsFor = (repairs: readonly PickRepair[] | undefined, stepId: string): string[] =>
  (repairs ?? []).filter((r) => r.stepId === stepId).map((r) => r.repair);

/**
 * The steps to pick tools for with the plan: those of the first round (no dependencies, no questions) that need a
 * tool, or none when the workflow will pause before the first round (a review before work, or a plan that used up
 * the budget: `planTokens` is what writing it cost).
 */
export function firstPickSteps(plan: Plan, ask: FirstPickAsk, planTokens: number): PlanStep[] {
  if (plan.review.before_work) return [];
  if (ask.budgetLeft !== null && planTokens >= ask.budgetLeft) return [];
  return plan.steps.filter((s) => s.needs_tool && s.depends_on.length === 0 && s.questions.length === 0);
}

/** Whether `pick` was made for exactly these steps (in any order). */
export function pickedFor(pick: Pick<FirstPick, 'stepIds'>, steps: readonly Pick<PlanStep, 'id'>[]): boolean {
  return pick.stepIds.length === steps.length && steps.every((s) => pick.stepIds.includes(s.id));
}
