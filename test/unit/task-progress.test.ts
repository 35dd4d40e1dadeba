/** The plan being carried out: adopting plans and revisions, settling steps within budgets, what prompts see. */
import { planHash, type Plan, type PlanStep } from '../../common/plan';
import { nextRound } from '../../workflows/task/plan-graph';
import { MAX_REPLANS, PlanProgress, RESULT_CHARS } from '../../workflows/task/plan-progress';

const step = (id: string, depends_on: string[] = [], extra: Partial<PlanStep> = {}): PlanStep => ({
  id,
  title: `step ${id}`,
  instruction: `do ${id}`,
  depends_on,
  needs_tool: true,
  questions: [],
  ...extra,
});
const plan = (steps: PlanStep[], after: string[] = []): Plan => ({
  goal: 'sum up the notes',
  steps,
  review: { before_work: false, after_step_ids: after },
});
const ok = { outcome: 'move_on', ok: true, reason: 'succeeded' } as const;

function started(p: PlanProgress, id: string): PlanStep {
  const s = p.graph.find((g) => g.id === id)!;
  p.start(s);
  return s;
}

describe('plan progress', () => {
  it('adopting the first plan makes every step pending, as version 1 under its hash', () => {
    const p = new PlanProgress();
    const first = plan([step('s1'), step('s2', ['s1'])]);

    p.adopt(first);

    expect(p.current()).toEqual({ plan: first, planHash: planHash(first), version: 1 });
    expect(p.goal).toBe('sum up the notes');
    expect(p.states().map((s) => [s.id, s.status, s.attempts])).toEqual([
      ['s1', 'pending', 0],
      ['s2', 'pending', 0],
    ]);
  });

  it('a revised plan keeps the finished steps and replaces the unfinished ones', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2', ['s1'])]));
    p.settle(started(p, 's1'), ok, [], 'notes read');

    p.adopt(plan([step('s3', ['s1'])]));

    expect(p.graph.map((s) => s.id)).toEqual(['s1', 's3']);
    expect(p.statuses()).toEqual(
      new Map([
        ['s1', 'done'],
        ['s3', 'pending'],
      ])
    );
    expect(p.version).toBe(2);
    expect(p.finishedViews()).toEqual([{ id: 's1', title: 'step s1', status: 'done', result: 'notes read' }]);
  });

  it('a step that succeeds is done with its result, cut for the prompts that build on it', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2', ['s1'])]));
    const long = 'x'.repeat(RESULT_CHARS + 10);

    const event = p.settle(started(p, 's1'), ok, [{ tool: 'workspace__read_file', status: 'ok', text: long }], long);

    expect(event).toMatchObject({ type: 'step_finished', stepId: 's1', status: 'done', outcome: 'move_on' });
    expect(event?.calls).toEqual([{ tool: 'workspace__read_file', status: 'ok' }]);
    const [dep] = p.dependencyResults(p.graph[1]);
    expect(dep.result).toContain('[10 more characters]');
    expect(p.states()[0].ok).toBe(true);
  });

  it('a step whose attempt failed goes back to pending and tells the next attempt why', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1')]));
    const s = started(p, 's1');

    const event = p.settle(s, { outcome: 'retry', reason: 'server died' }, [], '');
    const again = p.start(s);

    expect(event).toMatchObject({ status: 'retry', outcome: 'retry', reason: 'server died' });
    expect(p.previousFailure('s1')).toBe('server died');
    expect(again).toEqual({ type: 'step_started', stepId: 's1', title: 'step s1', attempt: 2 });
    expect(p.triageInput(s, null, []).attempts).toBe(2);
  });

  it('only the first replan asked for in a round is done, and each replan uses one of the task budget', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2')]));
    p.settle(started(p, 's1'), { outcome: 'replan', reason: 'no tool reads PDFs' }, [], '');
    p.settle(started(p, 's2'), { outcome: 'replan', reason: 'refused by policy' }, [], '', undefined, 'pytest');

    const replan = p.takeReplan();

    expect(replan).toEqual({ reason: 'step s1 (step s1): no tool reads PDFs' });
    expect(p.takeReplan()).toBeNull();
    expect(p.triageInput(plan([step('s1')]).steps[0], null, []).replansLeft).toBe(MAX_REPLANS - 1);
  });

  it('a replan asked for by a failed check carries that check to the Planner', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1')]));
    p.settle(started(p, 's1'), { outcome: 'replan', reason: 'not achieved' }, [], '', undefined, 'python3 t.py');

    expect(p.takeReplan()).toEqual({ reason: 'step s1 (step s1): not achieved', failedCheck: 'python3 t.py' });
  });

  it('an attempt that makes the very calls of a failed one at the same instruction is told so; other calls are not', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1')]));
    const s = started(p, 's1');
    const calls = JSON.stringify([['workspace__edit_file', { path: 'a.py', old_string: 'x', new_string: 'y' }]]);
    p.settle(s, { outcome: 'retry', reason: 'old_string not found' }, [], '', calls);
    p.start(s);

    expect(p.triageInput(s, null, [], calls).repeatsFailedAttempt).toBe(true);
    expect(p.triageInput(s, null, [], JSON.stringify([])).repeatsFailedAttempt).toBeUndefined();
    expect(p.triageInput(s, null, []).repeatsFailedAttempt).toBeUndefined();
  });

  it('a step waiting for the evaluator is not settled yet', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1')]));

    const event = p.settle(started(p, 's1'), { outcome: 'evaluate', reason: 'exit code 1' }, [], '');

    expect(event).toBeNull();
    expect(p.statuses().get('s1')).toBe('running');
  });

  it('an after-step review is due once, when its step has finished', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2', ['s1'])], ['s1']));
    const before = p.dueCheckpoints();
    p.settle(started(p, 's1'), { outcome: 'move_on', ok: false, reason: 'the user denied access' }, [], '');

    const due = p.dueCheckpoints();

    expect(before).toEqual([]);
    expect(due).toEqual(['s1']);
    expect(p.dueCheckpoints()).toEqual([]);
  });

  it('a review shows the steps that have started, with their results', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2'), step('s3')]));
    p.settle(started(p, 's1'), ok, [], 'alpha');
    started(p, 's2');

    const results = p.reviewResults();

    expect(results).toEqual([
      { stepId: 's1', title: 'step s1', status: 'done', result: 'alpha' },
      { stepId: 's2', title: 'step s2', status: 'running', result: null },
    ]);
  });

  it('the answer sees every step result, in plan order', () => {
    const p = new PlanProgress();
    p.adopt(plan([step('s1'), step('s2')]));
    p.settle(started(p, 's2'), ok, [], 'beta');

    expect(p.allResults().map((r) => [r.id, r.status, r.result])).toEqual([
      ['s1', 'pending', ''],
      ['s2', 'done', 'beta'],
    ]);
  });
});

describe('rounds of ready steps', () => {
  it('a step with unanswered questions waits while the other ready steps run', () => {
    const steps = [step('s1', [], { questions: ['Who?'] }), step('s2'), step('s3', ['s2'])];
    const status = new Map(steps.map((s) => [s.id, 'pending' as const]));

    const round = nextRound(steps, status, () => false);

    expect(round.asking.map((s) => s.id)).toEqual(['s1']);
    expect(round.runnable.map((s) => s.id)).toEqual(['s2']);
  });

  it('once answered, a step with questions runs like any other', () => {
    const steps = [step('s1', [], { questions: ['Who?'] })];
    const status = new Map([['s1', 'pending' as const]]);

    const round = nextRound(steps, status, (id) => id === 's1');

    expect(round).toEqual({ runnable: steps, asking: [] });
  });
});
