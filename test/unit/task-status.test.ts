/** What a task shows of itself: its status details, where it stands after a decision, its state and usage. */
import type { Plan } from '../../common/plan';
import type { ParsedTaskInput, PendingInterrupt } from '../../common/task';
import { PlanProgress } from '../../workflows/task/plan-progress';
import { statusAfterDecision, statusDetails, taskState, waitingFor } from '../../workflows/task/status';
import { UsageMeter } from '../../workflows/task/usage';

const plan: Plan = {
  goal: 'sum up the notes',
  steps: [{ id: 's1', title: 'read', instruction: 'read', depends_on: [], needs_tool: true, questions: [] }],
  review: { before_work: true, after_step_ids: [] },
};
const review: PendingInterrupt = { kind: 'review', reason: 'before_work', planHash: 'ab12', plan, afterStepIds: [] };
const permission: PendingInterrupt = {
  kind: 'permission',
  requests: [
    {
      requestId: 't.perm-1',
      stepId: 's1',
      tool: 'workspace__read_file',
      path: '/notes/a.txt',
      requestedPath: '../notes/a.txt',
      op: 'read',
      class: 'outside',
      reason: 'outside the project directory',
    },
  ],
};

describe('task status', () => {
  it('the details name the status, the goal, everything waited for and the plan', () => {
    const details = statusDetails({
      status: 'awaiting_review',
      detail: 'the plan',
      goal: 'sum up the notes',
      pending: [review, { kind: 'questions', stepId: 's2', questions: ['Who?'] }, permission],
      plan: { version: 2, steps: 3 },
    });

    expect(details).toBe(
      '**awaiting_review**: the plan\n\ngoal: sum up the notes\n\n' +
        'waiting for: review of plan ab12, answers for step s2, 1 permission decision(s)\n\nplan v2, 3 steps'
    );
  });

  it('before there is a plan the details say only the status', () => {
    expect(statusDetails({ status: 'routing', goal: null, pending: [], plan: null })).toBe('**routing**');
    expect(waitingFor([])).toBe('');
  });

  it('once the last permission is decided the task runs again', () => {
    expect(statusAfterDecision('awaiting_permission', [])).toBe('running');
  });

  it('while another permission or the review is pending, the task keeps waiting for it', () => {
    expect(statusAfterDecision('awaiting_permission', [permission])).toBe('awaiting_permission');
    expect(statusAfterDecision('awaiting_permission', [review])).toBe('awaiting_review');
    expect(statusAfterDecision('running', [review, permission])).toBe('awaiting_permission');
  });

  it('a finished task stays finished, and a running one keeps running', () => {
    expect(statusAfterDecision('cancelled', [permission])).toBeNull();
    expect(statusAfterDecision('running', [])).toBeNull();
  });

  it('the state shows the plan, what is waited for, and the mode the task runs in as the one requested', () => {
    const input: ParsedTaskInput = {
      taskId: 'task-s-1',
      sessionId: 's',
      prompt: 'sum up',
      projectDir: '/p',
      mode: 'general',
      toolAccess: 'read_only',
      network: 'off',
      review: 'plan',
      route: false,
      grants: [],
      grantTtlMs: 86_400_000,
      summary: '',
      recentTurns: [],
      maxTokens: null,
      maxCallsPerStep: 6,
      continueAsNewAfterEvents: 8000,
    };
    const progress = new PlanProgress();
    progress.adopt(plan);
    const meter = new UsageMeter();
    meter.modelCall({ inputTokens: 10, outputTokens: 5 });

    const state = taskState(input, progress, {
      status: 'awaiting_review',
      answer: null,
      error: null,
      pending: [review],
      newGrants: [],
      usage: meter.totals(),
      lastSeq: 4,
      runs: { current: 1, earlier: [] },
      rounds: [],
    });

    expect(state).toMatchObject({
      taskId: 'task-s-1',
      status: 'awaiting_review',
      mode: 'general',
      requestedMode: 'general',
      toolAccess: 'read_only',
      goal: 'sum up the notes',
      planVersion: 1,
      steps: [{ id: 's1', status: 'pending' }],
      pending: [review],
      verification: 'unverified',
      usage: { inputTokens: 10, outputTokens: 5, modelCalls: 1, toolCalls: 0 },
      lastSeq: 4,
    });
  });
});

describe('task usage', () => {
  it('model usage adds up over calls, and tool calls are counted', () => {
    const meter = new UsageMeter();

    meter.modelCall({ inputTokens: 100, outputTokens: 20 });
    meter.modelCall({ inputTokens: 50, outputTokens: 5 });
    meter.toolCall();

    expect(meter.totals()).toEqual({ inputTokens: 150, outputTokens: 25, modelCalls: 2, toolCalls: 1 });
  });
});
