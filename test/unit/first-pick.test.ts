/** The first round's tool picks made with the plan: for which steps, and when none are made. */
import { firstPickSteps, pickedFor } from '../../common/first-pick';
import type { Plan, PlanStep } from '../../common/plan';
import { nextRound } from '../../workflows/task/plan-graph';
import { PlanProgress } from '../../workflows/task/plan-progress';
import { plan as taskPlan, step as taskStep } from '../support/task-driver';

const step = (id: string, depends_on: string[] = [], extra: Partial<PlanStep> = {}): PlanStep =>
  taskStep(id, `do ${id}`, { depends_on, ...extra });
const plan = (steps: PlanStep[], before_work = false): Plan => taskPlan(steps, { before_work });
const ids = (steps: readonly PlanStep[]) => steps.map((s) => s.id);
const noBudget = { budgetLeft: null };

/** The tool steps of the first batch the workflow runs for a freshly adopted plan. */
function workflowFirstBatch(p: Plan): PlanStep[] {
  const progress = new PlanProgress();
  progress.adopt(p);
  return nextRound(progress.graph, progress.statuses(), () => false).runnable.filter((s) => s.needs_tool);
}

/** Small random plans (acyclic: a step depends only on earlier ones), from a seeded generator. */
function* randomPlans(count: number): Generator<Plan> {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let n = 0; n < count; n++) {
    const steps: PlanStep[] = [];
    const size = 1 + Math.floor(rand() * 6);
    for (let i = 0; i < size; i++) {
      const deps = steps.filter(() => rand() < 0.3).map((s) => s.id);
      steps.push(step(`s${i + 1}`, deps, { needs_tool: rand() < 0.7, questions: rand() < 0.2 ? ['which one?'] : [] }));
    }
    yield plan(steps);
  }
}

describe('first picks with the plan', () => {
  it('are for exactly the tool steps the workflow runs first, in plan order', () => {
    let checked = 0;
    for (const p of randomPlans(300)) {
      const first = firstPickSteps(p, noBudget, 10);
      expect(ids(first)).toEqual(ids(workflowFirstBatch(p)));
      expect(pickedFor({ stepIds: ids(first) }, workflowFirstBatch(p))).toBe(true);
      if (first.length) checked++;
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('leave out steps that wait for dependencies, ask questions or need no tool', () => {
    const p = plan([
      step('read'),
      step('grep'),
      step('think', [], { needs_tool: false }),
      step('ask', [], { questions: ['Which branch?'] }),
      step('after', ['read']),
    ]);
    expect(ids(firstPickSteps(p, noBudget, 10))).toEqual(['read', 'grep']);
  });

  it('are not made when the plan asks for a review before work', () => {
    expect(firstPickSteps(plan([step('s1')], true), noBudget, 10)).toEqual([]);
  });

  it('are not made when writing the plan used up the budget, as the workflow would pause first', () => {
    const p = plan([step('s1')]);
    expect(firstPickSteps(p, { budgetLeft: 100 }, 100)).toEqual([]);
    expect(firstPickSteps(p, { budgetLeft: 0 }, 1)).toEqual([]);
    expect(ids(firstPickSteps(p, { budgetLeft: 101 }, 100))).toEqual(['s1']);
  });

  it('are used only for a batch of exactly the steps they were made for', () => {
    const pick = { stepIds: ['s1', 's2'] };
    expect(pickedFor(pick, [{ id: 's2' }, { id: 's1' }])).toBe(true);
    expect(pickedFor(pick, [{ id: 's1' }])).toBe(false);
    expect(pickedFor(pick, [{ id: 's1' }, { id: 's2' }, { id: 's3' }])).toBe(false);
    expect(pickedFor(pick, [{ id: 's1' }, { id: 's3' }])).toBe(false);
  });
});
