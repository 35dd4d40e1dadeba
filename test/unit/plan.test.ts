import { planHash, planProblems, PlanSchema, type Plan } from '../../common/plan';
import { allFinished, pathDependencies, readySteps } from '../../workflows/task/plan-graph';
import { applyVerdict, triage, type TriageInput } from '../../workflows/task/triage';

const step = (id: string, depends_on: string[] = [], extra: Partial<Plan['steps'][number]> = {}) => ({
  id,
  title: `step ${id}`,
  instruction: `do ${id}`,
  depends_on,
  needs_tool: true,
  questions: [],
  ...extra,
});
const plan = (steps: Plan['steps'], after: string[] = []): Plan => ({
  goal: 'g',
  steps,
  review: { before_work: false, after_step_ids: after },
});

describe('plan validation', () => {
  it('accepts a valid dependency graph', () => {
    expect(planProblems(plan([step('a'), step('b', ['a']), step('c', ['a', 'b'])], ['b']))).toEqual([]);
  });
  it('names duplicate ids, unknown dependencies, cycles and unknown review ids', () => {
    expect(planProblems(plan([step('a'), step('a')]))).toContain('step id "a" is used more than once');
    expect(planProblems(plan([step('a', ['zz'])]))).toContain('step "a" depends on unknown step "zz"');
    expect(planProblems(plan([step('a', ['b']), step('b', ['a'])]))).toContain(
      'the dependencies form a cycle: a -> b -> a'
    );
    expect(planProblems(plan([step('a', ['a'])]))).toContain('step "a" depends on itself');
    expect(planProblems(plan([step('a')], ['q']))).toContain('review.after_step_ids names unknown step "q"');
  });
  it('lets a revised plan depend on finished steps but not reuse their ids', () => {
    expect(planProblems(plan([step('c', ['a'])]), ['a', 'b'])).toEqual([]);
    expect(planProblems(plan([step('a')]), ['a'])).toContain(
      'step "a" has already finished: leave it out of the new plan (later steps may depend on it)'
    );
  });
  it('the schema carries the structural checks, so the model is re-asked with them', () => {
    const r = PlanSchema.safeParse(plan([step('a', ['b']), step('b', ['a'])]));
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain('cycle');
  });
  it('hashes plans by content, independent of key order', () => {
    const p = plan([step('a')]);
    const reordered = { review: p.review, steps: p.steps, goal: p.goal };
    expect(planHash(p)).toBe(planHash(reordered));
    expect(planHash(p)).not.toBe(planHash(plan([step('b')])));
    expect(planHash(p)).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('plan graph', () => {
  const steps = [step('a'), step('b'), step('c', ['a']), step('d', ['b', 'c'])];
  it('independent steps are ready together; dependants wait', () => {
    const status = new Map(steps.map((s) => [s.id, 'pending' as const]));
    expect(readySteps(steps, status).map((s) => s.id)).toEqual(['a', 'b']);
    const next = new Map([...status, ['a', 'done'], ['b', 'failed']] as const);
    expect(readySteps(steps, next).map((s) => s.id)).toEqual(['c']);
    expect(allFinished(steps, next)).toBe(false);
  });
  it('calls touching the same file wait for the earlier ones, in pick order; others do not', () => {
    expect(pathDependencies([['/p/a'], ['/p/b'], ['/p/a', '/p/c'], ['/p/c'], []])).toEqual([[], [], [0], [2], []]);
    expect(
      pathDependencies([
        ['/p/a', '/p/a'],
        ['/p/a', '/p/a'],
      ])
    ).toEqual([[], [0]]);
  });
});

describe('triage', () => {
  const base: TriageInput = { noTool: null, calls: [], attempts: 1, maxAttempts: 3, replansLeft: 2 };
  it('success moves on', () => {
    expect(triage({ ...base, calls: [{ tool: 't', status: 'ok', text: 'fine' }] })).toEqual({
      outcome: 'move_on',
      ok: true,
      reason: 'succeeded',
    });
  });
  it('no suitable tool replans, and moves on (failed) when no replans are left', () => {
    expect(triage({ ...base, noTool: 'nothing reads PDFs' }).outcome).toBe('replan');
    expect(triage({ ...base, noTool: 'x', replansLeft: 0 })).toMatchObject({ outcome: 'move_on', ok: false });
  });
  it('a policy refusal replans', () => {
    expect(triage({ ...base, calls: [{ tool: 'w', status: 'refused', text: 'read_only' }] }).outcome).toBe('replan');
  });
  it('a transient failure retries within the step budget, then replans', () => {
    const failed = { ...base, calls: [{ tool: 't', status: 'failed' as const, text: 'server died' }] };
    expect(triage(failed).outcome).toBe('retry');
    expect(triage({ ...failed, attempts: 3 }).outcome).toBe('replan');
  });
  it('a denied path moves on without halting', () => {
    expect(triage({ ...base, calls: [{ tool: 'r', status: 'denied', text: '/etc/passwd' }] })).toMatchObject({
      outcome: 'move_on',
      ok: false,
    });
  });
  it('a tool error needs the evaluator', () => {
    expect(triage({ ...base, calls: [{ tool: 'r', status: 'error', text: 'exit code 1' }] }).outcome).toBe('evaluate');
  });
  it("the evaluator's verdict stays within budgets", () => {
    expect(applyVerdict('retry', 'r', { ...base, attempts: 3 }).outcome).toBe('replan');
    expect(applyVerdict('replan', 'r', { ...base, replansLeft: 0 })).toMatchObject({ outcome: 'move_on', ok: false });
    expect(applyVerdict('move_on', 'fine', base)).toMatchObject({ outcome: 'move_on', ok: true });
  });
});
