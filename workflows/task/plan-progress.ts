/**
 * The plan being carried out and where each of its steps stands (pure): adopting a plan, a revision or a replan,
 * starting and settling steps within their budgets, and what later prompts, reviews and the answer see of the
 * results.
 */
import type { EventBody } from '../../common/events';
import { planHash, type Plan, type PlanStep } from '../../common/plan';
import type { NotAchieved, StepResultView, StepState, StepStatus, TaskCarry } from '../../common/task';
import { pendingDependents } from './plan-graph';
import { cut } from './text';
import type { CallOutcome, TriageDecision, TriageInput } from './triage';

/** Attempts of one step (first run + retries). */
export const MAX_STEP_ATTEMPTS = 3;
/** Replans of one task (after failures or missing tools). */
export const MAX_REPLANS = 3;
/** A step's result as kept in state and shown to later prompts. */
export const RESULT_CHARS = 2000;

type StepFinished = Extract<EventBody, { type: 'step_finished' }>;
export type ProgressCarry = TaskCarry['progress'];

const isFinished = (s: StepState | undefined) => s?.status === 'done' || s?.status === 'failed';

export class PlanProgress {
  plan: Plan | null = null;
  hash: string | null = null;
  version = 0;
  /** Steps of the current plan plus finished steps of earlier plans, in order. */
  graph: PlanStep[] = [];
  private readonly steps = new Map<string, StepState>();
  /** Why a step's last attempt failed, for the picker's next attempt. */
  private readonly failures = new Map<string, string>();
  /** The calls (tools and arguments) of the last failed attempt at each instruction. */
  private readonly failedCalls = new Map<string, string>();
  /** Why a finished step did not achieve its instruction (it failed). */
  private readonly missed = new Map<string, string>();
  /** Steps whose after-step review has been held (each is reviewed once). */
  private readonly checkpointed = new Set<string>();
  private replanReason: string | null = null;
  /** The check that failed in the step that asked for the waiting replan, if that is why it asked. */
  private replanCheck: string | null = null;
  /** The files the task's steps have changed (this run of the workflow), in the order first changed. */
  private readonly changed = new Set<string>();
  private replansUsed = 0;

  /** A fresh task's progress, or (continue-as-new) the progress an earlier run of the task carried over. */
  constructor(carried?: ProgressCarry) {
    if (!carried) return;
    this.plan = carried.plan;
    this.hash = planHash(carried.plan);
    this.version = carried.version;
    this.graph = carried.graph;
    for (const st of carried.steps) this.steps.set(st.id, { ...st });
    for (const [id, why] of Object.entries(carried.failures)) this.failures.set(id, why);
    for (const [id, why] of Object.entries(carried.missed)) this.missed.set(id, why);
    for (const id of carried.checkpointed) this.checkpointed.add(id);
    this.replansUsed = carried.replansUsed;
  }

  /** Everything the next run needs to go on from here (continue-as-new, between rounds: no replan waits then). */
  carry(): ProgressCarry {
    if (!this.plan) throw new TypeError('no plan has been adopted yet');
    if (this.replanReason !== null) throw new TypeError('a replan is waiting to be taken');
    return {
      plan: this.plan,
      version: this.version,
      graph: this.graph,
      steps: this.states(),
      failures: Object.fromEntries(this.failures),
      missed: Object.fromEntries(this.missed),
      checkpointed: [...this.checkpointed],
      replansUsed: this.replansUsed,
    };
  }

  get goal(): string | null {
    return this.plan?.goal ?? null;
  }

  /** Steps known so far, finished steps of earlier plans included. */
  get stepCount(): number {
    return this.steps.size;
  }

  /** The current plan as the `plan` and `replanned` events carry it. */
  current(): { plan: Plan; planHash: string; version: number } {
    if (!this.plan || !this.hash) throw new TypeError('no plan has been adopted yet');
    return { plan: this.plan, planHash: this.hash, version: this.version };
  }

