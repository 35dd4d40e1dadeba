/**
 * One task's state in one place (workflow code: it upserts search attributes and sets the run's current details).
 *
 * `TaskRun` owns everything a task knows of itself: its status, the plan's progress, the three gates it may wait
 * on (review, questions, permissions), what it has used, its event log, its rounds and the rewinds that go back to
 * them (./rewind-rounds.ts), and the host it waits for on a cluster (./host-wait.ts). It produces the `state`
 * query's answer and the run's result. The workflow and its helpers (`Planning`, `StepRunner`) take this object and
 * nothing else.
 */
import { ApplicationFailure, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { homeRef } from '../../common/home';
import { Failure } from '../../common/failures';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import type { CallUsage } from '../../common/model-protocol';
import type { PlanStep } from '../../common/plan';
import { KleaStatus, KleaWaitingSince } from '../../common/search-attributes';
import type { KleaEvent } from '../../common/events';
import type {
  NotAchieved,
  ParsedTaskInput,
  PendingInterrupt,
  TaskCarry,
  TaskResult,
  TaskRunLink,
  TaskState,
} from '../../common/task';
import { EventLog } from '../shared/event-log';
import { kleaObserve } from '../shared/observe';
import { HostWait, type ActivityWithOptions } from './host-wait';
import { PermissionGate } from './permissions';
import { PlanProgress } from './plan-progress';
import { QuestionGate } from './questions';
import { ReviewGate } from './review-gate';
import { RewindRounds } from './rewind-rounds';
import { SearchAttributeMirror } from './search-mirror';
import { statusAfterDecision, statusDetails, taskState } from './status';
import { UsageMeter } from './usage';

export type TaskEnding = 'done' | 'failed' | 'cancelled' | 'rewound';

/**
 * Events handed to the next run when the task continues as new: a client that follows the task is rarely further
 * behind than this, and one that is reads the rest from the earlier runs (`state.runs`).
 */
export const CARRIED_EVENTS = 200;

export class TaskRun {
  readonly log: EventLog;
  readonly progress: PlanProgress;
  readonly reviews: ReviewGate;
  readonly questions: QuestionGate;
  readonly permissions: PermissionGate;
  /** What an earlier run of this task handed over (continue-as-new); null in the task's first run. */
  readonly carried: TaskCarry | null;
  /** The task's earlier runs, oldest first. */
  readonly earlierRuns: readonly TaskRunLink[];
  readonly meter: UsageMeter;
  /** How many grants the input carried that were not taken (only a session hands grants to its tasks). */
  readonly ignoredGrants: number;
  private readonly mirror = new SearchAttributeMirror();
  /** The rounds of steps run so far, and the rewinds that go back to them. */
  readonly rewinds: RewindRounds;
  /** The project's home on a cluster, and the host the task waits for. */
  readonly host = new HostWait(this);
  private _status: TaskStatus = 'routing';
  private answer: string | null = null;
  private error: string | null = null;
  /** Set once by the `cancel` signal: why the user cancelled. */
  private _cancelReason: string | null = null;

  constructor(readonly input: ParsedTaskInput) {
    const info = workflowInfo();
    // Security: a carry (grants and decisions included) is taken only from the task's own earlier run; a task
    // started with one is refused rather than let skip its review or permission gates.
    if (input.carry && !info.continuedFromExecutionRunId)
      throw ApplicationFailure.nonRetryable(
        "invalid task input: carry: only a task's own earlier run hands over its state",
        Failure.InvalidInput
      );
    const carry = input.carry ?? null;
    this.carried = carry;
    this.earlierRuns = carry?.runs ?? [];
    this.log = new EventLog((carry?.recentEvents ?? []) as KleaEvent[], carry?.lastSeq ?? 0);
    this.progress = new PlanProgress(carry?.progress);
    this.reviews = new ReviewGate(carry?.lastReview);
    this.questions = new QuestionGate(carry?.questions);
    // Security: grants in the input count only when the task's session handed them over (it records what the user
    // allowed); a task started some other way, grants and all, asks for every path like a new one. A later run
    // holds what its first run took, and the grants made since.
    const parent = info.parent?.workflowId ?? '';
    const fromSession = parent.startsWith('session-');
    this.ignoredGrants = carry || fromSession ? 0 : input.grants.length;
    this.permissions = carry
      ? new PermissionGate(input.taskId, carry.permissions.grants, input.grantTtlMs, carry.permissions)
      : new PermissionGate(input.taskId, fromSession ? input.grants : [], input.grantTtlMs);
    // The totals as search attributes, so `KleaTokens > 100000` finds expensive runs in the Temporal UI.
    this.meter = new UsageMeter(() => this.mirror.usage(this.meter.tokens, this.meter.models.modelCalls), carry?.usage);
    this.mirror.mode(input.mode);
    this.rewinds = new RewindRounds(this, carry?.rounds);
  }

  /** Ends a task a rewind went back to without a re-run: whatever it waited for is withdrawn. */
  endRewound(): TaskResult {
    this.rewinds.announce();
    this.reviews.withdraw();
    this.questions.withdraw();
    this.permissions.withdraw();
    return this.finish('rewound', `rewound to before step ${this.rewinds.toStep}`);
  }

  /** This run's place in the task's chain of runs (1 for the first). */
  get runNumber(): number {
    return this.earlierRuns.length + 1;
  }

  /**
   * Whether the history has grown enough to go on in a fresh run: Temporal suggests it, or the run has passed the
   * task's threshold. Asked between rounds only (see `carry`).
   */
  dueToContinue(): boolean {
    const info = workflowInfo();
    return (
      this._cancelReason === null &&
      (info.continueAsNewSuggested || info.historyLength >= this.input.continueAsNewAfterEvents)
    );
  }

  /**
   * What the next run takes over. Taken between rounds of steps, when nothing is open: no review, no permission
   * request, no batch in flight (each gate refuses to be carried otherwise); questions may be waiting for answers.
   */
  carry(budget: number | null): TaskCarry {
    const { log } = this;
    return {
      runs: [...this.earlierRuns, { runId: workflowInfo().runId, firstSeq: log.firstSeq, lastSeq: log.lastSeq }],
      progress: this.progress.carry(),
      questions: this.questions.carry(),
      lastReview: this.reviews.carry(),
      permissions: this.permissions.carry(),
      usage: this.meter.carry(),
      budget,
      lastSeq: log.lastSeq,
      recentEvents: log.tail(CARRIED_EVENTS),
      rounds: this.rewinds.rounds,
    };
  }

  get status(): TaskStatus {
    return this._status;
  }

  get cancelReason(): string | null {
    return this._cancelReason;
  }

  /** Drops the session grants that have lapsed by now (the workflow's clock): they cover nothing from here on. */
  dropLapsedGrants(): void {
    this.permissions.dropLapsed(new Date());
  }

  /** Everything the task waits for now. */
  pending(): PendingInterrupt[] {
    const { reviews, questions, permissions } = this;
    return [reviews.pending, questions.pending, permissions.pending].filter((p): p is PendingInterrupt => p !== null);
  }

  /** An activity sent to the project's home (./host-wait.ts), as `task.home(toolCalls.callTool)`. */
  home<A extends unknown[], R>(activity: ActivityWithOptions<A, R>, stepId?: string): ActivityWithOptions<A, R> {
    return this.host.home(activity, stepId);
  }

  /** The `state` query's answer. */
  snapshot(): TaskState {
    const state = this.state();
    const { home } = this.input;
    return home ? { ...state, home: homeRef(home), waitingForHost: this.host.hostId } : state;
  }

  private state(): TaskState {
    return taskState(this.input, this.progress, {
      status: this._status,
      answer: this.answer,
      error: this.error,
      pending: this.pending(),
      newGrants: this.permissions.newGrants,
      usage: this.meter.totals(),
      lastSeq: this.log.lastSeq,
      runs: { current: this.runNumber, earlier: [...this.earlierRuns] },
      rounds: this.rewinds.rounds,
    });
  }

  /** A new status (or the same with a new detail): mirrored into search attributes and the run's details. */
  setStatus(next: TaskStatus, detail?: string): void {
    if (next !== this._status) {
      // When it started waiting for the user, for the inbox.
      const waiting = next.startsWith('awaiting_');
      this.mirror.status([
        { key: KleaStatus, value: next },
        ...(waiting ? [{ key: KleaWaitingSince, value: new Date() }] : []),
      ]);
    } else {
      this.mirror.unchanged();
    }
    this._status = next;
    const { progress } = this;
    const plan = progress.plan ? { version: progress.version, steps: progress.stepCount } : null;
    const run = { number: this.runNumber, previous: this.earlierRuns.at(-1)?.runId ?? null };
    setCurrentDetails(statusDetails({ status: next, detail, goal: progress.goal, pending: this.pending(), plan, run }));
    if (isFinalStatus(next)) this.log.emit({ type: 'status', status: next, detail });
  }

  /** After a decision arrived: the next thing still waited for, or back to running. */
  settleStatus(): void {
    const next = statusAfterDecision(this._status, this.pending());
    if (next) this.setStatus(next);
  }

  /** A signal's payload that could not be used: reported, since a signal has no answer to carry the error. */
  ignoredSignal(name: string, problem: string): void {
    this.log.emit({ type: 'error', code: Failure.InvalidSignal, message: `${name} signal: ${problem}` });
  }

  /** Records the user's cancellation; false when there is nothing left to cancel. */
  cancel(reason: string): boolean {
    if (this._cancelReason !== null || isFinalStatus(this._status)) return false;
    this._cancelReason = reason;
    return true;
  }

  giveAnswer(text: string, usage?: CallUsage): void {
    this.answer = text;
    this.log.emit({
      type: 'answer',
      text,
      ...(usage ? { usage } : {}),
      verification: 'unverified',
      label: UNVERIFIED_LABEL,
    });
  }

  finish(ending: TaskEnding, detail?: string): TaskResult {
    this.setStatus(ending, detail);
    kleaObserve.taskFinished(ending);
    return {
      taskId: this.input.taskId,
      status: ending,
      answer: this.answer,
      verification: 'unverified',
      error: this.error,
      newGrants: this.permissions.newGrants,
      usage: this.meter.totals(),
      ...((ending === 'done' || ending === 'failed') && this.progress.plan ? this.shortfalls() : {}),
    };
  }

  private shortfalls(): { notAchieved?: NotAchieved[] } {
    const missed = this.progress.notAchieved();
    return missed.length ? { notAchieved: missed } : {};
  }

  /** Asks the user step `s`'s questions: the step waits for the answers, and the `questions` event says what is asked. */
  ask(s: Pick<PlanStep, 'id' | 'questions'>): void {
    const asked = this.questions.ask(s);
    this.progress.awaitAnswers(asked.stepId);
    this.log.emit({ type: 'questions', stepId: asked.stepId, questions: asked.questions });
  }

  /**
   * Ends a task none of whose steps achieved its instruction: failed, with an answer that says what was tried and
   * what stopped each step (written here, not by the model: there are no results to ground anything else on).
   */
  nothingAchieved(answer: string): TaskResult {
    this.giveAnswer(answer);
    return this.fail(Failure.NothingAchieved, 'no step of the plan achieved its instruction');
  }

  fail(code: string, message: string): TaskResult {
    this.error = message;
    this.log.emit({ type: 'error', code, message });
    return this.finish('failed', message);
  }

  /** Ends a task the user cancelled: whatever it waited for is withdrawn. */
  cancelled(): TaskResult {
    const reason = this._cancelReason ?? 'cancelled by the user';
    this.reviews.withdraw();
    this.questions.withdraw();
    this.permissions.withdraw();
    this.error = reason;
    return this.finish('cancelled', reason);
  }
}
