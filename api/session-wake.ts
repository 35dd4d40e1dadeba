/**
 * Sending to a session that may be asleep. A session's run completes when it has been idle for
 * `session.idle_close_ms`, returning everything it carries; what a client sends it next (a message, a /command, a
 * settings change, a revoked grant) wakes it: the update or signal goes out with a start of the same workflow id
 * from that result (update-with-start, signal-with-start), so the new run takes it as its first message, and two
 * clients waking it at once get one run that takes both.
 *
 * Sending to a running session costs nothing more: the wake is tried only when Temporal says the run has ended, and
 * only for a run that completed (went to sleep); a session that failed or was terminated stays ended (409).
 *
 * The carry read here can be stale only if the session woke and slept again between this read and the start,
 * which takes at least idle_close_ms: far longer than the deadline of these calls.
 */
import type { SignalDefinition, UpdateDefinition } from '@temporalio/client';
import { SessionSleepSchema } from '../common/session';
import { ApiError } from './errors';
import type { SessionStarter } from './session-start';
import { sessionTarget } from './targets';
import type { TemporalCalls, WakeStart } from './temporal-calls';

export interface SessionWaker {
  update<Ret, Arg>(sessionId: string, def: UpdateDefinition<Ret, [Arg]>, arg: Arg, noun: string): Promise<Ret>;
  signal<Arg>(sessionId: string, def: SignalDefinition<[Arg]>, arg: Arg): Promise<void>;
}

/** The 409 the API answers for a session whose run completed: it went to sleep. */
const asleep = (err: unknown) =>
  err instanceof ApiError &&
  err.status === 409 &&
  (err.details as { status?: string } | undefined)?.status === 'completed';

export function sessionWaker(deps: { calls: TemporalCalls; sessions: SessionStarter }): SessionWaker {
  const { calls, sessions } = deps;

  /** How to start the run that wakes the session: from what its latest run returned when it went to sleep. */
  async function wakeStart(sessionId: string): Promise<WakeStart> {
    const target = sessionTarget(sessionId);
    const desc = await calls.describe(target);
    const slept = SessionSleepSchema.safeParse(await calls.result(target, desc.runId));
    if (!slept.success) throw new ApiError(409, 'conflict', `${target.what} has ended and cannot be woken`);
    return { workflowType: 'sessionWorkflow', options: sessions.wakeOptions(slept.data, desc.runId) };
  }

  return {
    async update(sessionId, def, arg, noun) {
      const target = sessionTarget(sessionId);
      try {
        return await calls.update(target, def, arg, { noun });
      } catch (err) {
        if (!asleep(err)) throw err;
      }
      return calls.updateWithStart(target, def, arg, { noun }, await wakeStart(sessionId));
    },

    async signal(sessionId, def, arg) {
      const target = sessionTarget(sessionId);
      try {
        return await calls.signal(target, def, arg);
      } catch (err) {
        if (!asleep(err)) throw err;
      }
      await calls.signalWithStart(target, def, arg, await wakeStart(sessionId));
    },
  };
}