  /** Makes `next` the current plan: finished steps stay, unfinished ones are replaced. */
  adopt(next: Plan): void {
    const finished = this.graph.filter((s) => isFinished(this.steps.get(s.id)));
    for (const s of this.graph) if (!finished.includes(s)) this.steps.delete(s.id);
    this.graph = [...finished, ...next.steps];
    for (const s of next.steps)
      this.steps.set(s.id, { id: s.id, title: s.title, status: 'pending', attempts: 0, result: null, ok: null });
    this.plan = next;
    this.hash = planHash(next);
    this.version++;
  }

  states(): StepState[] {
    return [...this.steps.values()];
  }

  statuses(): Map<string, StepStatus> {
    return new Map([...this.steps].map(([id, s]) => [id, s.status] as const));
  }

  attempts(stepId: string): number {
    return this.steps.get(stepId)?.attempts ?? 0;
  }

  previousFailure(stepId: string): string | undefined {
    return this.failures.get(stepId);
  }

  /** The step waits for the user's answers; one that stops to ask before its first call made no attempt. */
  awaitAnswers(stepId: string): void {
    const st = this.step(stepId);
    st.attempts -= st.status === 'running' ? 1 : 0;
    st.status = 'awaiting_clarification';
  }

  answered(stepId: string): void {
    this.step(stepId).status = 'pending';
  }

  /** A new attempt of a step; the `step_started` event that says so. */
  start(s: PlanStep): Extract<EventBody, { type: 'step_started' }> {
    const st = this.step(s.id);
    st.status = 'running';
    st.attempts++;
    return { type: 'step_started', stepId: s.id, title: s.title, attempt: st.attempts };
  }

  /** What triage needs to decide on a step's attempt, with the budgets left. */
  triageInput(s: PlanStep, noTool: string | null, calls: CallOutcome[], madeCalls?: string): TriageInput {
    return {
      noTool,
      calls,
      attempts: this.step(s.id).attempts,
      maxAttempts: MAX_STEP_ATTEMPTS,
      replansLeft: MAX_REPLANS - this.replansUsed,
      buildsOn: pendingDependents(this.plan?.steps ?? [], this.statuses(), s.id),
      ...(madeCalls !== undefined && this.failedCalls.get(s.instruction) === madeCalls
        ? { repeatsFailedAttempt: true }
        : {}),
    };
  }

  /**
   * Applies triage's decision to an attempt: a retry or a replan puts the step back to pending (the first replan
   * asked for in a round is the one done), anything else finishes it with its result. Null for `evaluate`, which
   * the caller resolves with the evaluator first.
   */
  settle(
    s: PlanStep,
    d: TriageDecision,
    calls: CallOutcome[],
    text: string,
    madeCalls?: string,
    failedCheck?: string
  ): StepFinished | null {
    const st = this.step(s.id);
    const callView = calls.map((c) => ({ tool: c.tool, status: c.status }));
    // What the attempt's writes and edits changed, as unified diffs.
    const changes = calls.flatMap((c) => (c.change ? [c.change] : []));
    const changed = changes.length ? { changes } : {};
    for (const c of changes) this.changed.add(c.path);
    if (d.outcome === 'retry' || d.outcome === 'replan') {
      this.failures.set(s.id, d.reason);
      if (madeCalls !== undefined) this.failedCalls.set(s.instruction, madeCalls);
      st.status = 'pending';
      if (d.outcome === 'replan' && this.replanReason === null) {
        this.replanReason = `step ${s.id} (${s.title}): ${d.reason}`;
        this.replanCheck = failedCheck ?? null;
      }
      return {
        type: 'step_finished',
        stepId: s.id,
        status: 'retry',
        summary: cut(text || d.reason, 300),
        outcome: d.outcome,
        reason: d.reason,
        calls: callView,
        ...changed,
      };
    }
    if (d.outcome === 'evaluate') return null;
    st.status = d.ok ? 'done' : 'failed';
    st.ok = d.ok;
    if (!d.ok) this.missed.set(s.id, d.reason);
    const full = text || d.reason;
    st.result = cut(full, RESULT_CHARS);
    return {
      type: 'step_finished',
      stepId: s.id,
      status: st.status,
      summary: cut(full, 300),
      outcome: 'move_on',
      reason: d.reason,
      calls: callView,
      ...changed,
    };
  }

