/**
 * What a long task hands to its next run when it continues as new: each part of its state, carried and restored,
 * answers as the original did, and a part with something open (a review, a permission request) refuses to be
 * carried rather than lose it.
 */
import type { Plan, PlanStep } from '../../common/plan';
import { TaskCarrySchema, type TaskCarry } from '../../common/task';
import { PermissionGate } from '../../workflows/task/permissions';
import { PlanProgress } from '../../workflows/task/plan-progress';
import { QuestionGate } from '../../workflows/task/questions';
import { ReviewGate } from '../../workflows/task/review-gate';
import { UsageMeter } from '../../workflows/task/usage';

const step = (id: string, depends_on: string[] = [], extra: Partial<PlanStep> = {}): PlanStep => ({
  id,
  title: `step ${id}`,
  instruction: `do ${id}`,
  depends_on,
  needs_tool: true,
  questions: [],
  ...extra,
});
const plan: Plan = {
  goal: 'read the parts',
  steps: [step('s1'), step('s2', ['s1']), step('s3', ['s2'], { questions: ['Which?'] }), step('s4', ['s1'])],
  review: { before_work: false, after_step_ids: ['s1', 's4'] },
};
const call = {
  stepId: 's2',
  qualifiedName: 'workspace__read_file',
  server: 'workspace',
  tool: 'read_file',
  args: {},
  readOnly: true,
  idempotent: true,
};
const outside = {
  arg: 'path',
  requested: '../x',
  real: '/x',
  op: 'read' as const,
  class: 'outside' as const,
  reason: 'outside',
};

const NOW = new Date('2026-12-01T10:00:00Z');

describe('a task carried over to its next run', () => {
  it("the plan's progress goes on where it was: results, attempts, failures, checkpoints held, replans used", () => {
    const before = new PlanProgress();
    before.adopt(plan);
    before.start(plan.steps[0]);
    before.settle(plan.steps[0], { outcome: 'move_on', ok: true, reason: 'done' }, [], 'part one says hello');
    before.start(plan.steps[1]);
    before.settle(plan.steps[1], { outcome: 'retry', reason: 'timed out' }, [], '');
    before.dueCheckpoints();

    const after = new PlanProgress(before.carry());

    expect(after.current()).toEqual(before.current());
    expect(after.states()).toEqual(before.states());
    expect(after.dependencyResults(plan.steps[1])).toEqual(before.dependencyResults(plan.steps[1]));
    expect(after.previousFailure('s2')).toBe('timed out');
    expect(after.attempts('s2')).toBe(1);
    expect(after.dueCheckpoints()).toEqual([]);
    expect(after.allResults()).toEqual(before.allResults());
  });

  it('answers taken and questions still waiting stay; the last review decision is still answered as a repeat', () => {
    const questions = new QuestionGate();
    questions.ask(plan.steps[2]);
    const reviews = new ReviewGate();
    reviews.request('checkpoint', 'h1', plan, ['s1']);
    reviews.accept({ decision: 'approve' });
    reviews.close();

    const q = new QuestionGate(questions.carry());
    const r = new ReviewGate(reviews.carry());

    expect(q.pending).toEqual({ kind: 'questions', stepId: 's3', questions: ['Which?'] });
    expect(q.accept({ answers: { 'Which?': 'the first' } })).toBeNull();
    expect(q.withAnswers(plan.steps[2]).instruction).toContain('the first');
    expect(r.refusal({ decision: 'approve', planHash: 'h1' })).toBeNull();
  });

  it('grants, decisions and request numbers carry on; a gate with a request waiting refuses to be carried', () => {
    const gate = new PermissionGate('task-s-1-1', []);
    const asked = gate.request(call, outside);
    expect(() => gate.carry()).toThrow(/waiting/);
    gate.accept({ requestId: asked.requestId, decision: 'allow_session' });
    gate.close(asked, NOW);
    const carried = gate.carry();

    const next = new PermissionGate('task-s-1-1', carried.grants, 60_000, carried);

    expect(next.covers('/x', 'read', NOW)).toBe(true);
    expect(next.covers('/x', 'read', new Date(NOW.getTime() + 86_400_000))).toBe(false);
    expect(next.newGrants).toEqual([{ path: '/x', op: 'read' }]);
    expect(next.problem({ requestId: asked.requestId, decision: 'allow_session' })).toBeNull();
    expect(next.request(call, outside).requestId).not.toBe(asked.requestId);
  });

  it('a review still open refuses to be carried', () => {
    const reviews = new ReviewGate();
    reviews.request('before_work', 'h1', plan, []);
    expect(() => reviews.carry()).toThrow(/open/);
  });

  it('usage keeps counting from the totals so far, and the whole carry passes its schema', () => {
    const meter = new UsageMeter();
    meter.modelCall({ inputTokens: 100, outputTokens: 20 }, 's1');
    meter.toolCall();
    const next = new UsageMeter(undefined, meter.carry());
    next.modelCall({ inputTokens: 1, outputTokens: 1 });
    expect(next.totals()).toEqual({ inputTokens: 101, outputTokens: 21, modelCalls: 2, toolCalls: 1 });
    expect(next.takeStep('s1')).toEqual({ inputTokens: 100, outputTokens: 20, modelCalls: 1 });

    const progress = new PlanProgress();
    progress.adopt(plan);
    const carry: TaskCarry = {
      runs: [{ runId: 'r1', firstSeq: 1, lastSeq: 9 }],
      progress: progress.carry(),
      questions: new QuestionGate().carry(),
      lastReview: null,
      permissions: new PermissionGate('t', []).carry(),
      usage: meter.carry(),
      budget: null,
      lastSeq: 9,
      recentEvents: [{ seq: 9, type: 'step_finished', at: 'now' }],
      rounds: [{ steps: ['s1'], runId: 'r1', historyLength: 12 }],
    };
    expect(TaskCarrySchema.parse(JSON.parse(JSON.stringify(carry)))).toEqual(carry);
  });
});
