/**
 * Where a new session's project lives on a cluster (common/home.ts): the host the request names, else one of the
 * hosts whose workers poll their own task queue now, chosen by rendezvous hashing of the project directory, so
 * sessions on the same project land on the same host while the set of hosts stays the same. No worker has a host id
 * (one machine, the dev server): no home, and everything runs on the shared task queue. Hosts seen but none polling
 * now: 503 `no_worker`.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../common/config';
import type { Home } from '../common/home';
import { badRequest, unavailable } from './errors';
import type { TemporalCalls } from './temporal-calls';

/** The host of the highest score for this project (ties impossible in practice; broken by id). */
export function rendezvousHost(hosts: readonly string[], projectDir: string): string | undefined {
  const score = (h: string) => createHash('sha256').update(`${h}\0${projectDir}`).digest('hex');
  return [...hosts].sort((a, b) => (score(b) < score(a) ? -1 : score(b) > score(a) ? 1 : a < b ? -1 : 1))[0];
}

export async function chooseHome(
  calls: TemporalCalls,
  config: Config,
  requested: string | undefined,
  projectDir: string
): Promise<Home | undefined> {
  const waitMs = config.worker.host_wait_ms;
  if (requested !== undefined) {
    // A name no worker ever polled is a mistake: the task would wait for it forever.
    if (!(await calls.hostKnown(requested)))
      throw badRequest(`body.host: no worker of host "${requested}" has polled task queue klea-host-${requested}`, [
        { path: 'body.host', message: 'unknown host' },
      ]);
    return { hostId: requested, waitMs };
  }
  const present = await calls.hostsPresent();
  const live = present.filter((h) => h.pollers > 0).map((h) => h.hostId);
  // A cluster whose hosts are all gone: a session without a home would run its tools on whichever worker came.
  if (present.length && !live.length)
    throw unavailable(
      'no_worker',
      `no worker host polls its task queue (seen: ${present.map((h) => h.hostId).join(', ')}), so the session was ` +
        'not started; start a host, or name one with host'
    );
  const hostId = rendezvousHost(live, projectDir);
  return hostId ? { hostId, waitMs } : undefined;
}
