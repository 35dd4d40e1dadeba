/** A first plan made to carry the request itself: a small Planner's rewording or splitting loses what it asks. */
import { planOfRequest } from '../../activities/llm/plan-of-request';
import type { Plan, PlanStep } from '../../common/plan';

const step = (id: string, instruction: string, more: Partial<PlanStep> = {}): PlanStep => ({
  id,
  title: `do ${id}`,
  instruction,
  depends_on: [],
  needs_tool: true,
  questions: [],
  ...more,
});
const plan = (steps: PlanStep[], after: string[] = []): Plan => ({
  goal: 'g',
  steps,
  review: { before_work: false, after_step_ids: after },
});

describe('a first plan that carries the request', () => {
  it('a one-step plan gets the request word for word, and says what it said', () => {
    const r = planOfRequest(plan([step('s1', 'Find lines in data.txt.')]), 'How many lines are in data.txt?');
    expect(r.plan.steps).toEqual([step('s1', 'How many lines are in data.txt?')]);
    expect(r.repairs).toEqual([
      `the plan's one step carries the request word for word (it said "Find lines in data.txt.")`,
    ]);
    expect(planOfRequest(r.plan, 'How many lines are in data.txt?').repairs).toEqual([]);
  });

  it('steps that only split the request become one step, keeping questions, tool use and a review after it', () => {
    const request = 'Read calc.py and tell me what add(2, 3) returns.';
    const r = planOfRequest(
      plan(
        [
          step('s1', 'Read calc.py.', { questions: ['Which Python?'] }),
          step('s2', 'Add 2 and 3.', { depends_on: ['s1'], needs_tool: false }),
        ],
        ['s2']
      ),
      request
    );
    expect(r.plan.steps).toEqual([step('s1', request, { questions: ['Which Python?'] })]);
    expect(r.plan.review.after_step_ids).toEqual(['s1']);
    expect(r.repairs).toEqual(['steps s1, s2 only split the request: one step carries it word for word']);
  });

  it("steps with words of their own are the Planner's decomposition, and stay", () => {
    const p = plan([step('s1', 'Research the topic online'), step('s2', 'Write the report to report.md')]);
    expect(planOfRequest(p, 'Write a report on solar panels')).toEqual({ plan: p, repairs: [] });
  });
});
