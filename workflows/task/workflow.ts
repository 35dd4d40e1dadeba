/**
 * `taskWorkflow` (contract), id `task-<sessionId>-<n>`: one user task, from the request to the answer. Started by
 * a session for each task it routes, or alone (`POST /tasks`).
 *
 * Path: `context` event → (route, for a standalone task) → plan (`write_plan`) → review when the plan or the
 * review policy asks for it (revise goes back to the Planner and the revised plan is reviewed again) → rounds of
 * ready steps (`StepRunner`), each step's questions asked first, replans and after-step reviews between rounds →
 * answer (`compose_answer`, labelled unverified).
 *
 * Messages: signals (and same-named updates) `review`, `clarify`, `permission`; signal `cancel`; queries
 * `state` and `events {after}`. Every pause is a `condition` on workflow state, so it survives worker and
 * server restarts. Status is mirrored into the `KleaStatus` search attribute and the run's current details.
 *
 * Lifecycle: the result says `done` (with the answer), `failed` (with the error) or `cancelled` (by the `cancel`
 * signal); the run itself completes in all three, so a session reads why. Only invalid input fails the run, and a
 * cancellation of the run itself (not the signal) is rethrown.
 */
import {
  CancellationScope,
  condition,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import type { Plan } from '../../common/plan';
import { planDiff, type PlanDiff } from '../../common/plan-diff';
import type { CallUsage } from '../../common/model-protocol';
import { KleaMode, KleaModelCalls, KleaStatus, KleaTokens, KleaWaitingSince } from '../../common/search-attributes';
import {
  CancelSchema,
  ClarifySchema,
  PermissionDecisionSchema,
  ReviewDecisionSchema,
  TaskInputSchema,
  type PendingInterrupt,
  type ReviewDecision,
  type StepResultView,
  type TaskInput,
  type TaskResult,
} from '../../common/task';
import { localProjectFacts, modelNodes, projectFacts } from '../shared/activities';
import { EventLog } from '../shared/event-log';
import { parseInput, parseOrThrow, parseSignal } from '../shared/payloads';
import {
  cancelSignal,
  clarifySignal,
  clarifyUpdate,
  eventsQuery,
  permissionSignal,
  permissionUpdate,
  reviewSignal,
  reviewUpdate,
  setDecisionHandlers,
  stateQuery,
} from './messages';
import { SCIENTIFIC_MODE_EXPLANATION } from './modes';
import { PermissionGate } from './permissions';
import { allFinished, nextRound } from './plan-graph';
import { PlanProgress } from './plan-progress';
import { QuestionGate } from './questions';
import { ReviewGate, type ReviewReason } from './review-gate';
import { statusAfterDecision, statusDetails, taskState } from './status';
import { StepRunner } from './step-runner';
import { failureCode, failureMessage } from './text';
import { UsageMeter } from './usage';

/** A plan revised at the user's request: what changed against the reviewed plan, and the feedback. */
interface Revision {
  diff: PlanDiff;
  feedback: string;
}

export async function taskWorkflow(rawInput: TaskInput): Promise<TaskResult> {
  const input = parseInput(TaskInputSchema, 'invalid task input', rawInput);
  const log = new EventLog();
  const progress = new PlanProgress();
  const reviews = new ReviewGate();
  const questions = new QuestionGate();
  // Security: grants in the input count only when the task's session handed them over (it records what the user
  // allowed); a task started some other way, grants and all, asks for every path like a new one.
  const parent = workflowInfo().parent?.workflowId ?? '';
  const inputGrantsIgnored =
    input.grants.length > 0 && !parent.startsWith('session-') && patched('input-grants-from-session-only');
  const permissions = new PermissionGate(input.taskId, inputGrantsIgnored ? [] : input.grants);
  // The totals as search attributes, so `KleaTokens > 100000` finds expensive runs in the Temporal UI.
  const meter = new UsageMeter(() => {
    if (!patched('usage-search-attributes')) return;
    upsertSearchAttributes([
      { key: KleaTokens, value: meter.tokens },
      { key: KleaModelCalls, value: meter.models.modelCalls },
    ]);
  });
  /** Tokens the task may use before it pauses for the user; approving a pause raises it by the same again. */
  let budget = input.maxTokens;
  let status: TaskStatus = 'routing';
  let answer: string | null = null;
  let error: string | null = null;
  let cancelReason: string | null = null;

  const pending = (): PendingInterrupt[] =>
    [reviews.pending, questions.pending, permissions.pending].filter((p): p is PendingInterrupt => p !== null);
  const snapshot = () =>
    taskState(input, progress, {
      status,
      answer,
      error,
      pending: pending(),
      newGrants: permissions.newGrants,
      usage: meter.totals(),
      lastSeq: log.lastSeq,
    });

  const setStatus = (next: TaskStatus, detail?: string) => {
    if (next !== status) {
      // When it started waiting for the user, for the inbox (runs from before this attribute do without it).
      const waiting = next.startsWith('awaiting_') && patched('waiting-since-attribute');
      upsertSearchAttributes([
        { key: KleaStatus, value: next },
        ...(waiting ? [{ key: KleaWaitingSince, value: new Date() }] : []),
      ]);
    }
    status = next;
    const plan = progress.plan ? { version: progress.version, steps: progress.stepCount } : null;
    setCurrentDetails(statusDetails({ status: next, detail, goal: progress.goal, pending: pending(), plan }));
    if (isFinalStatus(next)) log.emit({ type: 'status', status: next, detail });
  };
  const settleStatus = () => {
    const next = statusAfterDecision(status, pending());
    if (next) setStatus(next);
  };
  /** A signal's payload that could not be used: reported, since a signal has no answer to carry the error. */
  const ignoredSignal = (name: string, problem: string) =>
    log.emit({ type: 'error', code: 'InvalidSignal', message: `${name} signal: ${problem}` });

  // ------------------------------------------------------------------ handlers
  setHandler(stateQuery, snapshot);
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0));
  setDecisionHandlers(reviewSignal, reviewUpdate, {
    accept: (raw) => reviews.accept(raw),
    refusal: (raw) => reviews.refusal(parseOrThrow(ReviewDecisionSchema, 'invalid review decision', raw, 'decision')),
  });
  setDecisionHandlers(clarifySignal, clarifyUpdate, {
    accept: (raw) => {
      const problem = questions.accept(raw);
      if (problem) ignoredSignal('clarify', problem);
    },
    refusal: (raw) => questions.problem(parseOrThrow(ClarifySchema, 'invalid answers', raw, 'answers')),
  });
  setDecisionHandlers(permissionSignal, permissionUpdate, {
    accept: (raw) => permissions.accept(raw),
    refusal: (raw) =>
      permissions.problem(parseOrThrow(PermissionDecisionSchema, 'invalid permission decision', raw, 'decision')),
  });

  const work = new CancellationScope();
  setHandler(cancelSignal, (raw: unknown) => {
    if (cancelReason !== null || isFinalStatus(status)) return;
    // From the Temporal CLI a bare string is a natural way to give the reason; anything else malformed still
    // cancels (that is what the sender asked for) and says the reason was not used.
    const p = parseSignal(CancelSchema, typeof raw === 'string' ? { reason: raw } : (raw ?? {}), 'cancel');
    if (!p.ok) ignoredSignal('cancel', `the reason was not used (${p.problem}); cancelling anyway`);
    cancelReason = (p.ok && p.value.reason?.trim()) || 'cancelled by the user';
    work.cancel();
  });

  // ------------------------------------------------------------------ endings
  const finish = (s: 'done' | 'failed' | 'cancelled', detail?: string): TaskResult => {
    setStatus(s, detail);
    return {
      taskId: input.taskId,
      status: s,
      answer,
      verification: 'unverified',
      error,
      newGrants: permissions.newGrants,
      usage: meter.totals(),
    };
  };
  const fail = (code: string, message: string): TaskResult => {
    error = message;
    log.emit({ type: 'error', code, message });
    return finish('failed', message);
  };
  const giveAnswer = (text: string, usage?: CallUsage) => {
    answer = text;
    log.emit({
      type: 'answer',
      text,
      ...(usage ? { usage } : {}),
      verification: 'unverified',
      label: UNVERIFIED_LABEL,
    });
  };

  // ------------------------------------------------------------------ planning and review
  async function writePlan(
    summary: string,
    feedback?: string,
    finished?: StepResultView[]
  ): Promise<{ plan: Plan; usage: CallUsage }> {
    setStatus('planning', summary);
    const res = await modelNodes.writePlan.executeWithOptions({ summary }, [
      {
        projectDir: input.projectDir,
        toolAccess: input.toolAccess,
        request: input.prompt,
        summary: input.summary || undefined,
        recentTurns: input.recentTurns.length ? input.recentTurns : undefined,
        previousPlan: progress.plan ?? undefined,
        feedback,
        finished: finished?.length ? finished : undefined,
      },
    ]);
    return { plan: res.plan, usage: meter.modelCall(res.usage) };
  }

  /**
   * Adopts a plan the Planner wrote and tells it (`plan`, or `replanned` with the reason); a revision the user
   * asked for carries what changed and the feedback.
   */
  function adopt(written: { plan: Plan; usage: CallUsage }, replanned?: string, revision?: Revision): void {
    progress.adopt(written.plan);
    if (replanned !== undefined)
      log.emit({ type: 'replanned', reason: replanned, ...progress.current(), usage: written.usage });
    else log.emit({ type: 'plan', ...progress.current(), usage: written.usage, ...revision });
  }

  async function review(
    reason: ReviewReason,
    afterStepIds: string[] = [],
    revision?: Revision
  ): Promise<ReviewDecision> {
    const { plan, planHash } = progress.current();
    const spent = reason === 'budget' && budget !== null ? { ...meter.models, budget } : undefined;
    reviews.request(reason, planHash, plan, afterStepIds, spent, revision);
    const results = progress.reviewResults();
    log.emit({
      type: 'review_requested',
      reason,
      plan,
      planHash,
      afterStepIds,
      results,
      ...(spent ? { spent } : {}),
      ...revision,
    });
    setStatus(
      'awaiting_review',
      spent
        ? `token budget: ${meter.tokens} tokens used of ${spent.budget}`
        : reason === 'checkpoint'
          ? `results after ${afterStepIds.join(', ')}`
          : 'the plan'
    );
    await condition(() => reviews.decided);
    return reviews.close();
  }

  /** Reviews until the current plan is approved: every revision is presented again. */
  async function reviewUntilApproved(first: Exclude<ReviewReason, 'revised'>, afterStepIds: string[] = []) {
    let reason: ReviewReason = first;
    let revision: Revision | undefined;
    for (;;) {
      const d = await review(reason, reason === 'checkpoint' ? afterStepIds : [], revision);
      if (d.decision === 'approve') return;
      const feedback = d.feedback?.trim() || 'The user asked for a revision without saying what to change.';
      const reviewed = progress.current().plan;
      const written = await writePlan('revise plan', feedback, progress.finishedViews());
      revision = { diff: planDiff(reviewed, written.plan), feedback };
      adopt(written, undefined, revision);
      reason = 'revised';
    }
  }

  /**
   * A task that has used its token budget pauses before its next model call: a review of reason `budget` says what
   * was spent. Approving goes on with the budget raised by the same amount again; revising replans with the
   * feedback (and is reviewed); cancelling ends the task.
   */
  async function keepToBudget(): Promise<void> {
    if (budget === null || input.maxTokens === null || meter.tokens < budget) return;
    await reviewUntilApproved('budget');
    while (budget <= meter.tokens) budget += input.maxTokens;
  }

  /** Whether the plan is reviewed before work starts, and why: the Planner asked, or the review policy does. */
  const reviewBeforeWork = (): 'before_work' | 'policy' | null =>
    progress.plan?.review.before_work ? 'before_work' : input.review === 'always' ? 'policy' : null;

  // ------------------------------------------------------------------ the task path
  const runner = new StepRunner({ input, log, progress, questions, permissions, meter, setStatus, settleStatus });

  async function main(): Promise<TaskResult> {
    upsertSearchAttributes([{ key: KleaMode, value: input.mode }]);
    if (inputGrantsIgnored)
      log.emit({
        type: 'error',
        code: 'GrantsIgnored',
        message: `the ${input.grants.length} grant(s) in the task's input were ignored: only a session hands grants to its tasks`,
      });
    // The worker checks the project directory itself: a task started outside the API with another one ends here.
    const refused = { message: '' };
    // A local activity since this change; runs started before it keep the activity they scheduled.
    const readContext = patched('project-context-local-activity')
      ? localProjectFacts.projectContextInfo
      : projectFacts.projectContextInfo;
    const context = await readContext
      .executeWithOptions({ summary: 'project context' }, [{ projectDir: input.projectDir }])
      .catch((err: unknown) => {
        if (failureCode(err, '') === 'ProjectNotAllowed') refused.message = failureMessage(err);
        return { file: null, sandbox: undefined, sandboxNote: undefined };
      });
    if (refused.message) return fail('ProjectNotAllowed', refused.message);
    const declined = input.mode === 'scientific';
    log.emit({
      type: 'context',
      mode: input.mode,
      // A mode that cannot run is declined below, never swapped for another: requested and effective agree.
      requestedMode: input.mode,
      modeNote: declined ? SCIENTIFIC_MODE_EXPLANATION : null,
      toolAccess: input.toolAccess,
      network: input.network,
      sandbox: context.sandbox,
      sandboxNote: context.sandboxNote,
      projectDir: input.projectDir,
      projectContextFile: context.file,
    });
    if (declined) {
      // Never a silently ungrounded answer: the request is declined with the reason.
      giveAnswer(SCIENTIFIC_MODE_EXPLANATION);
      return finish('done', 'scientific mode declined');
    }

    if (input.route) {
      setStatus('routing', 'deciding between a direct reply and a planned task');
      const route = await modelNodes.routeRequest.executeWithOptions({ summary: 'route request' }, [
        {
          text: input.prompt,
          summary: input.summary || undefined,
          recentTurns: input.recentTurns.length ? input.recentTurns : undefined,
        },
      ]);
      const routed = meter.modelCall(route.usage);
      if (route.route === 'chat' && route.reply) {
        giveAnswer(route.reply, routed);
        return finish('done');
      }
    }

    adopt(await writePlan('plan'));
    const why = reviewBeforeWork();
    if (why) await reviewUntilApproved(why);

    for (;;) {
      await keepToBudget();
      const current = progress.statuses();
      if (allFinished(progress.graph, current)) break;
      const { runnable, asking } = nextRound(progress.graph, current, (id) => questions.isAnswered(id));
      if (!questions.pending && asking.length) {
        const asked = questions.ask(asking[0]);
        progress.awaitAnswers(asked.stepId);
        log.emit({ type: 'questions', stepId: asked.stepId, questions: asked.questions });
      }
      if (runnable.length) {
        await runner.runBatch(runnable);
      } else if (questions.pending) {
        const waitingFor = questions.pending.stepId;
        setStatus('awaiting_clarification', `step ${waitingFor}`);
        await condition(() => questions.isAnswered(waitingFor));
      } else {
        return fail('PlanStuck', 'no step can run: the plan is stuck');
      }
      const answered = questions.takeAnswered();
      if (answered) progress.answered(answered);

      const replan = progress.takeReplan();
      if (replan) {
        adopt(await writePlan('replan', `A step could not be completed: ${replan}`, progress.finishedViews()), replan);
        questions.reset();
        const whyAgain = reviewBeforeWork();
        if (whyAgain) await reviewUntilApproved(whyAgain);
        continue;
      }

      const due = progress.dueCheckpoints();
      if (due.length) await reviewUntilApproved('checkpoint', due);
    }

    setStatus('running', 'composing the answer');
    const composed = await modelNodes.composeAnswer.executeWithOptions({ summary: 'answer' }, [
      { projectDir: input.projectDir, request: input.prompt, goal: progress.goal!, results: progress.allResults() },
    ]);
    giveAnswer(composed.text, meter.modelCall(composed.usage));
    return finish('done');
  }

  try {
    return await work.run(main);
  } catch (err) {
    if (isCancellation(err) && cancelReason !== null) {
      reviews.withdraw();
      questions.withdraw();
      permissions.withdraw();
      error = cancelReason;
      return finish('cancelled', cancelReason);
    }
    if (isCancellation(err)) throw err;
    return fail(failureCode(err, 'TaskFailed'), failureMessage(err));
  }
}
