/**
 * Which workers are alive, from their heartbeats (Temporal's worker registry, `ListWorkers`). A worker's runtime sends one
 * at its own interval (Klea's workers: WORKER_HEARTBEAT_MS, common/home.ts); a worker that stops
 * cleanly says so at once (its status leaves RUNNING), and one that was killed stops beating. Temporal's poller list,
 * the older signal, keeps a killed worker for as long as its last long poll could have lasted (about a minute), so a
 * killed host looked present for that long; its heartbeat goes stale within three of its own intervals.
 *
 * A server without the registry (older than 1.29, or heartbeats turned off) lists nothing: presence then falls back
 * to the poller list (./worker-presence.ts).
 */
import { temporal } from '@temporalio/proto';
import { tsToDate } from './run-listing';

/** A heartbeat older than three of its worker's intervals, plus this much for clocks that differ, is stale. */
const CLOCK_SLACK_MS = 5_000;
/** The interval assumed of a worker whose heartbeat says neither (the SDK's default). */
const FIRST_BEAT_INTERVAL_MS = 60_000;

export interface Beat {
  identity: string;
  taskQueue: string;
  running: boolean;
  /** When the worker sent it (its own clock), ms; null if it did not say. */
  sentAt: number | null;
  /**
   * The worker's interval, ms: the time since its previous heartbeat, or for its first one the time since the worker
   * started (the first is sent one interval after the start); null when neither is said.
   */
  everyMs: number | null;
}

type WorkerInfo = temporal.api.worker.v1.IWorkerInfo;

const durationMs = (d: { seconds?: unknown; nanos?: number | null } | null | undefined): number | null =>
  d ? Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6) : null;

export function beatOf(info: WorkerInfo): Beat | null {
  const hb = info.workerHeartbeat;
  if (!hb) return null;
  const sentAt = tsToDate(hb.heartbeatTime)?.getTime() ?? null;
  const startedAt = tsToDate(hb.startTime)?.getTime() ?? null;
  const since = durationMs(hb.elapsedSinceLastHeartbeat);
  const every = since && since > 0 ? since : sentAt !== null && startedAt !== null ? sentAt - startedAt : null;
  return {
    identity: hb.workerIdentity ?? '',
    taskQueue: hb.taskQueue ?? '',
    running: hb.status === temporal.api.enums.v1.WorkerStatus.WORKER_STATUS_RUNNING,
    sentAt,
    everyMs: every !== null && every > 0 ? every : null,
  };
}

/** A worker is alive while it says it runs and its last heartbeat is within three of its intervals. */
export function isAlive(beat: Beat, now: number): boolean {
  if (!beat.running || beat.sentAt === null) return false;
  return now - beat.sentAt <= 3 * (beat.everyMs ?? FIRST_BEAT_INTERVAL_MS) + CLOCK_SLACK_MS;
}

/** The query `ListWorkers` takes for one task queue (Klea's queue names hold no quote). */
export function taskQueueQuery(taskQueue: string): string {
  if (/["\\]/.test(taskQueue)) throw new Error(`a task queue name with a quote: ${taskQueue}`);
  return `TaskQueue = "${taskQueue}"`;
}
