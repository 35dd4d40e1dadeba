/**
 * Which workers poll Klea's task queues, for the API's Temporal calls (`TemporalCalls.workers`): the shared queue's
 * pollers and the hosts they name, each host's own queue (`klea-host-<id>`), and `requireWorker`, the check before a
 * message that only a worker can take is sent.
 */
import { groupOfIdentity, hostOfIdentity, hostRootsOfIdentity, hostTaskQueue } from '../common/home';
import { temporal } from '@temporalio/proto';
import { unavailable } from './errors';
import { tsToDate } from './run-listing';
import { createLogger } from '../runtime/log';
import { BeatClock, beatOf, taskQueueQuery, workerAlive, type Beat } from './worker-beats';
import type { TemporalCalls } from './temporal-calls';
import { endedConflict, type Target } from './temporal-errors';

const log = createLogger('api');

/**
 * Without heartbeats: a poller seen within this window counts as a live worker (an idle worker renews its long poll
 * every minute).
 */
const POLLER_FRESH_MS = 90_000;
/**
 * How long a worker seen polling is taken to be there without asking again. A killed worker is seen gone only after
 * some seconds anyway (three of its heartbeats), so this adds little to what `requireWorker` can miss, and it saves
 * a round trip on every message sent within it.
 */
const PRESENCE_KEPT_MS = 2_000;

export class WorkerPresence {
  /** When a worker was last seen polling (ms), by `requireWorker`. */
  private workerSeenAt = -Infinity;
  private readonly beatClock = new BeatClock();
  /** Whether listing heartbeats failed once (said once in the log). */
  private beatsFailed = false;

  constructor(private readonly calls: TemporalCalls) {}

