/**
 * Activities for a project's home host (common/home.ts). Without a home every activity goes to the shared task
 * queue with the proxy's own options, so a run on one machine schedules exactly what it did before.
 *
 * With one, an activity that reads or changes the project goes to `klea-host-<id>` with a schedule-to-start
 * timeout of `home.waitMs`: when no worker of that host takes it in time (the host is gone or cut off), the caller
 * is told (`waiting_for_host`) and the same activity is scheduled again, until the host takes it. Nothing ran, so
 * nothing is repeated; a cancellation (the task's `cancel`) ends the wait like any other.
 */
import { ActivityFailure, TimeoutFailure, type ActivityOptions } from '@temporalio/workflow';
import { hostTaskQueue, type Home } from '../../common/home';

/**
 * The options that send one attempt of an activity to the home's queue, given up (`notTaken`) when no worker of the
 * host takes it within `home.waitMs`, or `withinMs` when that is shorter; none without a home.
 */
export function homeQueue(
  home: Home | undefined,
  withinMs = Infinity
): Pick<ActivityOptions, 'taskQueue' | 'scheduleToStartTimeout'> {
  return home ? { taskQueue: hostTaskQueue(home.hostId), scheduleToStartTimeout: Math.min(home.waitMs, withinMs) } : {};
}

/** Whether an activity failed because no worker of its queue took it within its schedule-to-start timeout. */
export function notTaken(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === 'SCHEDULE_TO_START'
  );
}

export interface HostWatch {
  /** No worker of the host took an activity in time: the task now waits for it. */
  away(hostId: string): void;
  /** An activity the task waited with was taken: the host is back. */
  back(hostId: string): void;
}

/**
 * Runs `schedule` (one activity, given the options that route it) at the home, waiting for the host as long as it
 * takes; without a home, once, on the shared queue.
 */
export async function atHome<T>(
  home: Home | undefined,
  watch: HostWatch,
  schedule: (options: Pick<ActivityOptions, 'taskQueue' | 'scheduleToStartTimeout'>) => Promise<T>
): Promise<T> {
  if (!home) return schedule({});
  let waited = false;
  for (;;) {
    try {
      const result = await schedule(homeQueue(home));
      if (waited) watch.back(home.hostId);
      return result;
    } catch (err) {
      if (!notTaken(err)) {
        if (waited) watch.back(home.hostId);
        throw err;
      }
      waited = true;
      watch.away(home.hostId);
    }
  }
}
