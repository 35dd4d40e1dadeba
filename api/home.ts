/**
 * Where a new session's project lives on a cluster (common/home.ts): the host or group the request names, else among
 * the hosts whose workers poll their own task queue now and hold the project: a host in no group, chosen by
 * rendezvous hashing of the project directory, so sessions on the same project land on the same host while the set
 * of hosts stays the same; when only hosts of one group hold it, that group. No worker has a host id (one machine,
 * the dev server): no home, and everything runs on the shared task queue. Hosts seen but none polling now: 503
 * `no_worker`.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../common/config';
import { underRoots, type Home } from '../common/home';
import { badRequest, unavailable } from './errors';
import type { TemporalCalls } from './temporal-calls';

/** The host of the highest score for this project (ties impossible in practice; broken by id). */
export function rendezvousHost(hosts: readonly string[], projectDir: string): string | undefined {
  const score = (h: string) => createHash('sha256').update(`${h}\0${projectDir}`).digest('hex');
  return [...hosts].sort((a, b) => (score(b) < score(a) ? -1 : score(b) > score(a) ? 1 : a < b ? -1 : 1))[0];
}

type Seen = Awaited<ReturnType<TemporalCalls['workers']['hostsPresent']>>[number];

export async function chooseHome(
  calls: TemporalCalls,
  config: Config,
  requested: { host?: string; group?: string },
  projectDir: string
): Promise<Home | undefined> {
  const waitMs = config.worker.host_wait_ms;
  // Which hosts hold the project: those whose project roots it is under (a host that does not say may hold any).
  const holds = (h: Seen) => h.roots === null || underRoots(projectDir, h.roots);
  if (requested.host !== undefined && requested.group !== undefined)
    throw badRequest('body.group: name a host or a group, not both', [
      { path: 'body.group', message: 'given with body.host' },
    ]);
  if (requested.group !== undefined) {
    const members = (await calls.workers.hostsPresent()).filter((h) => h.groupId === requested.group);
    if (!members.length)
      throw badRequest(`body.group: no worker host of group "${requested.group}" has polled lately`, [
        { path: 'body.group', message: 'unknown group' },
      ]);
    if (!members.some(holds))
      throw badRequest(`body.group: no host of group "${requested.group}" holds ${projectDir}`, [
        { path: 'body.group', message: 'does not hold the project' },
      ]);
    return { groupId: requested.group, waitMs };
  }
  if (requested.host !== undefined) {
    const host = requested.host;
    // A name no worker ever polled is a mistake: the task would wait for it forever.
    if (!(await calls.workers.hostKnown(host)))
      throw badRequest(`body.host: no worker of host "${host}" has polled task queue klea-host-${host}`, [
        { path: 'body.host', message: 'unknown host' },
      ]);
    const said = (await calls.workers.hostsPresent()).find((h) => h.hostId === host);
    if (said && !holds(said))
      throw badRequest(
        `body.host: host "${host}" does not hold ${projectDir} (its project roots: ${said.roots!.join(', ')})`,
        [{ path: 'body.host', message: 'does not hold the project' }]
      );
    // A group's projects change only on the host that holds their lease: a session pinned to one member could not.
    if (said?.groupId)
      throw badRequest(`body.host: host "${host}" is in group "${said.groupId}": name the group instead`, [
        { path: 'body.host', message: 'a host of a group' },
      ]);
    return { hostId: host, waitMs };
  }
  const present = await calls.workers.hostsPresent();
  const holding = present.filter(holds);
  if (present.length && !holding.length)
    throw badRequest(
      `body.projectDir: no worker host holds ${projectDir} (hosts: ${present.map((h) => h.hostId).join(', ')})`,
      [{ path: 'body.projectDir', message: 'no worker host holds it' }]
    );
  const live = holding.filter((h) => h.pollers > 0);
  // A cluster whose hosts are all gone: a session without a home would run its tools on whichever worker came.
  if (present.length && !live.length)
    throw unavailable(
      'no_worker',
      `no worker host that holds the project polls its task queue (seen: ${holding.map((h) => h.hostId).join(', ')}), so the session was ` +
        'not started; start a host, or name one with host'
    );
  const alone = live.filter((h) => !h.groupId).map((h) => h.hostId);
  const hostId = rendezvousHost(alone, projectDir);
  if (hostId) return { hostId, waitMs };
  const groupId = rendezvousHost([...new Set(live.map((h) => h.groupId!))], projectDir);
  return groupId ? { groupId, waitMs } : undefined;
}
