/**
 * `GET /hosts`: on a cluster, the worker hosts and the projects each holds. A host is listed when a worker of it
 * polls (or Temporal still remembers one that did), or when a session's project lives on it; its projects are those
 * of the sessions whose home it is (their `KleaHost` and `KleaProject` search attributes), most recently active
 * first. On one machine (no host ids) the list is empty.
 */
import type { z } from 'zod';
import { HostListSchema } from '../../common/api';
import { groupTaskQueue, hostTaskQueue } from '../../common/home';
import { KleaHost, KleaProject } from '../../common/search-attributes';
import { TEMPORAL_DOWN } from '../openapi';
import { defineRoute, type RouteSpec } from '../route';
import { activityOf, SessionLister } from '../session-list';
import type { TemporalCalls } from '../temporal-calls';

type HostList = z.infer<typeof HostListSchema>;
type Project = HostList['hosts'][number]['projects'][number];

/** Session runs one listing reads at most: a team's cluster has far fewer sessions with a home than this. */
const MAX_SESSIONS = 5000;

export function hostsRoute({ calls }: { calls: TemporalCalls }): RouteSpec {
  const sessions = new SessionLister(calls.runs);
  return defineRoute({
    method: 'get',
    path: '/hosts',
    operationId: 'listHosts',
    summary: 'Worker hosts on a cluster: whether each polls, and the projects it holds',
    tags: ['hosts'],
    responses: {
      200: { description: 'every host known, by id', schema: HostListSchema },
      ...TEMPORAL_DOWN,
    },
    handler: async (): Promise<HostList> => {
      const [present, homed] = await Promise.all([
        calls.workers.hostsPresent(),
        sessions.latestRuns(`${KleaHost.name} IS NOT NULL`, MAX_SESSIONS),
      ]);
      const projects = new Map<string, Map<string, Project>>();
      for (const run of homed.runs) {
        const host = run.attributes.get(KleaHost) as string | undefined;
        const dir = run.attributes.get(KleaProject) as string | undefined;
        if (!host || !dir) continue;
        const byDir = projects.get(host) ?? new Map<string, Project>();
        projects.set(host, byDir);
        const t = activityOf(run);
        const at = t === null ? null : new Date(t).toISOString();
        const p = byDir.get(dir) ?? { projectDir: dir, sessions: 0, lastActivityAt: null };
        p.sessions += 1;
        if (at && (!p.lastActivityAt || at > p.lastActivityAt)) p.lastActivityAt = at;
        byDir.set(dir, p);
      }
      const polling = new Map(present.map((h) => [h.hostId, h]));
      const listed = (homeName: string) =>
        [...(projects.get(homeName)?.values() ?? [])].sort(
          (a, b) =>
            (b.lastActivityAt ?? '').localeCompare(a.lastActivityAt ?? '') || a.projectDir.localeCompare(b.projectDir)
        );
      // A group's sessions are named `group:<id>` (common/home.ts homeName); its hosts say their group.
      const groupIds = [
        ...new Set([
          ...present.flatMap((h) => (h.groupId ? [h.groupId] : [])),
          ...[...projects.keys()].filter((k) => k.startsWith('group:')).map((k) => k.slice('group:'.length)),
        ]),
      ].sort();
      const ids = [...new Set([...polling.keys(), ...projects.keys()])].filter((k) => !k.startsWith('group:')).sort();
      return {
        ...(groupIds.length
          ? {
              groups: groupIds.map((groupId) => ({
                groupId,
                taskQueue: groupTaskQueue(groupId),
                hosts: present.filter((h) => h.groupId === groupId && h.pollers > 0).map((h) => h.hostId),
                projects: listed(`group:${groupId}`),
              })),
            }
          : {}),
        hosts: ids.map((hostId) => {
          const seen = polling.get(hostId);
          const pollers = seen?.pollers ?? 0;
          return {
            hostId,
            taskQueue: hostTaskQueue(hostId),
            status: pollers > 0 ? ('ok' as const) : ('gone' as const),
            pollers,
            ...(seen?.roots ? { roots: seen.roots } : {}),
            ...(seen?.groupId ? { group: seen.groupId } : {}),
            projects: listed(hostId),
          };
        }),
        complete: homed.complete,
      };
    },
  });
}
