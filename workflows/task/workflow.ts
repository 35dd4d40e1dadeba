/**
 * `taskWorkflow` (contract), id `task-<sessionId>-<n>`: one user task, from the request to the answer. Started by
 * a session for each task it routes, or alone (`POST /tasks`).
 *
 * Path: `context` event → (route, for a standalone task) → plan (`write_plan`) → review when the plan or the
 * review policy asks for it (revise goes back to the Planner and the revised plan is reviewed again; `Planning`) →
 * rounds of ready steps (`StepRunner`), each step's questions asked first, replans and after-step reviews between
 * rounds → answer (`compose_answer`, labelled unverified). The task's state lives in pure modules beside this file
 * (`PlanProgress`, `ReviewGate`, `QuestionGate`, `PermissionGate`, `UsageMeter`, status.ts).
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
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import { pickedFor } from '../../common/first-pick';
import type { PlanStep } from '../../common/plan';
import type { CallUsage } from '../../common/model-protocol';
import { KleaStatus, KleaWaitingSince } from '../../common/search-attributes';
import {
  CancelSchema,
  ClarifySchema,
  PermissionDecisionSchema,
  ReviewDecisionSchema,
  TaskInputSchema,
  type PendingInterrupt,
  type TaskInput,
  type TaskResult,
} from '../../common/task';
import { localProjectFacts, modelNodes, projectFacts } from '../shared/activities';
import { EventLog } from '../shared/event-log';
import { parseInput, parseOrThrow, parseSignal } from '../shared/payloads';
import { checkProject } from '../shared/project-check';
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
import { TaskChanges } from './changes';
import { allFinished, nextRound } from './plan-graph';
import { Planning } from './planning';
import { PlanProgress } from './plan-progress';
import { QuestionGate } from './questions';
import { ReviewGate } from './review-gate';
import { SearchAttributeMirror } from './search-mirror';
import { statusAfterDecision, statusDetails, taskState } from './status';
import { StepRunner } from './step-runner';
import { failureCode, failureMessage } from './text';
import { UsageMeter } from './usage';
import { kleaObserve } from '../shared/observe';

export async function taskWorkflow(rawInput: TaskInput): Promise<TaskResult> {
  const input = parseInput(TaskInputSchema, 'invalid task input', rawInput);
  const changes = new TaskChanges();
  const log = new EventLog();
  const progress = new PlanProgress();
  const reviews = new ReviewGate();
  const questions = new QuestionGate();
  // Security: grants in the input count only when the task's session handed them over (it records what the user
  // allowed); a task started some other way, grants and all, asks for every path like a new one.
  const parent = workflowInfo().parent?.workflowId ?? '';
  const inputGrantsIgnored =
    input.grants.length > 0 && !parent.startsWith('session-') && changes.has('input-grants-from-session-only');
  const permissions = new PermissionGate(input.taskId, inputGrantsIgnored ? [] : input.grants);
  const mirror = new SearchAttributeMirror(changes.current);
  // The totals as search attributes, so `KleaTokens > 100000` finds expensive runs in the Temporal UI.
  const meter = new UsageMeter(() => {
    if (changes.has('usage-search-attributes')) mirror.usage(meter.tokens, meter.models.modelCalls);
  });
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
      const waiting = next.startsWith('awaiting_') && changes.has('waiting-since-attribute');
      mirror.status([
        { key: KleaStatus, value: next },
        ...(waiting ? [{ key: KleaWaitingSince, value: new Date() }] : []),
      ]);
    } else {
      mirror.unchanged();
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
    kleaObserve.taskFinished(s);
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

  // ------------------------------------------------------------------ the task path
  const planning = new Planning({ input, log, progress, reviews, meter, setStatus });
  const runner = new StepRunner({
    input,
    log,
    progress,
    questions,
    permissions,
    meter,
    changes,
    setStatus,
    settleStatus,
  });

  async function main(): Promise<TaskResult> {
    mirror.mode(input.mode);
    if (inputGrantsIgnored)
      log.emit({
        type: 'error',
        code: 'GrantsIgnored',
        message: `the ${input.grants.length} grant(s) in the task's input were ignored: only a session hands grants to its tasks`,
      });
    // The project context is read by a local activity since this change; runs started before it keep the activity
    // they scheduled.
    const project = await checkProject(
      input.projectDir,
      changes.has('project-context-local-activity')
        ? localProjectFacts.projectContextInfo
        : projectFacts.projectContextInfo
    );
    if (project.refused) return fail('ProjectNotAllowed', project.refused);
    const { context } = project;
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

    // The first round's tool picks, when the Planner's activity made them with the plan (common/first-pick.ts).
    let firstPick = await planning.plan();
    /** The picks for `batch` if they were made for exactly its tool steps; any other picks are counted and dropped. */
    const takeFirstPick = (batch: PlanStep[] = []) => {
      const picks = firstPick;
      firstPick = null;
      const toolSteps = batch.filter((s) => s.needs_tool);
      if (!picks || pickedFor(picks, toolSteps)) return picks;
      // Counted on the first step they were made for, whose `step_finished` then carries it.
      meter.modelCall(picks.usage, picks.stepIds[0]);
      return null;
    };
    const review = planning.reviewBeforeWork();
    if (review) {
      takeFirstPick();
      await review;
    }

    for (;;) {
      const budgetReview = planning.keepToBudget();
      if (budgetReview) {
        takeFirstPick();
        await budgetReview;
      }
      const current = progress.statuses();
      if (allFinished(progress.graph, current)) break;
      const { runnable, asking } = nextRound(progress.graph, current, (id) => questions.isAnswered(id));
      if (!questions.pending && asking.length) {
        const asked = questions.ask(asking[0]);
        progress.awaitAnswers(asked.stepId);
        log.emit({ type: 'questions', stepId: asked.stepId, questions: asked.questions });
      }
      if (runnable.length) {
        await runner.runBatch(runnable, takeFirstPick(runnable));
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
        await planning.replan(replan);
        questions.reset();
        const revisedReview = planning.reviewBeforeWork();
        if (revisedReview) await revisedReview;
        continue;
      }
      const checkpoint = planning.reviewCheckpoints();
      if (checkpoint) await checkpoint;
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
