/**
 * Which workers poll Klea's task queues, for the API's Temporal calls (`TemporalCalls.workers`): the shared queue's
 * pollers and the hosts they name, each host's own queue (`klea-host-<id>`), and `requireWorker`, the check before a
 * message that only a worker can take is sent.
 */
import { hostOfIdentity, hostRootsOfIdentity, hostTaskQueue } from '../common/home';
import { temporal } from '@temporalio/proto';
import { unavailable } from './errors';
import { tsToDate } from './run-listing';
import type { TemporalCalls } from './temporal-calls';
import { endedConflict, type Target } from './temporal-errors';

/** A poller seen within this window counts as a live worker (an idle worker renews its long poll every minute). */
const POLLER_FRESH_MS = 90_000;
/**
 * How long a worker seen polling is taken to be there without asking again. Temporal itself lists a worker that
 * stopped for about a minute (POLLER_FRESH_MS), so this adds nothing to what `requireWorker` can miss, and it saves
 * a round trip on every message sent within it.
 */
const PRESENCE_KEPT_MS = 2_000;

export class WorkerPresence {
  /** When a worker was last seen polling (ms), by `requireWorker`. */
  private workerSeenAt = -Infinity;

  constructor(private readonly calls: TemporalCalls) {}

  /** Workers that polled the task queue recently, and their identities. Throws Temporal's error when it cannot be asked. */
  async workerPresence(
    timeoutMs = this.calls.callTimeoutMs
  ): Promise<{ pollers: number; identities: string[]; hosts: string[]; roots: Map<string, string[]> }> {
    const { client, namespace, taskQueue } = this.calls;
    const res = await this.calls.within(timeoutMs, () =>
      client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      })
    );
    const now = Date.now();
    const fresh = (res.pollers ?? []).filter(
      (p) => now - (tsToDate(p.lastAccessTime)?.getTime() ?? 0) < POLLER_FRESH_MS
    );
    // Every host Temporal still lists (for some minutes after its worker stopped), so a gone host shows as gone.
    const hosts = [...new Set((res.pollers ?? []).map((p) => hostOfIdentity(p.identity)))].filter(
      (h): h is string => h !== null
    );
    // The project roots each host says it holds (the union over its workers; absent: it does not say).
    const roots = new Map<string, string[]>();
    for (const p of res.pollers ?? []) {
      const host = hostOfIdentity(p.identity);
      const said = hostRootsOfIdentity(p.identity);
      if (host && said) roots.set(host, [...new Set([...(roots.get(host) ?? []), ...said])]);
    }
    return { pollers: fresh.length, identities: fresh.map((p) => p.identity ?? ''), hosts: hosts.sort(), roots };
  }

  /** The workers polling a host's task queue (`klea-host-<id>`, activities) recently. */
  async hostPollers(
    hostId: string,
    timeoutMs = this.calls.callTimeoutMs
  ): Promise<{ pollers: number; known: boolean }> {
    const { client, namespace } = this.calls;
    const res = await this.calls.within(timeoutMs, () =>
      client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: hostTaskQueue(hostId), kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      })
    );
    const now = Date.now();
    const all = res.pollers ?? [];
    const fresh = all.filter((p) => now - (tsToDate(p.lastAccessTime)?.getTime() ?? 0) < POLLER_FRESH_MS);
    return { pollers: fresh.length, known: all.length > 0 };
  }

  /**
   * The hosts seen on the task queue, each with whether a worker polls its own queue now; for choosing a session's
   * home, so Temporal's failure is the API's error (503 when it is unreachable).
   */
  async hostsPresent(
    timeoutMs = this.calls.callTimeoutMs
  ): Promise<Array<{ hostId: string; taskQueue: string; pollers: number; roots: string[] | null }>> {
    try {
      const { hosts, roots } = await this.workerPresence(timeoutMs);
      return await Promise.all(
        hosts.map(async (hostId) => ({
          hostId,
          taskQueue: hostTaskQueue(hostId),
          pollers: (await this.hostPollers(hostId, timeoutMs)).pollers,
          roots: roots.get(hostId) ?? null,
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
