/**
 * Sending to a session that may be asleep. A session's run completes when it has been idle for
 * `session.idle_close_ms`, returning everything it carries; what a client sends it next (a message, a /command, a
 * settings change, a revoked grant) wakes it: the update or signal goes out with a start of the same workflow id
 * from that result (update-with-start, signal-with-start), so the new run takes it as its first message, and two
 * clients waking it at once get one run that takes both.
 *
 * Sending to a running session costs nothing more: the wake is tried only when Temporal says the run has ended, and
 * only for a run that completed (went to sleep); a session that failed or was terminated stays ended (409). Waking
 * costs what it must: one describe (which run ended, and how), reading what it returned, and the start.
 *
 * Two clients that find the run ended at once race to wake it: the one whose describe comes after the other's start
 * finds the latest run running, and sends to it as to any running session.
 *
 * The carry read here can be stale only if the session woke and slept again between this read and the start,
 * which takes at least idle_close_ms: far longer than the deadline of these calls.
 */
import type { SignalDefinition, UpdateDefinition, WorkflowExecutionDescription } from '@temporalio/client';
import { SessionSleepSchema } from '../common/session';
import { ApiError } from './errors';
import type { SessionStarter } from './session-start';
import { sessionTarget } from './targets';
import type { Target, TemporalCalls, WakeStart } from './temporal-calls';
import { endedConflict } from './temporal-errors';

export interface SessionWaker {
  update<Ret, Arg>(sessionId: string, def: UpdateDefinition<Ret, [Arg]>, arg: Arg, noun: string): Promise<Ret>;
  signal<Arg>(sessionId: string, def: SignalDefinition<[Arg]>, arg: Arg): Promise<void>;
}

export function sessionWaker(deps: { calls: TemporalCalls; sessions: SessionStarter }): SessionWaker {
  const { calls, sessions } = deps;

  /**
   * How to start the run that wakes the session whose latest run ended as `desc` says: from what that run returned
   * when it went to sleep. A run that failed or was terminated is not woken (409).
   */
  async function wakeStart(target: Target, desc: WorkflowExecutionDescription): Promise<WakeStart> {
    if (desc.status.name !== 'COMPLETED') throw endedConflict(target, desc);
    const slept = SessionSleepSchema.safeParse(await calls.result(target, desc.runId));
    if (!slept.success) throw new ApiError(409, 'conflict', `${target.what} has ended and cannot be woken`);
    return { workflowType: 'sessionWorkflow', options: sessions.wakeOptions(slept.data, desc.runId) };
  }

  /** Another client woke the session between this one finding it ended and asking how. */
  const wokenMeanwhile = (desc: WorkflowExecutionDescription) => desc.status.name === 'RUNNING';

  return {
    update(sessionId, def, arg, noun) {
      const target = sessionTarget(sessionId);
      // The worker was checked for the first attempt a moment ago.
      return calls.update(target, def, arg, {
        noun,
        whenEnded: async (desc) =>
          wokenMeanwhile(desc)
            ? calls.update(target, def, arg, { noun, workerChecked: true })
            : calls.updateWithStart(target, def, arg, { noun, workerChecked: true }, await wakeStart(target, desc)),
      });
    },

    signal(sessionId, def, arg) {
      const target = sessionTarget(sessionId);
      return calls.signalUnlessEnded(target, def, arg, async (desc) =>
        wokenMeanwhile(desc)
          ? calls.signal(target, def, arg)
          : calls.signalWithStart(target, def, arg, await wakeStart(target, desc))
      );
    },
  };
}
