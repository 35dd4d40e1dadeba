/**
 * Activities for a project's home (common/home.ts). Without a home every activity goes to the shared task queue
 * with the proxy's own options, so a run on one machine schedules exactly what it did before.
 *
 * With a host home, an activity that reads or changes the project goes to `klea-host-<id>` with a schedule-to-start
 * timeout of `home.waitMs`: when no worker of that host takes it in time (the host is gone or cut off), the caller
 * is told (`waiting_for_host`) and the same activity is scheduled again, until the host takes it. Nothing ran, so
 * nothing is repeated; a cancellation (the task's `cancel`) ends the wait like any other.
 *
 * With a group home, it goes to the host this run last learnt holds the project's lease, else to
 * `klea-group-<id>`, which every host of the group polls. A host that does not hold the lease runs what only reads
 * the project, and refuses what changes it (`ProjectHeldElsewhere`, naming the holder): the activity is sent to the
 * holder, at once. A holder that does not take it in time is forgotten, and the group is asked again: once the
 * holder's lease has run out (it is gone), the host that takes the activity takes the lease.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, sleep, type ActivityOptions } from '@temporalio/workflow';
import { groupTaskQueue, homeName, hostTaskQueue, type Home } from '../../common/home';
import { Failure } from '../../common/failures';

/**
 * The host a run was last told holds its group project's lease: kept by the run (a task keeps one for all its
 * activities), set only from activity results, so a replay sets it the same way.
 */
export class HomeRoute {
  holder: string | undefined;
}

/** Where an activity for the home goes now: a host's queue, or the group's. */
function homeTaskQueue(home: Home, route: HomeRoute | undefined): string {
  if (home.groupId === undefined) return hostTaskQueue(home.hostId!);
  return route?.holder ? hostTaskQueue(route.holder) : groupTaskQueue(home.groupId);
}

/** The host a group activity was last sent to (its lease holder), or the group itself. */
function awayName(home: Home, route: HomeRoute): string {
  return home.groupId !== undefined ? (route.holder ?? homeName(home)) : home.hostId!;
}

/**
 * The options that send one attempt of an activity to the home's queue, given up (`notTaken`) when no worker of the
 * host takes it within `home.waitMs`, or `withinMs` when that is shorter; none without a home.
 */
export function homeQueue(
  home: Home | undefined,
  withinMs = Infinity,
  route?: HomeRoute
): Pick<ActivityOptions, 'taskQueue' | 'scheduleToStartTimeout'> {
  return home ? { taskQueue: homeTaskQueue(home, route), scheduleToStartTimeout: Math.min(home.waitMs, withinMs) } : {};
}

/** Whether an activity failed because no worker of its queue took it within its schedule-to-start timeout. */
export function notTaken(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === 'SCHEDULE_TO_START'
  );
}

/** The host a `ProjectHeldElsewhere` refusal names, or null (another failure). */
export function heldBy(err: unknown): string | null {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== Failure.ProjectHeldElsewhere) return null;
  const said = (cause.details?.[0] as { hostId?: unknown } | undefined)?.hostId;
  return typeof said === 'string' ? said : null;
}

export interface HostWatch {
  /** No worker of the host took an activity in time: the task now waits for it. */
  away(hostId: string): void;
  /** An activity the task waited with was taken: the host is back. */
  back(hostId: string): void;
}

/** Refusals in a row that name a holder, at most, before the run waits as for a host that does not take it. */
const HOPS = 4;

/**
 * Runs `schedule` (one activity, given the options that route it) at the home, waiting for the host as long as it
 * takes; without a home, once, on the shared queue.
 */
export async function atHome<T>(
  home: Home | undefined,
  watch: HostWatch,
  schedule: (options: Pick<ActivityOptions, 'taskQueue' | 'scheduleToStartTimeout'>) => Promise<T>,
  route = new HomeRoute()
): Promise<T> {
  if (!home) return schedule({});
  let waited: string | null = null;
  let hops = 0;
  for (;;) {
    const name = awayName(home, route);
    // Where this attempt goes (another activity of the run may learn of the holder meanwhile).
    const sentTo = route.holder;
    try {
      const result = await schedule(homeQueue(home, Infinity, route));
      if (waited !== null) watch.back(waited);
      return result;
    } catch (err) {
      const holder = home.groupId !== undefined ? heldBy(err) : null;
      if (holder !== null && hops < HOPS && sentTo !== holder) {
        // Sent to the host that holds the project's lease, at once: nothing ran.
        hops++;
        route.holder = holder;
        continue;
      }
      if (!notTaken(err) && holder === null) {
        if (waited !== null) watch.back(waited);
        throw err;
      }
      // Not taken in time (or refused over and over): the holder is forgotten, and the group asked again.
      hops = 0;
      route.holder = undefined;
      if (holder === null) {
        waited = name;
        watch.away(name);
      } else {
        // Hosts that keep naming each other (the lease changing hands meanwhile): asked again after a pause.
        await sleep(Math.min(home.waitMs, 1_000));
      }
    }
  }
}
