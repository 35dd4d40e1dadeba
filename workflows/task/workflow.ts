/**
 * `taskWorkflow` (contract): one user task, from the request to the answer.
 *
 * Path: `context` event → (route, for a standalone task) → plan (`write_plan`) → review when the plan or the
 * review policy asks for it (revise goes back to the Planner and the revised plan is reviewed again) → work
 * loop: ready steps run as a batch; one `pick_tools` call binds the batch's tool calls; every path a call
 * touches passes the permission gate before dispatch; calls run concurrently except those touching the same
 * file; triage (and the evaluator where needed) decides retry, replan or move on → checkpoints → answer
 * (`compose_answer`, labelled unverified).
 *
 * Messages: signals (and same-named updates) `review`, `clarify`, `permission`; signal `cancel`; queries
 * `state` and `events {after}`. Every pause is a `condition` on workflow state, so it survives worker and
 * server restarts. Status is mirrored into the `KleaStatus` search attribute and the run's current details.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import { addUsage, type ModelUsage } from '../../common/model-protocol';
import { grantCovers, type PathOp } from '../../common/path-guard';
import { planHash, type Plan, type PlanStep } from '../../common/plan';
import { KleaMode, KleaStatus } from '../../common/search-attributes';
import {
  CancelSchema,
  ClarifySchema,
  PermissionDecisionSchema,
  ReviewDecisionSchema,
  TaskInputSchema,
  type ClarifyAnswers,
  type PendingInterrupt,
  type PermissionDecision,
  type PermissionRequest,
  type ReviewDecision,
  type SessionGrant,
  type StepResultView,
  type StepState,
  type TaskInput,
  type TaskResult,
  type TaskState,
} from '../../common/task';
import { toolRetryPolicy, type PickedCall } from '../../common/tools';
import { modelNodes, projectFacts, toolCalls } from '../shared/activities';
import { EventLog } from '../shared/event-log';
import { parseInput, parseOrThrow, parseSignal } from '../shared/payloads';
import { grantSignal } from '../session/messages';
import {
  cancelSignal,
  clarifySignal,
  clarifyUpdate,
  eventsQuery,
  permissionSignal,
  permissionUpdate,
  reviewSignal,
  reviewUpdate,
  stateQuery,
} from './messages';
import { answersProblem } from './questions';
import { SCIENTIFIC_MODE_EXPLANATION } from './modes';
import { allFinished, pathDependencies, readySteps } from './plan-graph';
import { callSummary, cut, failureCode, failureMessage, withAnswers } from './text';
import { applyVerdict, triage, type CallOutcome, type TriageDecision } from './triage';

/** Attempts of one step (first run + retries). */
export const MAX_STEP_ATTEMPTS = 3;
/** Replans of one task (after failures or missing tools). */
export const MAX_REPLANS = 3;
/** A step's result as kept in state and shown to later prompts. */
const RESULT_CHARS = 2000;

