/**
 * A first plan made to carry the user's request itself (pure: used by the Planner's activity).
 */
import type { Plan, PlanStep, RepairedPlan } from '../../common/plan';

/** Words that say nothing of what a step does, left out when comparing a step with the request. */
const FILLER = new Set(['a', 'an', 'the', 'to', 'in', 'of', 'and', 'then', 'it', 'its', 'that', 'this', 'me', 'my']);

/** A text's words, lower case, a plural's "s" dropped (so "TODOs" is "todo"). */
function wordsOf(text: string): Set<string> {
  const words = text.toLowerCase().match(/[a-z0-9_]+/g) ?? [];
  return new Set(words.filter((w) => !FILLER.has(w)).map((w) => (w.length > 3 ? w.replace(/s$/, '') : w)));
}

/**
 * A first plan for a request with no conversation before it, made to carry the request itself: a plan of one step
 * gets the request word for word as its instruction, and a plan whose steps only split the request (each step's
 * instruction in the request's own words) becomes that one step. A step can make several calls, and a small
 * Planner's rewording loses what the request asks ("How many lines are in data.txt?" became "Find lines in
 * data.txt"; "Read calc.py and tell me what add(2, 3) returns" became "Read calc.py" and "Add 2 and 3"). Steps
 * that bring words of their own are the Planner's own decomposition and stay. Told in the plan's repairs.
 */
export function planOfRequest(plan: Plan, request: string): RepairedPlan {
  const text = request.trim();
  if (!text || text.length > 4000) return { plan, repairs: [] };
  const requestWords = wordsOf(text);
  const pieces = plan.steps.every((s) => [...wordsOf(s.instruction)].every((w) => requestWords.has(w)));
  if (plan.steps.length > 1 && !pieces) return { plan, repairs: [] };
  const [first] = plan.steps;
  if (plan.steps.length === 1 && first.instruction === text) return { plan, repairs: [] };
  const questions = [...new Set(plan.steps.flatMap((s) => s.questions))].slice(0, 5);
  const step: PlanStep = {
    id: first.id,
    title: first.title,
    instruction: text,
    depends_on: [],
    needs_tool: plan.steps.some((s) => s.needs_tool),
    questions,
  };
  const review = {
    before_work: plan.review.before_work,
    after_step_ids: plan.review.after_step_ids.length ? [first.id] : [],
  };
  const repair =
    plan.steps.length === 1
      ? `the plan's one step carries the request word for word (it said "${first.instruction.slice(0, 200)}")`
      : `steps ${plan.steps.map((s) => s.id).join(', ')} only split the request: one step carries it word for word`;
  return { plan: { ...plan, steps: [step], review }, repairs: [repair] };
}