  /**
   * The workers of a task queue: every identity Temporal still lists as polling it (a worker that stopped stays
   * listed for some minutes) and those alive now, by their heartbeats where they send them, else by their polls
   * (./worker-beats.ts).
   */
  private async queueWorkers(
    name: string,
    type: temporal.api.enums.v1.TaskQueueType,
    timeoutMs: number
  ): Promise<{ listed: string[]; alive: string[] }> {
    const { client, namespace } = this.calls;
    const res = await this.calls.within(timeoutMs, () =>
      client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: type,
      })
    );
    // Only once Temporal answered: a listing started beside a call that failed would go on retrying until its
    // deadline, past the connection's close.
    const beats = await this.beats(name, timeoutMs);
    const now = Date.now();
    const polled = new Map<string, number>();
    for (const p of res.pollers ?? []) {
      const id = p.identity ?? '';
      polled.set(id, Math.max(polled.get(id) ?? 0, tsToDate(p.lastAccessTime)?.getTime() ?? 0));
    }
    const seen = beats.map((beat) => ({ beat, firstSeen: this.beatClock.firstSeen(beat, now) }));
    const listed = [...polled.keys()];
    const alive = listed.filter((id) =>
      workerAlive(
        seen.filter((b) => b.beat.identity === id),
        polled.get(id)!,
        now,
        POLLER_FRESH_MS
      )
    );
    return { listed, alive };
  }

  /**
   * The heartbeats of a task queue's workers (every page); none where the server keeps none or cannot list them.
   * Read from `workers_info`, the only form that carries the heartbeat's time (the API marks it to be replaced).
   */
  private async beats(taskQueue: string, timeoutMs: number): Promise<Beat[]> {
    const { client, namespace } = this.calls;
    const beats: Beat[] = [];
    try {
      let nextPageToken: Uint8Array | undefined;
      for (let page = 0; page < 10; page++) {
        const res = await this.calls.within(timeoutMs, () =>
          client.workflowService.listWorkers({
            namespace,
            pageSize: 1000,
            query: taskQueueQuery(taskQueue),
            nextPageToken,
          })
        );
        for (const info of res.workersInfo ?? []) {
          const beat = beatOf(info);
          if (beat && beat.taskQueue === taskQueue) beats.push(beat);
        }
        if (!res.nextPageToken?.length) break;
        nextPageToken = res.nextPageToken;
      }
    } catch (err) {
      // An older server (no ListWorkers): presence by polls alone. Temporal being down fails describeTaskQueue too.
      if (!this.beatsFailed)
        log.warn('worker heartbeats cannot be listed: a worker that stops is seen gone by its polls only', {
          error: err instanceof Error ? err.message : String(err),
        });
      this.beatsFailed = true;
    }
    return beats;
  }

  /** Workers alive on the task queue, and their identities. Throws Temporal's error when it cannot be asked. */
  async workerPresence(timeoutMs = this.calls.callTimeoutMs): Promise<{
    pollers: number;
    identities: string[];
    hosts: string[];
    roots: Map<string, string[]>;
    groups: Map<string, string>;
  }> {
    const { listed, alive } = await this.queueWorkers(
      this.calls.taskQueue,
      temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      timeoutMs
    );
    // Every host Temporal still lists (for some minutes after its worker stopped), so a gone host shows as gone.
    const hosts = [...new Set(listed.map((id) => hostOfIdentity(id)))].filter((h): h is string => h !== null);
    // The project roots each host says it holds (the union over its workers; absent: it does not say).
    const roots = new Map<string, string[]>();
    // The group each host says it is in (a host in a group shares its projects with the group's other hosts).
    const groups = new Map<string, string>();
    for (const id of listed) {
      const host = hostOfIdentity(id);
      const said = hostRootsOfIdentity(id);
      if (host && said) roots.set(host, [...new Set([...(roots.get(host) ?? []), ...said])]);
      const group = groupOfIdentity(id);
      if (host && group) groups.set(host, group);
    }
    return { pollers: alive.length, identities: alive, hosts: hosts.sort(), roots, groups };
  }

  /** The workers alive on a host's task queue (`klea-host-<id>`, activities), and whether it was ever polled lately. */
  async hostPollers(
    hostId: string,
    timeoutMs = this.calls.callTimeoutMs
  ): Promise<{ pollers: number; known: boolean }> {
    const { listed, alive } = await this.queueWorkers(
      hostTaskQueue(hostId),
      temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      timeoutMs
    );
    return { pollers: alive.length, known: listed.length > 0 };
  }

  /**
   * The hosts seen on the task queue, each with whether a worker polls its own queue now; for choosing a session's
   * home, so Temporal's failure is the API's error (503 when it is unreachable).
   */
  async hostsPresent(
    timeoutMs = this.calls.callTimeoutMs
  ): Promise<
    Array<{ hostId: string; taskQueue: string; pollers: number; roots: string[] | null; groupId: string | null }>
  > {
    try {
      const { hosts, roots, groups } = await this.workerPresence(timeoutMs);
      return await Promise.all(
        hosts.map(async (hostId) => ({
          hostId,
          taskQueue: hostTaskQueue(hostId),
          pollers: (await this.hostPollers(hostId, timeoutMs)).pollers,
          roots: roots.get(hostId) ?? null,
          groupId: groups.get(hostId) ?? null,
        }))
      );
    } catch (err) {
      throw await this.calls.toApiError(err, undefined, { kind: 'describeTaskQueue' });
    }
  }

  /** `hostPollers` with Temporal's failure as the API's error. */
  async hostKnown(hostId: string): Promise<boolean> {
    try {
      return (await this.hostPollers(hostId)).known;
    } catch (err) {
      throw await this.calls.toApiError(err, undefined, { kind: 'describeTaskQueue' });
    }
  }

  /** 503 `no_worker` unless a worker polls; for an existing workflow, 404 or 409 first when that is the truth. */
  async requireWorker(noun: string, target?: Target): Promise<void> {
    if (Date.now() - this.workerSeenAt < PRESENCE_KEPT_MS) return;
    let presence: { pollers: number };
    try {
      presence = await this.workerPresence();
    } catch (err) {
      throw await this.calls.toApiError(err, target, { kind: 'describeTaskQueue' });
    }
    if (presence.pollers > 0) {
      this.workerSeenAt = Date.now();
      return;
    }
    if (target) {
      const desc = await this.calls.describe(target);
      if (desc.status.name !== 'RUNNING') throw endedConflict(target, desc);
    }
    throw unavailable(
      'no_worker',
      `no worker is polling task queue "${this.calls.taskQueue}", so the ${noun} was not sent; start a worker ` +
        '(make start, or npm run worker) and try again'
    );
  }
}