export async function taskWorkflow(rawInput: TaskInput): Promise<TaskResult> {
  const input = parseInput(TaskInputSchema, 'invalid task input', rawInput);
  const log = new EventLog();

  // ------------------------------------------------------------------ state
  let status: TaskStatus = 'routing';
  let goal: string | null = null;
  let plan: Plan | null = null;
  let currentHash: string | null = null;
  let planVersion = 0;
  /** Steps of the current plan plus finished steps of earlier plans, in order. */
  let graph: PlanStep[] = [];
  const steps = new Map<string, StepState>();
  const fullResults = new Map<string, string>();
  const answers = new Map<string, Record<string, string>>();
  const failures = new Map<string, string>();
  let answer: string | null = null;
  let error: string | null = null;
  const sessionGrants: SessionGrant[] = [...input.grants];
  const newGrants: SessionGrant[] = [];
  let usage: ModelUsage = { inputTokens: 0, outputTokens: 0 };
  let modelCalls = 0;
  let toolCallCount = 0;
  let replansUsed = 0;
  const checkpointed = new Set<string>();

  let pendingReview: Extract<PendingInterrupt, { kind: 'review' }> | null = null;
  let reviewDecision: ReviewDecision | null = null;
  /** The last decided review, so a client retrying the same decision is answered, not refused. */
  let lastReview: { planHash: string; decision: ReviewDecision['decision'] } | null = null;
  let pendingQuestion: Extract<PendingInterrupt, { kind: 'questions' }> | null = null;
  const permissionRequests = new Map<string, PermissionRequest>();
  const permissionDecisions = new Map<string, PermissionDecision['decision']>();
  let permissionCounter = 0;
  let cancelReason: string | null = null;

  const statusOf = () => new Map([...steps].map(([id, s]) => [id, s.status] as const));
  const pending = (): PendingInterrupt[] => [
    ...(pendingReview ? [pendingReview] : []),
    ...(pendingQuestion ? [pendingQuestion] : []),
    ...(permissionRequests.size ? [{ kind: 'permission' as const, requests: [...permissionRequests.values()] }] : []),
  ];
  const snapshot = (): TaskState => ({
    taskId: input.taskId,
    sessionId: input.sessionId,
    status,
    prompt: input.prompt,
    mode: input.mode,
    requestedMode: input.mode,
    toolAccess: input.toolAccess,
    goal,
    plan,
    planHash: currentHash,
    planVersion,
    steps: [...steps.values()],
    pending: pending(),
    answer,
    verification: 'unverified',
    error,
    newGrants,
    usage: { ...usage, modelCalls, toolCalls: toolCallCount },
    lastSeq: log.lastSeq,
  });

  // ------------------------------------------------------------------ status and visibility
  const setStatus = (next: TaskStatus, detail?: string) => {
    if (next !== status) upsertSearchAttributes([{ key: KleaStatus, value: next }]);
    status = next;
    const waiting = pending()
      .map((p) =>
        p.kind === 'review'
          ? `review of plan ${p.planHash}`
          : p.kind === 'questions'
            ? `answers for step ${p.stepId}`
            : `${p.requests.length} permission decision(s)`
      )
      .join(', ');
    setCurrentDetails(
      [
        `**${next}**${detail ? `: ${detail}` : ''}`,
        goal ? `goal: ${goal}` : '',
        waiting ? `waiting for: ${waiting}` : '',
        plan ? `plan v${planVersion}, ${steps.size} steps` : '',
      ]
        .filter(Boolean)
        .join('\n\n')
    );
    if (isFinalStatus(next)) log.emit({ type: 'status', status: next, detail });
  };
  /** After a decision arrives: back to running, or the next thing still waited for. */
  const settleStatus = () => {
    if (isFinalStatus(status)) return;
    if (permissionRequests.size) setStatus('awaiting_permission');
    else if (pendingReview) setStatus('awaiting_review');
    else if (status === 'awaiting_permission') setStatus('running');
  };
  const count = (u: ModelUsage) => {
    usage = addUsage(usage, u);
    modelCalls++;
  };

  // ------------------------------------------------------------------ handlers
  setHandler(stateQuery, snapshot);
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0));

  const isRepeatedReview = (d: ReviewDecision) =>
    !pendingReview &&
    lastReview !== null &&
    d.decision === lastReview.decision &&
    (!d.planHash || d.planHash === lastReview.planHash);
  const reviewProblem = (d: ReviewDecision): string | null => {
    if (!pendingReview) return 'no plan review is pending';
    if (d.planHash && d.planHash !== pendingReview.planHash)
      return `stale decision: it is for plan ${d.planHash}, the plan under review is ${pendingReview.planHash}`;
    if (reviewDecision) return 'this review has already been decided';
    return null;
  };
  const acceptReview = (d: ReviewDecision) => {
    // Duplicate and stale decisions change nothing.
    if (!ReviewDecisionSchema.safeParse(d).success || reviewProblem(d)) return;
    reviewDecision = d;
  };
  setHandler(reviewSignal, acceptReview);
  setHandler(
    reviewUpdate,
    (d) => {
      acceptReview(d);
      return { accepted: true as const };
    },
    {
      validator: (d) => {
        const p = parseOrThrow(ReviewDecisionSchema, 'invalid review decision', d, 'decision');
        const problem = reviewProblem(p);
        if (problem && !isRepeatedReview(p)) throw new Error(problem);
      },
    }
  );

  const clarifyProblem = (a: ClarifyAnswers): string | null =>
    pendingQuestion ? answersProblem(pendingQuestion.questions, a.answers) : 'no questions are pending';
  const acceptClarify = (raw: unknown) => {
    // A repeat after the answers were taken, or answers with nothing pending, change nothing and say nothing.
    if (!pendingQuestion || answers.has(pendingQuestion.stepId)) return;
    const p = parseSignal(ClarifySchema, raw, 'answers');
    const problem = p.ok ? clarifyProblem(p.value) : p.problem;
    if (problem) return ignoredSignal('clarify', problem);
    if (p.ok) answers.set(pendingQuestion.stepId, p.value.answers);
  };
  setHandler(clarifySignal, acceptClarify);
  setHandler(
    clarifyUpdate,
    (a) => {
      acceptClarify(a);
      return { accepted: true as const };
    },
    {
      validator: (a) => {
        const problem = clarifyProblem(parseOrThrow(ClarifySchema, 'invalid answers', a, 'answers'));
        if (problem) throw new Error(problem);
      },
    }
  );

  /** Decisions already applied, so a client retrying the same one is answered, not refused. */
  const decidedPermissions = new Map<string, PermissionDecision['decision']>();
  const permissionProblem = (d: PermissionDecision): string | null => {
    if (decidedPermissions.has(d.requestId)) {
      return decidedPermissions.get(d.requestId) === d.decision
        ? null
        : `permission request ${d.requestId} was already decided (${decidedPermissions.get(d.requestId)})`;
    }
    if (!permissionRequests.has(d.requestId)) return `no permission request ${d.requestId} is pending`;
    if (permissionDecisions.has(d.requestId)) return `permission request ${d.requestId} has already been decided`;
    return null;
  };
  const acceptPermission = (d: PermissionDecision) => {
    if (!PermissionDecisionSchema.safeParse(d).success || permissionProblem(d) || decidedPermissions.has(d.requestId))
      return;
    permissionDecisions.set(d.requestId, d.decision);
  };
  setHandler(permissionSignal, acceptPermission);
  setHandler(
    permissionUpdate,
    (d) => {
      acceptPermission(d);
      return { accepted: true as const };
    },
    {
      validator: (d) => {
        const p = parseOrThrow(PermissionDecisionSchema, 'invalid permission decision', d, 'decision');
        const problem = permissionProblem(p);
        if (problem) throw new Error(problem);
      },
    }
  );

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

  // ------------------------------------------------------------------ helpers
  const result = (s: 'done' | 'failed' | 'cancelled'): TaskResult => ({
    taskId: input.taskId,
    status: s,
    answer,
    verification: 'unverified',
    error,
    newGrants,
  });
  const finish = (s: 'done' | 'failed' | 'cancelled', detail?: string): TaskResult => {
    setStatus(s, detail);
    return result(s);
  };
  /** A signal's payload that could not be used: reported, since a signal has no answer to carry the error. */
  function ignoredSignal(name: string, problem: string): void {
    log.emit({ type: 'error', code: 'InvalidSignal', message: `${name} signal: ${problem}` });
  }
  const fail = (code: string, message: string, stepId?: string): TaskResult => {
    error = message;
    log.emit({ type: 'error', code, message, ...(stepId ? { stepId } : {}) });
    return finish('failed', message);
  };
  const giveAnswer = (text: string) => {
    answer = text;
    log.emit({ type: 'answer', text, verification: 'unverified', label: UNVERIFIED_LABEL });
  };
  const view = (s: PlanStep): StepResultView => {
    const st = steps.get(s.id);
    return { id: s.id, title: s.title, status: st?.status ?? 'pending', result: st?.result ?? null };
  };
  const dependencyResults = (s: PlanStep): StepResultView[] =>
    s.depends_on
      .map((d) => graph.find((g) => g.id === d))
      .filter((d): d is PlanStep => !!d)
      .map((d) => ({ ...view(d), result: cut(fullResults.get(d.id) ?? '', RESULT_CHARS) }));
  const finishedViews = () => graph.filter((s) => ['done', 'failed'].includes(steps.get(s.id)?.status ?? '')).map(view);

  /** Makes `next` the current plan: finished steps stay, unfinished ones are replaced. */
  const adoptPlan = (next: Plan) => {
    const finished = graph.filter((s) => ['done', 'failed'].includes(steps.get(s.id)?.status ?? ''));
    for (const s of graph) if (!finished.includes(s)) steps.delete(s.id);
    graph = [...finished, ...next.steps];
    for (const s of next.steps)
      steps.set(s.id, { id: s.id, title: s.title, status: 'pending', attempts: 0, result: null, ok: null });
    plan = next;
    goal = next.goal;
    currentHash = planHash(next);
    planVersion++;
  };

  async function writePlan(summary: string, feedback?: string, finished?: StepResultView[]): Promise<Plan> {
    setStatus('planning', summary);
    const res = await modelNodes.writePlan.executeWithOptions({ summary }, [
      {
        projectDir: input.projectDir,
        toolAccess: input.toolAccess,
        request: input.prompt,
        summary: input.summary || undefined,
        recentTurns: input.recentTurns.length ? input.recentTurns : undefined,
        previousPlan: plan ?? undefined,
        feedback,
        finished: finished?.length ? finished : undefined,
      },
    ]);
    count(res.usage);
    return res.plan;
  }

  async function review(
    reason: 'before_work' | 'checkpoint' | 'policy' | 'revised',
    afterStepIds: string[] = []
  ): Promise<ReviewDecision> {
    reviewDecision = null;
    pendingReview = { kind: 'review', reason, planHash: currentHash!, plan: plan!, afterStepIds };
    log.emit({
      type: 'review_requested',
      reason,
      plan: plan!,
      planHash: currentHash!,
      afterStepIds,
      results: graph
        .filter((s) => steps.get(s.id)?.status !== 'pending')
        .map((s) => ({
          stepId: s.id,
          title: s.title,
          status: steps.get(s.id)!.status,
          result: steps.get(s.id)!.result,
        })),
    });
    setStatus('awaiting_review', reason === 'checkpoint' ? `results after ${afterStepIds.join(', ')}` : 'the plan');
    await condition(() => reviewDecision !== null);
    const decision = reviewDecision!;
    lastReview = { planHash: pendingReview.planHash, decision: decision.decision };
    pendingReview = null;
    return decision;
  }

  /** Reviews until the current plan is approved: every revision is presented again. */
  async function reviewUntilApproved(first: 'before_work' | 'checkpoint' | 'policy', afterStepIds: string[] = []) {
    let reason: 'before_work' | 'checkpoint' | 'policy' | 'revised' = first;
    for (;;) {
      const d = await review(reason, reason === 'checkpoint' ? afterStepIds : []);
      if (d.decision === 'approve') return;
      const feedback = d.feedback?.trim() || 'The user asked for a revision without saying what to change.';
      const finished = finishedViews();
      adoptPlan(await writePlan('revise plan', feedback, finished));
      log.emit({ type: 'plan', plan: plan!, planHash: currentHash!, version: planVersion });
      reason = 'revised';
    }
  }

  const needsReviewBeforeWork = () => plan!.review.before_work || input.review === 'always';

  // ------------------------------------------------------------------ the permission gate
  const covered = (path: string, op: PathOp) => grantCovers(sessionGrants, path, op);

  async function askPermission(
    call: PickedCall,
    p: {
      real: string;
      requested: string;
      op: 'read' | 'write' | 'execute';
      class: 'outside' | 'sensitive';
      reason: string;
    }
  ) {
    const requestId = `${input.taskId}.perm-${++permissionCounter}`;
    const request: PermissionRequest = {
      requestId,
      stepId: call.stepId,
      tool: call.qualifiedName,
      path: p.real,
      requestedPath: p.requested,
      op: p.op,
      class: p.class,
      reason: p.reason,
    };
    permissionRequests.set(requestId, request);
    log.emit({ type: 'permission_requested', ...request });
    setStatus('awaiting_permission', `${call.qualifiedName} wants to ${p.op} ${p.real}`);
    // A grant for the session made while this request waited answers it too.
    await condition(() => permissionDecisions.has(requestId) || covered(p.real, p.op));
    const decision = permissionDecisions.get(requestId) ?? 'allow_session';
    const automatic = !permissionDecisions.has(requestId);
    decidedPermissions.set(requestId, decision);
    permissionRequests.delete(requestId);
    permissionDecisions.delete(requestId);
    if (decision === 'allow_session' && !automatic && !covered(p.real, p.op)) {
      const grant = { path: p.real, op: p.op };
      sessionGrants.push(grant);
      newGrants.push(grant);
      tellSession(grant);
    }
    log.emit({ type: 'permission_decided', requestId, decision, path: p.real, automatic });
    settleStatus();
    return decision;
  }

  /**
   * The session records a grant when it is made, not when this task returns: a task that fails or is terminated
   * later must not lose the user's decision.
   */
  function tellSession(grant: SessionGrant): void {
    const parent = workflowInfo().parent;
    if (!parent || !patched('grant-reaches-session-when-made')) return;
    // The session may have ended (it is cancelled with its tasks); then there is nobody to tell.
    void getExternalWorkflowHandle(parent.workflowId)
      .signal(grantSignal, grant)
      .catch(() => undefined);
  }

  /** One tool call: ordered after earlier calls on the same files, through the gate, then dispatched. */
  async function runCall(
    call: PickedCall,
    guarded: Awaited<ReturnType<Activities['checkPaths']>>,
    waitFor: Promise<unknown>[],
    idempotencyKey: string
  ): Promise<CallOutcome> {
    await Promise.all(waitFor);
    const grants: SessionGrant[] = [];
    for (const p of guarded) {
      if (p.class === 'inside') continue;
      const gated = { ...p, class: p.class };
      if (covered(p.real, p.op)) {
        grants.push({ path: p.real, op: p.op });
        continue;
      }
      const decision = await askPermission(call, gated);
      if (decision === 'deny') {
        // Security: a denied call is never scheduled; the step gets a non-halting error instead.
        return {
          tool: call.qualifiedName,
          status: 'denied',
          text: `${p.requested} (${p.reason}) was denied by the user`,
        };
      }
      grants.push({ path: p.real, op: p.op });
    }
    toolCallCount++;
    try {
      const r = await toolCalls.callTool.executeWithOptions(
        { summary: callSummary(call), retry: toolRetryPolicy(call) },
        [
          {
            projectDir: input.projectDir,
            toolAccess: input.toolAccess,
            server: call.server,
            tool: call.tool,
            args: call.args,
            grants,
            idempotencyKey,
          },
        ]
      );
      // A cut output says where the whole of it is kept.
      const text = r.ref ? `[full output of ${r.bytes} bytes kept as ${r.ref}]\n${r.text}` : r.text;
      return { tool: call.qualifiedName, status: r.status, text };
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { tool: call.qualifiedName, status: 'failed', text: failureMessage(err) };
    }
  }

  // ------------------------------------------------------------------ steps
  let replanReason: string | null = null;

  const stepWithAnswers = (s: PlanStep): PlanStep => ({
    ...s,
    instruction: withAnswers(s.instruction, answers.get(s.id)),
  });

  async function decide(s: PlanStep, noTool: string | null, calls: CallOutcome[]): Promise<TriageDecision> {
    const st = steps.get(s.id)!;
    const tin = {
      noTool,
      calls,
      attempts: st.attempts,
      maxAttempts: MAX_STEP_ATTEMPTS,
      replansLeft: MAX_REPLANS - replansUsed,
    };
    const d = triage(tin);
    if (d.outcome !== 'evaluate') return d;
    const ev = await modelNodes.evaluateStep.executeWithOptions({ summary: `step ${s.id} · evaluate` }, [
      {
        goal: goal!,
        step: stepWithAnswers(s),
        calls: calls.map((c) => ({ ...c, text: cut(c.text, RESULT_CHARS) })),
        attempt: st.attempts,
      },
    ]);
    count(ev.usage);
    return applyVerdict(ev.verdict, ev.reason, tin);
  }

  function settleStep(s: PlanStep, d: TriageDecision, calls: CallOutcome[], text: string) {
    const st = steps.get(s.id)!;
    const callView = calls.map((c) => ({ tool: c.tool, status: c.status }));
    if (d.outcome === 'retry' || d.outcome === 'replan') {
      failures.set(s.id, d.reason);
      st.status = 'pending';
      if (d.outcome === 'replan') replanReason ??= `step ${s.id} (${s.title}): ${d.reason}`;
      log.emit({
        type: 'step_finished',
        stepId: s.id,
        status: 'retry',
        summary: cut(text || d.reason, 300),
        outcome: d.outcome,
        reason: d.reason,
        calls: callView,
      });
      return;
    }
    if (d.outcome === 'evaluate') return; // not reached: decide() resolves evaluations
    st.status = d.ok ? 'done' : 'failed';
    st.ok = d.ok;
    const full = text || d.reason;
    fullResults.set(s.id, cut(full, 4 * RESULT_CHARS));
    st.result = cut(full, RESULT_CHARS);
    log.emit({
      type: 'step_finished',
      stepId: s.id,
      status: st.status,
      summary: cut(full, 300),
      outcome: 'move_on',
      reason: d.reason,
      calls: callView,
    });
  }

  function startStep(s: PlanStep) {
    const st = steps.get(s.id)!;
    st.status = 'running';
    st.attempts++;
    log.emit({ type: 'step_started', stepId: s.id, title: s.title, attempt: st.attempts });
  }

  async function runTextStep(s: PlanStep) {
    startStep(s);
    try {
      const r = await modelNodes.doStep.executeWithOptions({ summary: `step ${s.id} · think` }, [
        { goal: goal!, step: stepWithAnswers(s), dependencyResults: dependencyResults(s) },
      ]);
      count(r.usage);
      settleStep(s, { outcome: 'move_on', ok: true, reason: 'done' }, [], r.text);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const calls: CallOutcome[] = [{ tool: 'do_step', status: 'failed', text: failureMessage(err) }];
      settleStep(s, await decide(s, null, calls), calls, '');
    }
  }

  async function runToolSteps(batch: PlanStep[]) {
    for (const s of batch) startStep(s);
    const picked = await modelNodes.pickTools.executeWithOptions(
      { summary: `pick tools · ${batch.map((s) => `step ${s.id}`).join(', ')}` },
      [
        {
          projectDir: input.projectDir,
          toolAccess: input.toolAccess,
          goal: goal!,
          steps: batch.map((s) => ({
            id: s.id,
            title: s.title,
            instruction: withAnswers(s.instruction, answers.get(s.id)),
            dependencyResults: dependencyResults(s),
            previousFailure: failures.get(s.id),
          })),
        },
      ]
    );
    count(picked.usage);
    const calls = picked.calls;
    const guarded = await Promise.all(
      calls.map((c) =>
        projectFacts.checkPaths.executeWithOptions({ summary: `step ${c.stepId} · check paths` }, [
          { projectDir: input.projectDir, server: c.server, tool: c.tool, args: c.args },
        ])
      )
    );
    const waits = pathDependencies(guarded.map((g) => g.map((p) => p.real)));
    const runs: Array<Promise<CallOutcome>> = [];
    calls.forEach((c, i) => {
      // Stable across Temporal's retries of this call, distinct for every new attempt of the step.
      const key = `${workflowInfo().workflowId}/${c.stepId}/attempt-${steps.get(c.stepId)?.attempts ?? 0}/call-${i}`;
      runs.push(
        runCall(
          c,
          guarded[i],
          waits[i].map((j) => runs[j].catch(() => undefined)),
          key
        )
      );
    });
    // Each step is settled as soon as its own calls finish: a decision pending for one call holds up no other step.
    await Promise.all(
      batch.map(async (s) => {
        const mine = await Promise.all(runs.filter((_, i) => calls[i].stepId === s.id));
        const none = picked.noSuitable.find((n) => n.stepId === s.id);
        const noTool = none ? none.reason : mine.length === 0 ? 'the tool picker named no tool for this step' : null;
        const text = mine.map((o) => (mine.length > 1 ? `[${o.tool}] ${o.text}` : o.text)).join('\n\n');
        settleStep(s, await decide(s, noTool, mine), mine, text);
      })
    );
  }

  async function runBatch(batch: PlanStep[]) {
    setStatus('running', `steps ${batch.map((s) => s.id).join(', ')}`);
    const toolSteps = batch.filter((s) => s.needs_tool);
    await Promise.all([
      ...batch.filter((s) => !s.needs_tool).map(runTextStep),
      ...(toolSteps.length ? [runToolSteps(toolSteps)] : []),
    ]);
  }

  // ------------------------------------------------------------------ the task path
  async function main(): Promise<TaskResult> {
    upsertSearchAttributes([{ key: KleaMode, value: input.mode }]);
    const context = await projectFacts.projectContextInfo
      .executeWithOptions({ summary: 'project context' }, [{ projectDir: input.projectDir }])
      .catch(() => ({ file: null }));
    const declined = input.mode === 'scientific';
    log.emit({
      type: 'context',
      mode: input.mode,
      requestedMode: input.mode,
      modeNote: declined ? SCIENTIFIC_MODE_EXPLANATION : null,
      toolAccess: input.toolAccess,
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
      count(route.usage);
      if (route.route === 'chat' && route.reply) {
        giveAnswer(route.reply);
        return finish('done');
      }
    }

    adoptPlan(await writePlan('plan'));
    log.emit({ type: 'plan', plan: plan!, planHash: currentHash!, version: planVersion });
    if (needsReviewBeforeWork()) await reviewUntilApproved(plan!.review.before_work ? 'before_work' : 'policy');

    for (;;) {
      const current = statusOf();
      if (allFinished(graph, current)) break;
      const ready = readySteps(graph, current);
      const asking = ready.filter((s) => s.questions.length > 0 && !answers.has(s.id));
      const runnable = ready.filter((s) => !asking.includes(s));
      if (!pendingQuestion && asking.length) {
        const s = asking[0];
        pendingQuestion = { kind: 'questions', stepId: s.id, questions: s.questions };
        steps.get(s.id)!.status = 'awaiting_clarification';
        log.emit({ type: 'questions', stepId: s.id, questions: s.questions });
      }
      if (runnable.length) {
        await runBatch(runnable);
      } else if (pendingQuestion) {
        const waitingFor = pendingQuestion.stepId;
        setStatus('awaiting_clarification', `step ${waitingFor}`);
        await condition(() => answers.has(waitingFor));
      } else {
        return fail('PlanStuck', 'no step can run: the plan is stuck');
      }
      if (pendingQuestion && answers.has(pendingQuestion.stepId)) {
        steps.get(pendingQuestion.stepId)!.status = 'pending';
        pendingQuestion = null;
      }

      if (replanReason) {
        const reason = replanReason;
        replanReason = null;
        replansUsed++;
        adoptPlan(await writePlan('replan', `A step could not be completed: ${reason}`, finishedViews()));
        answers.clear();
        pendingQuestion = null;
        log.emit({ type: 'replanned', reason, plan: plan!, planHash: currentHash!, version: planVersion });
        if (needsReviewBeforeWork()) await reviewUntilApproved(plan!.review.before_work ? 'before_work' : 'policy');
        continue;
      }

      const due = plan!.review.after_step_ids.filter(
        (id) => !checkpointed.has(id) && ['done', 'failed'].includes(steps.get(id)?.status ?? '')
      );
      if (due.length) {
        due.forEach((id) => checkpointed.add(id));
        await reviewUntilApproved('checkpoint', due);
      }
    }

    setStatus('running', 'composing the answer');
    const composed = await modelNodes.composeAnswer.executeWithOptions({ summary: 'answer' }, [
      {
        projectDir: input.projectDir,
        request: input.prompt,
        goal: goal!,
        results: graph.map((s) => ({ ...view(s), result: cut(fullResults.get(s.id) ?? '', RESULT_CHARS) })),
      },
    ]);
    count(composed.usage);
    giveAnswer(composed.text);
    return finish('done');
  }

  try {
    return await work.run(main);
  } catch (err) {
    if (isCancellation(err) && cancelReason !== null) {
      pendingReview = null;
      pendingQuestion = null;
      permissionRequests.clear();
      error = cancelReason;
      return finish('cancelled', cancelReason);
    }
    if (isCancellation(err)) throw err;
    return fail(failureCode(err, 'TaskFailed'), failureMessage(err));
  }
}
