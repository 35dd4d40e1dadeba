/**
 * A task's rounds of steps and the rewinds that go back to them (workflow code: it waits on a condition).
 *
 * Each round records where it began (`point`, `start`). A rewind restores the files, then resets the workflow to
 * the start of the round it goes back to. The new run learns of the reset where it happened (`noticeReset`, from
 * shared/reset-notice.ts) and holds the round (`before`) until the rewind's `rewound` signal says what was
 * restored; then it runs the round again or the task ends `rewound`.
 */
import { condition, workflowInfo } from '@temporalio/workflow';
import { Failure } from '../../common/failures';
import { isFinalStatus } from '../../common/events';
import type { RewoundSignal, TaskRound } from '../../common/rewind';
import type { TaskRun } from './task-run';

/** How long a reset run waits for the rewind's report before it runs the round anyway (a reset made by hand). */
export const REWIND_NOTICE_WAIT = '5 minutes';

export class RewindRounds {
  /** The rounds of steps run so far, oldest first, with where each began (a rewind resets to one of them). */
  readonly rounds: TaskRound[];
  /** Set by the `rewound` signal a rewind sends to the run its reset made. */
  private report: RewoundSignal | null = null;
  /** Temporal reset this run, and no round has started since. */
  private resetNoticed = false;
  /** Temporal reset this run: its end is not reported to a parent session, so the task reports it itself. */
  wasReset = false;
  /** A rewind's report arrived since the last reset notice (a run reset again waits for the new one). */
  private reported = false;
  private announced = false;

  constructor(
    private readonly task: TaskRun,
    carried: readonly TaskRound[] = []
  ) {
    this.rounds = [...carried];
  }

  /**
   * Where the next round begins, taken before `before` (which may wait): a rewind to that round resets the
   * workflow there, in the activation that began it, before any signal that came while it waited.
   */
  point(): Omit<TaskRound, 'steps'> {
    const info = workflowInfo();
    return { runId: info.runId, historyLength: info.historyLength };
  }

  /** A round of steps begins at `point`, which is where a rewind to any of them resets the workflow to. */
  start(steps: readonly string[], point: Omit<TaskRound, 'steps'>): void {
    this.rounds.push({ steps: [...steps], ...point });
  }

  /** Temporal reset this run (shared/reset-notice.ts): the next round waits for the rewind to say what it did. */
  noticeReset(): void {
    this.wasReset = true;
    this.resetNoticed = true;
    this.reported = false;
  }

  /**
   * Before a round of a run that was reset: a rewind restores the files first and then sends `rewound`, which says
   * whether to run the round again; nothing of it may run before that. A reset made outside Klea (the Temporal UI)
   * sends none: after `REWIND_NOTICE_WAIT` the round runs, and an error event says its files were not restored.
   */
  async before(): Promise<void> {
    if (this.resetNoticed) {
      this.resetNoticed = false;
      if (!this.reported) {
        this.task.setStatus('running', 'reset: waiting for the rewind to restore the files');
        if (!(await condition(() => this.reported, REWIND_NOTICE_WAIT)))
          this.task.log.emit({
            type: 'error',
            code: Failure.ResetOutsideRewind,
            message:
              'this run was reset without a rewind: the project was not restored, and the task runs again from here',
          });
      }
    }
    this.announce();
  }

  /**
   * The rewind's report, after it restored the files and reset this run. True when the task ends here (no re-run):
   * the caller stops its work. It is announced where the round it went back to begins (or the task ends), so the
   * events of the reset point itself come before it, whichever arrived first.
   */
  rewound(signal: RewoundSignal): boolean {
    // A rewind's retry sends its report again: the first one counts.
    if (this.report?.rewindId === signal.rewindId || isFinalStatus(this.task.status)) return false;
    this.report = signal;
    this.announced = false;
    this.reported = true;
    return !signal.rerun;
  }

  /** The `rewound` event, once: after the last seq of the run that was reset, saying what was restored. */
  announce(): void {
    if (!this.report || this.announced) return;
    this.announced = true;
    this.task.log.skipTo(this.report.lastSeq);
    const { lastSeq: _seq, ...event } = this.report;
    this.task.log.emit({ type: 'rewound', ...event });
  }

  /** The step the rewind went back to. */
  get toStep(): string {
    return this.report?.toStep ?? '?';
  }

  /** This run re-runs the task from a step a rewind went back to. */
  get rerunning(): boolean {
    return this.report?.rerun === true;
  }

  /** A rewind went back without a re-run: the task ends `rewound`. */
  get ends(): boolean {
    return this.report !== null && !this.report.rerun;
  }
}
