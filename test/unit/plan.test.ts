import {
  planHash,
  planProblems,
  planSchema,
  PlanSchema,
  repairPlan,
  soleChangeOf,
  earlierTurnsOf,
  EARLIER_TURN_CHARS,
  type Plan,
  type PlanStep,
} from '../../common/plan';
import { FileOrder } from '../../workflows/task/dispatch';
import { allFinished, readySteps, repeatsFailedPlan } from '../../workflows/task/plan-graph';
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
    expect(planProblems(plan([step('a'), step('a')]))).toContain(
      'step id "a" is used more than once: give each step its own id (s1, s2, s3, ...)'
    );
    expect(planProblems(plan([step('a', ['zz'])]))).toContain('step "a" depends on unknown step "zz"');
    expect(planProblems(plan([step('a', ['b']), step('b', ['a'])]))).toContain(
      'the dependencies form a cycle: a -> b -> a; a step may depend only on steps that come before it'
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
    const r = PlanSchema.safeParse(plan([step('a'), step('b', ['a']), step('a')]));
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain('used more than once');
  });
  it('hashes plans by content, independent of key order', () => {
    const p = plan([step('a')]);
    const reordered = { review: p.review, steps: p.steps, goal: p.goal };
    expect(planHash(p)).toBe(planHash(reordered));
    expect(planHash(p)).not.toBe(planHash(plan([step('b')])));
    expect(planHash(p)).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('plan repair: what is unambiguous is repaired, not asked again', () => {
  it('a replan that repeats a finished step keeps the finished result and drops the repeat, saying so', () => {
    const r = planSchema(['s1']).parse(plan([step('s1'), step('s2', ['s1'])]));

    expect(r.plan.steps.map((s) => s.id)).toEqual(['s2']);
    expect(r.plan.steps[0].depends_on).toEqual(['s1']);
    expect(r.repairs).toEqual(['step "s1" repeated a finished step: left out, its result kept']);
  });

  it('a replan that only repeats finished steps has no step left: the work is done', () => {
    expect(planSchema(['s1', 's2']).parse(plan([step('s1'), step('s2', ['s1'])])).plan.steps).toEqual([]);
  });

  it('a dependency on a tool name (no step) is dropped, and so are self-dependencies and unknown checkpoints', () => {
    const r = repairPlan(plan([step('s1', ['workspace__list_dir']), step('s2', ['s2', 's1', 's1'])], ['s9', 's2']));

    expect(r.plan.steps.map((s) => s.depends_on)).toEqual([[], ['s1']]);
    expect(r.plan.review.after_step_ids).toEqual(['s2']);
    expect(r.repairs).toEqual([
      'step "s1" depended on "workspace__list_dir", which is no step: dependency dropped',
      'step "s2" depended on itself: dependency dropped',
      'review after "s9", which is no step of the plan: dropped',
    ]);
  });

  it('what stays ambiguous is still refused with what to change: ids used twice, a first plan with no step', () => {
    expect(PlanSchema.safeParse(plan([step('a'), step('a')])).success).toBe(false);
    // A cycle among steps whose ids are used twice is not broken: which step is meant is not known.
    expect(PlanSchema.safeParse(plan([step('a', ['b']), step('b', ['a']), step('b')])).success).toBe(false);
    expect(PlanSchema.safeParse({ ...plan([]), steps: [] }).success).toBe(false);
  });

  it('a cycle loses the dependency that goes against the order of the steps, and says so', () => {
    const r = PlanSchema.parse(plan([step('find', ['read']), step('read', ['find']), step('tell', ['read'])]));
    expect(r.plan.steps.map((s) => [s.id, s.depends_on])).toEqual([
      ['find', []],
      ['read', ['find']],
      ['tell', ['read']],
    ]);
    expect(r.repairs).toEqual([
      'step "find" depended on "read", which comes after it (a cycle: find -> read -> find): dependency dropped',
    ]);
    // Listed the other way round, the other dependency goes: the list's order is the one kept.
    const back = PlanSchema.parse(plan([step('read', ['find']), step('find', ['read'])]));
    expect(back.plan.steps.map((s) => s.depends_on)).toEqual([[], ['read']]);
  });

  it('every cycle of a plan is broken, a longer one and two at once, and a dependency that makes none is kept', () => {
    const r = PlanSchema.parse(
      plan([step('a', ['c']), step('b', ['a']), step('c', ['b']), step('d', ['e', 'a']), step('e', ['d'])])
    );
    expect(r.plan.steps.map((s) => s.depends_on)).toEqual([[], ['a'], ['b'], ['a'], ['d']]);
    expect(r.repairs).toHaveLength(2);
    expect(planProblems(r.plan)).toEqual([]);
    // A dependency on a later step that closes no cycle is the Planner's to make: kept.
    const forward = plan([step('a', ['b']), step('b')]);
    expect(PlanSchema.parse(forward)).toEqual({ plan: forward, repairs: [] });
  });

  it('a plan with nothing to repair comes through unchanged, with no repair', () => {
    const p = plan([step('a'), step('b', ['a'])], ['b']);
    expect(PlanSchema.parse(p)).toEqual({ plan: p, repairs: [] });
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
  it('calls touching the same file wait for the earlier ones, in pick order, across rounds; others do not', () => {
    const files = new FileOrder();
    const waits: number[] = [];
    const call = (paths: string[]) =>
      files.enqueue(paths, async (waitFor) => {
        waits.push(waitFor.length);
        return { tool: 't', status: 'ok', text: '' };
      });

    void call(['/p/a']);
    void call(['/p/b']);
    void call(['/p/a', '/p/c']);
    void call(['/p/c']);
    void call([]);
    void call(['/p/a', '/p/a']); // a later round: waits once for the last call on /p/a

    expect(waits).toEqual([0, 0, 1, 1, 0, 1]);
  });
});

describe("the plan's only change", () => {
  const read = step('r', [], { expect: { check: 'cat README.md' } });
  const write = step('w', ['r'], { expect: { changes: ['README.md'] } });
  const first = { firstPlan: true };
  it('is the one step that changes a file or a folder, whatever else the plan does', () => {
    expect(soleChangeOf([read, write], write, first)).toEqual({ soleChange: true });
    const folder = step('f', [], { expect: { changes: ['logs/'] } });
    expect(soleChangeOf([read, folder], folder, first)).toEqual({ soleChange: true });
  });
  it('is no step of a plan that changes files in two steps, nor one that changes nothing', () => {
    const other = step('o', [], { expect: { changes: ['docs/usage.md'] } });
    expect(soleChangeOf([read, write, other], write, first)).toEqual({});
    expect(soleChangeOf([read, write], read, first)).toEqual({});
  });
  it("is no step of a revised or new plan, nor of a session's follow-up", () => {
    expect(soleChangeOf([read, write], write, { firstPlan: false })).toEqual({});
    expect(soleChangeOf([read, write], write, { firstPlan: true, recentTurns: [{ role: 'user', text: 'x' }] })).toEqual(
      {}
    );
    expect(soleChangeOf([read, write], write, { firstPlan: true, summary: 'They asked about setup.cfg.' })).toEqual({});
  });
});

describe('a new plan that only repeats the plan before it', () => {
  const before: Plan = {
    goal: 'g',
    steps: [
      { ...step('s1'), instruction: 'Fix add in calc.py', expect: { changes: ['calc.py'] } },
      { ...step('s2', ['s1']), instruction: 'Run the tests', expect: { check: 'python3 -m pytest -q' } },
    ],
    review: { before_work: false, after_step_ids: [] },
  };
  const next = (...steps: Plan['steps']): Plan => ({ ...before, steps });
  const s1Failed = (s: { id: string }) => s.id === 's1';

  it('is one whose steps are all steps of the plan before, one of them a step that failed; ids and titles aside', () => {
    expect(repeatsFailedPlan(before, before, s1Failed)).toBe(true);
    expect(repeatsFailedPlan(next({ ...before.steps[0], id: 'x', title: 'Again' }), before, s1Failed)).toBe(true);
  });

  it('is not one of the steps not tried yet (the failed one left out), nor one that changes a step, nor a first plan', () => {
    expect(repeatsFailedPlan(next({ ...before.steps[1], depends_on: [] }), before, s1Failed)).toBe(false);
    const changed = (over: Partial<Plan['steps'][number]>) => next({ ...before.steps[0], ...over }, before.steps[1]);
    expect(repeatsFailedPlan(changed({ instruction: 'Fix add in calc.py: it subtracts' }), before, s1Failed)).toBe(
      false
    );
    expect(
      repeatsFailedPlan(changed({ expect: { changes: ['calc.py'], check: 'python3 t.py' } }), before, s1Failed)
    ).toBe(false);
    expect(repeatsFailedPlan(changed({ needs_tool: false }), before, s1Failed)).toBe(false);
    expect(
      repeatsFailedPlan(next(...before.steps, { ...step('s3'), instruction: 'Say what changed' }), before, s1Failed)
    ).toBe(false);
    expect(repeatsFailedPlan(before, null, s1Failed)).toBe(false);
  });
});

describe('triage', () => {
  const base: TriageInput = { noTool: null, calls: [], attempts: 1, maxAttempts: 3, replansLeft: 2 };

  it('an attempt that repeats one the tool judged wrong ends its step, not achieved, rather than try again', () => {
    const errored = { ...base, calls: [{ tool: 'e', status: 'error' as const, text: 'not found' }] };
    expect(triage({ ...errored, repeatsFailedAttempt: true })).toMatchObject({
      outcome: 'move_on',
      ok: false,
      reason: expect.stringContaining('the same calls as the failed attempt before it'),
    });
    // A crash or a timeout may pass on a retry; a refusal or no tool goes to a replan told why.
    const crashed = { ...base, calls: [{ tool: 'e', status: 'failed' as const, text: 'server died' }] };
    expect(triage({ ...crashed, repeatsFailedAttempt: true }).outcome).toBe('retry');
    expect(triage({ ...base, noTool: 'x', repeatsFailedAttempt: true }).outcome).toBe('replan');
    // A success is a success, repeated or not.
    expect(triage({ ...base, calls: [{ tool: 't', status: 'ok', text: '' }], repeatsFailedAttempt: true })).toEqual({
      outcome: 'move_on',
      ok: true,
      reason: 'succeeded',
    });
  });
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

describe('a step that repeats another word for word', () => {
  it('is left out, told in the repairs, and its dependents depend on the one kept', () => {
    const same = { title: 'Fix', instruction: 'In calc.py, fix the bug.', needs_tool: true, questions: [] };
    const r = repairPlan({
      goal: 'g',
      steps: [
        { id: 's1', depends_on: [], ...same },
        { id: 's2', depends_on: [], ...same, title: 'Fix again' },
        {
          id: 's3',
          title: 'Run',
          instruction: 'Run the tests.',
          depends_on: ['s1', 's2'],
          needs_tool: true,
          questions: [],
        },
      ],
      review: { before_work: false, after_step_ids: ['s2'] },
    });
    expect(r.plan.steps.map((s) => [s.id, s.depends_on])).toEqual([
      ['s1', []],
      ['s3', ['s1']],
    ]);
    expect(r.plan.review.after_step_ids).toEqual(['s1']);
    expect(r.repairs).toEqual(['step "s2" repeated step "s1" word for word: left out']);
  });
});

describe('a step that expects files changed or a check run, written as needing no tool', () => {
  it('needs a tool, told in the repairs; a step that only thinks is left as it is', () => {
    const step = (id: string, more: Partial<PlanStep>): PlanStep => ({
      id,
      title: id,
      instruction: `do ${id}`,
      depends_on: [],
      needs_tool: false,
      questions: [],
      ...more,
    });
    const r = repairPlan({
      goal: 'g',
      steps: [
        step('s1', { expect: { changes: ['config/defaults.json'] } }),
        step('s2', { expect: { check: 'node test.js' } }),
        step('s3', { expect: { changes: [] } }),
        step('s4', {}),
      ],
      review: { before_work: false, after_step_ids: [] },
    });
    expect(r.plan.steps.map((s) => s.needs_tool)).toEqual([true, true, false, false]);
    expect(r.repairs).toEqual([
      'step "s1" expects files changed or a check run, which takes a tool: needs_tool set true',
      'step "s2" expects files changed or a check run, which takes a tool: needs_tool set true',
    ]);
  });
});

describe('earlierTurnsOf', () => {
  const turn = (role: 'user' | 'assistant', text: string) => ({ role, text });

  it("is Klea's last turn and the user's turn it answered, each cut to its bound", () => {
    const turns = [
      turn('user', 'Hi'),
      turn('assistant', 'Hello.'),
      turn('user', 'What version does setup.cfg give?'),
      turn('assistant', `setup.cfg gives 1.0. Shall I set it to 1.1?${'!'.repeat(3000)}`),
    ];
    const { earlierTurns } = earlierTurnsOf(turns);
    expect(earlierTurns?.[0]).toBe('What version does setup.cfg give?');
    expect(earlierTurns?.[1]).toMatch(/^setup\.cfg gives 1\.0/);
    expect(earlierTurns?.[1]).toHaveLength(EARLIER_TURN_CHARS);
    expect(earlierTurns).toHaveLength(2);
  });

  it('controls: no turns, or none of Klea’s, give nothing; a turn of Klea’s first of all is passed on alone', () => {
    expect(earlierTurnsOf(undefined)).toEqual({});
    expect(earlierTurnsOf([])).toEqual({});
    expect(earlierTurnsOf([turn('user', 'Fix a.py')])).toEqual({});
    expect(earlierTurnsOf([turn('assistant', 'Shall I fix a.py?')])).toEqual({ earlierTurns: ['Shall I fix a.py?'] });
  });
});
