/**
 * Which of the workers Temporal lists on a task queue are alive, from their heartbeats (Temporal's worker registry,
 * `ListWorkers`) as well as their polls. A worker's runtime sends a heartbeat at its own interval (Klea's workers:
 * WORKER_HEARTBEAT_MS, common/home.ts); a worker that stops cleanly says so at once (its status leaves RUNNING), and
 * one that was killed stops beating. Temporal's poller list, the older signal, keeps a killed worker's last poll
 * fresh for as long as a long poll may last (about a minute), so a killed host looked present for a minute and a half.
 *
 * Heartbeats only rule workers out: the workers are those the poller list names (a worker of another kind on the same
 * queue, one that runs activities only, is not taken for one that runs workflows). A heartbeat is stamped by the
 * worker's clock; a heartbeat is stale when it is old by the API's clock too, counted from when the API first saw it,
 * so a host whose clock runs behind is not taken for gone (`BeatClock`).
 */
import { temporal } from '@temporalio/proto';
import { tsToDate } from './run-listing';

/** Beyond three of its worker's intervals, plus this much for the time between a heartbeat and its being listed. */
const SLACK_MS = 5_000;
/** How long after a worker says it stops its own last poll may still be listed. */
const STOP_POLL_MS = 250;
/** How far a worker's clock may be behind the API's before its heartbeats count as old on first sight. */
const CLOCK_SKEW_MS = 60_000;
/** How long the API remembers a heartbeat it saw (Temporal lists one for five minutes after the last). */
const REMEMBERED_MS = 10 * 60_000;

export interface Beat {
  /** The worker instance (a worker restarted in the same process under the same identity is another). */
  key: string;
  identity: string;
  taskQueue: string;
  running: boolean;
  /** When the worker sent it (its own clock), ms; null if it did not say. */
  sentAt: number | null;
  /** The time since its previous heartbeat, ms: the worker's interval; null for its first. */
  everyMs: number | null;
}

type WorkerInfo = temporal.api.worker.v1.IWorkerInfo;

const durationMs = (d: { seconds?: unknown; nanos?: number | null } | null | undefined): number | null =>
  d ? Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6) : null;

export function beatOf(info: WorkerInfo): Beat | null {
  const hb = info.workerHeartbeat;
  if (!hb) return null;
  const every = durationMs(hb.elapsedSinceLastHeartbeat);
  return {
    key: hb.workerInstanceKey || hb.workerIdentity || '',
    identity: hb.workerIdentity ?? '',
    taskQueue: hb.taskQueue ?? '',
    running: hb.status === temporal.api.enums.v1.WorkerStatus.WORKER_STATUS_RUNNING,
    sentAt: tsToDate(hb.heartbeatTime)?.getTime() ?? null,
    everyMs: every && every > 0 ? every : null,
  };
}

/** When the API first saw each worker's latest heartbeat, by its own clock. */
export class BeatClock {
  private readonly seen = new Map<string, { sentAt: number | null; firstSeen: number; lastSeen: number }>();

  firstSeen(beat: Beat, now: number): number {
    const was = this.seen.get(beat.key);
    const firstSeen = was && was.sentAt === beat.sentAt ? was.firstSeen : now;
    this.seen.set(beat.key, { sentAt: beat.sentAt, firstSeen, lastSeen: now });
    if (this.seen.size > 1000)
      for (const [k, v] of this.seen) if (now - v.lastSeen > REMEMBERED_MS) this.seen.delete(k);
    return firstSeen;
  }
}

/**
 * Whether a running worker's heartbeat says it is alive: true while it is within three of its intervals of now, by
 * the worker's clock or by the API's since it first saw it (and not older than any clock could be behind); null for
 * its first heartbeat, whose interval is not known yet (the SDK sends one soon after a worker starts).
 */
export function beatFresh(beat: Beat, now: number, firstSeen: number): boolean | null {
  if (beat.sentAt === null || beat.everyMs === null) return null;
  const window = 3 * beat.everyMs + SLACK_MS;
  const age = now - beat.sentAt;
  if (age <= window) return true;
  return age <= window + CLOCK_SKEW_MS && now - firstSeen <= window;
}

/**
 * Whether a worker the poller list names is alive: by the heartbeats of its instances that run (any fresh; one that
 * has sent only its first counts by its polls); with none running, a poll more than a moment after the last instance
 * stopped (a worker restarted under the same identity); with no heartbeat at all, by a poll within `pollFreshMs`.
 */
export function workerAlive(
  beats: ReadonlyArray<{ beat: Beat; firstSeen: number }>,
  lastPoll: number,
  now: number,
  pollFreshMs: number
): boolean {
  const polled = now - lastPoll < pollFreshMs;
  const running = beats.filter((b) => b.beat.running);
  if (running.length) return running.some((b) => beatFresh(b.beat, now, b.firstSeen) ?? polled);
  // A worker that stops may still poll in the moment it says so (13 ms after, seen on a loaded machine); a worker
  // restarted under the same identity in the same runtime polls a second or so after, and sends no heartbeat of its
  // own (the runtime's heartbeats end with the first worker on the queue that stops).
  if (beats.length)
    return polled && beats.every((b) => b.beat.sentAt !== null && lastPoll > b.beat.sentAt + STOP_POLL_MS);
  return polled;
}

/** The query `ListWorkers` takes for one task queue (Klea's queue names hold no quote). */
export function taskQueueQuery(taskQueue: string): string {
  if (/["\\]/.test(taskQueue)) throw new Error(`a task queue name with a quote: ${taskQueue}`);
  return `TaskQueue = "${taskQueue}"`;
}
