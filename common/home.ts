/**
 * A project's home on a cluster (docs/architecture.md §3): the worker host that holds the project. Every activity
 * that reads or changes the project (tool calls, the picks and plans that read its files, checkpoints, rewinds)
 * runs on that host's task queue `klea-host-<id>`; model-only calls and orchestration stay on the shared queue. A
 * session's home is chosen when it starts and kept in its state; its tasks take it over. No home (one machine, the
 * dev server): everything runs on the shared queue, as before. Pure: bundled into workflows.
 */
import { z } from 'zod';

/** A host id: what `KLEA_HOST_ID` (`worker.host_id`) names a worker host. */
export const HostIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'a host id is 1 to 63 lower-case letters, digits and dashes');
export type HostId = z.infer<typeof HostIdSchema>;

/**
 * How often a worker tells Temporal it is alive (the SDK's default is a minute): the API sees a killed host gone
 * within three of these (api/worker-beats.ts).
 */
export const WORKER_HEARTBEAT_MS = 5_000;

/** How long an activity for the home waits to be taken before the task says it waits for the host. */
export const DEFAULT_HOST_WAIT_MS = 30_000;

/** How long a host's lease on a group project lasts unless renewed (worker.group_lease_ms; activities/project/lease.ts). */
export const DEFAULT_GROUP_LEASE_MS = 15_000;

/** A group id: what `KLEA_GROUP_ID` (`worker.group_id`) names the hosts that share a volume of projects by. */
export const GroupIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'a group id is 1 to 63 lower-case letters, digits and dashes');

/**
 * A home is one host, or a group of hosts that reach the same projects on a shared volume: a group project's
 * activities go to `klea-group-<id>`, and those that change it to the host that holds its lease (activities/project/lease.ts).
 */
export const HomeSchema = z
  .strictObject({
    hostId: HostIdSchema.optional(),
    groupId: GroupIdSchema.optional(),
    /** How long an activity waits for the host to take it before `waiting_for_host` (worker.host_wait_ms). */
    waitMs: z.number().int().min(100).max(3_600_000).default(DEFAULT_HOST_WAIT_MS),
  })
  .refine((h) => (h.hostId === undefined) !== (h.groupId === undefined), {
    message: 'a home names a host (hostId) or a group (groupId), one of them',
  });
export type Home = z.output<typeof HomeSchema>;

/** The task queue a host's worker polls for its projects' activities (contract: `klea-host-<id>`). */
export function hostTaskQueue(hostId: string): string {
  return `klea-host-${hostId}`;
}

/** The task queue every host of a group polls for the group's projects' activities: `klea-group-<id>`. */
export function groupTaskQueue(groupId: string): string {
  return `klea-group-${groupId}`;
}

/** What a task's or session's state says of its home (and a rewind is given back): the host, or the group. */
export function homeRef(home: { hostId?: string; groupId?: string }): { hostId: string } | { groupId: string } {
  return home.groupId !== undefined ? { groupId: home.groupId } : { hostId: home.hostId! };
}

/**
 * How a home is named where one name stands for it (the session list's `host`, the `KleaHost` search attribute,
 * `waiting_for_host`): its host id, or `group:<id>` (a colon is in no host id, so the two never meet).
 */
export function homeName(home: { hostId?: string; groupId?: string }): string {
  return home.groupId !== undefined ? `group:${home.groupId}` : home.hostId!;
}

/**
 * What a worker host says of itself in its Temporal identity: ` host=<id> group=<id> roots=<its project roots>` (the
 * group only for a host in one; the roots as URI-encoded JSON, so the identity holds no space of theirs), so the API
 * knows which hosts poll, in which groups, and which projects each holds without asking it.
 */
export function hostIdentityTag(hostId: string, roots: readonly string[] | null, groupId?: string | null): string {
  return ` host=${hostId}${groupId ? ` group=${groupId}` : ''}${roots ? ` roots=${encodeURIComponent(JSON.stringify(roots))}` : ''}`;
}

/** The group a worker identity says its host is in (` group=<id>`), or null. */
export function groupOfIdentity(identity: string | null | undefined): string | null {
  return idOfIdentity(identity, 'group');
}

/** The id a worker identity gives after ` <key>=` (a host or group id), or null. */
function idOfIdentity(identity: string | null | undefined, key: 'host' | 'group'): string | null {
  const m = new RegExp(` ${key}=([a-z0-9][a-z0-9-]{0,62})(?: |$)`).exec(identity ?? '');
  return m ? m[1]! : null;
}

/** The project roots a worker identity says its host holds, or null (it does not say). */
export function hostRootsOfIdentity(identity: string | null | undefined): string[] | null {
  const m = / roots=(\S+)/.exec(identity ?? '');
  if (!m) return null;
  try {
    const roots: unknown = JSON.parse(decodeURIComponent(m[1]!));
    return Array.isArray(roots) && roots.every((r) => typeof r === 'string') ? (roots as string[]) : null;
  } catch {
    return null;
  }
}

/** Whether `dir` is one of `roots` or under one (POSIX paths, as the worker resolved them). */
export function underRoots(dir: string, roots: readonly string[]): boolean {
  return roots.some((r) => dir === r || dir.startsWith(r.endsWith('/') ? r : `${r}/`));
}

/** The host a worker identity names (` host=<id>`), or null (a worker without a host id). */
export function hostOfIdentity(identity: string | null | undefined): string | null {
  return idOfIdentity(identity, 'host');
}