  /** The files the task's steps have changed so far (since this run of the workflow began). */
  changedFiles(): string[] {
    return [...this.changed];
  }

  /**
   * The replan a round asked for, if any, and the check whose failure asked for it; taking it uses one of the task's
   * replans.
   */
  takeReplan(): { reason: string; failedCheck?: string } | null {
    const reason = this.replanReason;
    if (reason === null) return null;
    const failedCheck = this.replanCheck;
    this.replanReason = null;
    this.replanCheck = null;
    this.replansUsed++;
    return { reason, ...(failedCheck ? { failedCheck } : {}) };
  }

  /** Steps of the current plan's after-step reviews that have finished and not been reviewed yet. */
  dueCheckpoints(): string[] {
    const due = (this.plan?.review.after_step_ids ?? []).filter(
      (id) => !this.checkpointed.has(id) && isFinished(this.steps.get(id))
    );
    due.forEach((id) => this.checkpointed.add(id));
    return due;
  }

  view(s: PlanStep): StepResultView {
    const st = this.steps.get(s.id);
    return { id: s.id, title: s.title, status: st?.status ?? 'pending', result: st?.result ?? null };
  }

  /** Finished steps, which a new plan keeps (and may depend on). */
  finishedViews(): StepResultView[] {
    return this.graph.filter((s) => isFinished(this.steps.get(s.id))).map((s) => this.view(s));
  }

  /** The results a step builds on: those of its dependencies. */
  dependencyResults(s: PlanStep): StepResultView[] {
    return s.depends_on
      .map((d) => this.graph.find((g) => g.id === d))
      .filter((d): d is PlanStep => !!d)
      .map((d) => this.resultView(d));
  }

  /** What the steps `s` depends on were to do (their instructions), for the pick's help with data files. */
  dependencyInstructions(s: PlanStep): string[] {
    return s.depends_on.flatMap((d) => this.graph.find((g) => g.id === d)?.instruction ?? []);
  }

  /** Every step's result, for the answer. */
  allResults(): StepResultView[] {
    return this.graph.map((s) => this.resultView(s, true));
  }

  /** What a review shows of the work so far: every step that has started. */
  reviewResults(): Array<{ stepId: string; title: string; status: StepStatus; result: string | null }> {
    return this.graph
      .filter((s) => this.steps.get(s.id)?.status !== 'pending')
      .map((s) => ({ stepId: s.id, title: s.title, status: this.step(s.id).status, result: this.step(s.id).result }));
  }

  /**
   * The steps that did not achieve their instruction: those that failed, and those that never finished (the task
   * went on to its answer without them; one tried before says why it did not finish).
   */
  notAchieved(): NotAchieved[] {
    return this.graph.flatMap((s) => {
      const st = this.steps.get(s.id);
      if (st?.status === 'done') return [];
      const why = st?.status === 'failed' ? (this.missed.get(s.id) ?? 'failed') : this.failures.get(s.id);
      return [{ stepId: s.id, title: s.title, reason: why ?? 'not carried out' }];
    });
  }

  /** A step's result; for the answer, also what it was to do and, if it did not, why. */
  private resultView(s: PlanStep, forAnswer = false): StepResultView {
    // The result as kept in the step's state: what a tool returned beyond it is kept by reference.
    const result = this.steps.get(s.id)?.result ?? '';
    if (!forAnswer) return { ...this.view(s), result };
    const missed = this.notAchieved().find((n) => n.stepId === s.id);
    return { ...this.view(s), result, instruction: s.instruction, ...(missed ? { notAchieved: missed.reason } : {}) };
  }

  private step(id: string): StepState {
    const st = this.steps.get(id);
    if (!st) throw new TypeError(`no step ${id} in the plan`);
    return st;
  }
}
