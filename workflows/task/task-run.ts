/**
 * One task's state in one place (workflow code: it upserts search attributes and sets the run's current details).
 *
 * `TaskRun` owns everything a task knows of itself: its status, the plan's progress, the three gates it may wait
 * on (review, questions, permissions), what it has used, and its event log. It produces the `state` query's answer
 * and the run's result. The workflow and its helpers (`Planning`, `StepRunner`) take this object and nothing else.
 */
import {
  type ActivityOptions,
  ApplicationFailure,
  condition,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { Failure } from '../../common/failures';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import type { CallUsage } from '../../common/model-protocol';
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
import type { RewoundSignal, TaskRound } from '../../common/rewind';
import { EventLog } from '../shared/event-log';
import { atHome } from '../shared/home';
import { kleaObserve } from '../shared/observe';
import { PermissionGate } from './permissions';
import { PlanProgress } from './plan-progress';
import { QuestionGate } from './questions';
import { ReviewGate } from './review-gate';
import { SearchAttributeMirror } from './search-mirror';
import { statusAfterDecision, statusDetails, taskState } from './status';
import { UsageMeter } from './usage';

export type TaskEnding = 'done' | 'failed' | 'cancelled' | 'rewound';

/**
 * Events handed to the next run when the task continues as new: a client that follows the task is rarely further
 * behind than this, and one that is reads the rest from the earlier runs (`state.runs`).
 */
export const CARRIED_EVENTS = 200;

/** How long a reset run waits for the rewind's report before it runs the round anyway (a reset made by hand). */
export const REWIND_NOTICE_WAIT = '5 minutes';

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
  private _status: TaskStatus = 'routing';
  private answer: string | null = null;
  private error: string | null = null;
  /** Set once by the `cancel` signal: why the user cancelled. */
  private _cancelReason: string | null = null;
  /** The rounds of steps run so far, oldest first, with where each began (a rewind resets to one of them). */
  readonly rounds: TaskRound[];
  /** Set by the `rewound` signal a rewind sends to the run its reset made. */
  private _rewound: RewoundSignal | null = null;
  /** Temporal reset this run, and no round has started since. */
  private resetNoticed = false;
  /** Temporal reset this run: its end is not reported to a parent session, so the task reports it itself. */
  wasReset = false;
  /** A rewind's report arrived since the last reset notice (a run reset again waits for the new one). */
  private rewindReported = false;
  private rewoundAnnounced = false;
  /** On a cluster: the host the task waits for (an activity for its home was not taken in time); null otherwise. */
  private waitingForHost: string | null = null;

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
    this.rounds = [...(carry?.rounds ?? [])];
  }

  /**
   * Where the next round begins, taken before `beforeRound` (which may wait): a rewind to that round resets the
   * workflow there, in the activation that began it, before any signal that came while it waited.
   */
  roundPoint(): Omit<TaskRound, 'steps'> {
    const info = workflowInfo();
    return { runId: info.runId, historyLength: info.historyLength };
  }

  /** A round of steps begins at `point`, which is where a rewind to any of them resets the workflow to. */
  startRound(steps: readonly string[], point: Omit<TaskRound, 'steps'>): void {
    this.rounds.push({ steps: [...steps], ...point });
  }

  /** Temporal reset this run (shared/reset-notice.ts): the next round waits for the rewind to say what it did. */
  noticeReset(): void {
    this.wasReset = true;
    this.resetNoticed = true;
    this.rewindReported = false;
  }

  /**
   * Before a round of a run that was reset: a rewind restores the files first and then sends `rewound`, which says
   * whether to run the round again; nothing of it may run before that. A reset made outside Klea (the Temporal UI)
   * sends none: after `REWIND_NOTICE_WAIT` the round runs, and an error event says its files were not restored.
   */
  async beforeRound(): Promise<void> {
    if (this.resetNoticed) {
      this.resetNoticed = false;
      if (!this.rewindReported) {
        this.setStatus('running', 'reset: waiting for the rewind to restore the files');
        if (!(await condition(() => this.rewindReported, REWIND_NOTICE_WAIT)))
          this.log.emit({
            type: 'error',
            code: Failure.ResetOutsideRewind,
            message:
              'this run was reset without a rewind: the project was not restored, and the task runs again from here',
          });
      }
    }
    this.announceRewound();
  }

  /**
   * The rewind's report, after it restored the files and reset this run. True when the task ends here (no re-run):
   * the caller stops its work. It is announced where the round it went back to begins (or the task ends), so the
   * events of the reset point itself come before it, whichever arrived first.
   */
  rewound(signal: RewoundSignal): boolean {
    // A rewind's retry sends its report again: the first one counts.
    if (this._rewound?.rewindId === signal.rewindId || isFinalStatus(this._status)) return false;
    this._rewound = signal;
    this.rewoundAnnounced = false;
    this.rewindReported = true;
    return !signal.rerun;
  }

  /** The `rewound` event, once: after the last seq of the run that was reset, saying what was restored. */
  private announceRewound(): void {
    if (!this._rewound || this.rewoundAnnounced) return;
    this.rewoundAnnounced = true;
    this.log.skipTo(this._rewound.lastSeq);
    const { lastSeq: _seq, ...event } = this._rewound;
    this.log.emit({ type: 'rewound', ...event });
  }

  /** Ends a task a rewind went back to without a re-run: whatever it waited for is withdrawn. */
  endRewound(): TaskResult {
    this.announceRewound();
    this.reviews.withdraw();
    this.questions.withdraw();
    this.permissions.withdraw();
    return this.finish('rewound', `rewound to before step ${this._rewound?.toStep ?? '?'}`);
  }

  /** This run re-runs the task from a step a rewind went back to. */
  get rerunning(): boolean {
    return this._rewound?.rerun === true;
  }

  get endsRewound(): boolean {
    return this._rewound !== null && !this._rewound.rerun;
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
      rounds: this.rounds,
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

  /**
   * Runs one activity that reads or changes the project at its home (shared/home.ts): on a cluster, on the task
   * queue of the host that holds it, and while no worker of that host takes it, the task says it waits for the
   * host (`waiting_for_host`, once per wait; a `status` event when it is back). Without a home: the shared queue.
   */
  atHome<T>(schedule: Parameters<typeof atHome<T>>[2], stepId?: string): Promise<T> {
    // Without a home, the activity's own promise, scheduled exactly as before.
    if (!this.input.home) return schedule({});
    return atHome(
      this.input.home,
      {
        away: (hostId) => {
          if (this.waitingForHost === hostId) return;
          this.waitingForHost = hostId;
          this.log.emit({ type: 'waiting_for_host', hostId, ...(stepId ? { stepId } : {}) });
          this.setStatus(this._status, `waiting for host ${hostId}`);
        },
        back: (hostId) => {
          if (this.waitingForHost === null) return;
          this.waitingForHost = null;
          this.log.emit({ type: 'status', status: this._status, detail: `host ${hostId} is back` });
          this.setStatus(this._status);
        },
      },
      schedule
    );
  }

  /** An activity sent to the project's home (`atHome`): `task.home(toolCalls.callTool).executeWithOptions(…)`. */
  home<A extends unknown[], R>(
    activity: { executeWithOptions(options: ActivityOptions, args: A): Promise<R> },
    stepId?: string
  ): { executeWithOptions(options: ActivityOptions, args: A): Promise<R> } {
    return {
      executeWithOptions: (options, args) =>
        this.atHome((at) => activity.executeWithOptions({ ...options, ...at }, args), stepId),
    };
  }

  /** The `state` query's answer. */
  snapshot(): TaskState {
    const state = this.state();
    const { home } = this.input;
    return home ? { ...state, home: { hostId: home.hostId }, waitingForHost: this.waitingForHost } : state;
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
      rounds: this.rounds,
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
