/**
 * The grants a session holds (pure): paths the user allowed for the session, each with its id and expiry. A task
 * takes those that hold as it starts; a grant made in a task comes back to the session; a revoked or lapsed grant
 * covers nothing from then on.
 */
import type { EventBody } from '../../common/events';
import type { HeldGrant, SessionGrant, TaskGrant } from '../../common/task';

/** A grant holds until its expiry. */
export const isLive = (g: HeldGrant, now: Date): boolean => Date.parse(g.expiresAt) > now.getTime();

export class SessionGrants {
  /** The grants, oldest first. */
  held: HeldGrant[];
  /** How many grants the session has made: the next one's id is `g<counter + 1>`. */
  counter: number;
  /** Grants revoked while the current task ran: its result may still list them, if it ended before it heard. */
  private revokedMidTask: SessionGrant[] = [];
  /** False while a woken run reads its grants from the run that slept. */
  known = true;
  /** Meanwhile, the grants its input says it slept with: shown in its state (those not lapsed), never used. */
  private unread: HeldGrant[] = [];

  /** @param ttlMs how long a grant holds (`permissions.session_grant_ttl_ms`). */
  constructor(
    private readonly ttlMs: number,
    carried: { grants: readonly HeldGrant[]; grantCounter: number } | undefined
  ) {
    this.held = [...(carried?.grants ?? [])];
    this.counter = carried?.grantCounter ?? 0;
  }

  /**
   * Adds the grants the session does not hold yet, each valid for the grant ttl from `now`; a lapsed grant for the
   * same path and operation is replaced. Returns the grants added.
   */
  add(more: readonly SessionGrant[], now: Date): HeldGrant[] {
    const added: HeldGrant[] = [];
    for (const g of more) {
      const held = this.held.find((x) => x.path === g.path && x.op === g.op);
      if (held && isLive(held, now)) continue;
      if (held) this.held = this.held.filter((x) => x !== held);
      const grant: HeldGrant = {
        id: `g${++this.counter}`,
        path: g.path,
        op: g.op,
        grantedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + this.ttlMs).toISOString(),
      };
      this.held.push(grant);
      added.push(grant);
    }
    return added;
  }

  /**
   * A woken run: its grants are read from the run that slept before anything uses them; until then its state shows
   * those its input names (what the client read of that run), and no task or check uses any.
   */
  awaitRead(shown: readonly HeldGrant[]): void {
    this.known = false;
    this.unread = [...shown];
  }

  /** The grants read from the run this one woke from (the input's own are never taken). */
  restore(grants: readonly HeldGrant[], counter: number): void {
    this.unread = [];
    this.held = [...grants];
    this.counter = Math.max(this.counter, counter);
    this.known = true;
  }

  /** Drops the grants that have lapsed by `now`; returns them. */
  dropExpired(now: Date): HeldGrant[] {
    const lapsed = this.held.filter((g) => !isLive(g, now));
    if (lapsed.length) this.held = this.held.filter((g) => isLive(g, now));
    return lapsed;
  }

  /**
   * Revokes the grant `id`; returns it, or undefined when the session holds no such grant. `midTask`: a task is
   * running, and its result may still list the grant.
   */
  revoke(id: string, midTask: boolean): HeldGrant | undefined {
    const grant = this.held.find((g) => g.id === id);
    if (grant) this.held = this.held.filter((g) => g !== grant);
    if (grant && midTask) this.revokedMidTask.push({ path: grant.path, op: grant.op });
    return grant;
  }

  /**
   * The grants a task that ended made for the session (the session usually has them already: the task tells it of
   * each as it is made), except those the user revoked while it ran. Returns the grants added.
   */
  takeFromTask(made: readonly SessionGrant[], now: Date): HeldGrant[] {
    const revoked = this.revokedMidTask;
    this.revokedMidTask = [];
    return this.add(
      made.filter((g) => !revoked.some((r) => r.path === g.path && r.op === g.op)),
      now
    );
  }

  /**
   * The grants that hold at `now`, as a task takes them: with their id and expiry, so the task stops using one the
   * moment it lapses or is revoked.
   */
  live(now: Date): TaskGrant[] {
    return this.held.filter((g) => isLive(g, now)).map(({ id, path, op, expiresAt }) => ({ id, path, op, expiresAt }));
  }

  /** What the session's state shows: its grants, or while a woken run reads them, those it slept with. */
  shown(now: Date): HeldGrant[] {
    return this.known ? this.held : this.unread.filter((g) => isLive(g, now));
  }

  /** The `grants` event after a change: what changed, and every grant the session holds now. */
  event(action: 'granted' | 'revoked' | 'expired', changed: readonly HeldGrant[]): EventBody {
    const what = changed.map((g) => `${g.op} ${g.path}`).join(', ');
    const detail =
      action === 'granted'
        ? `allowed for the session until ${changed.map((g) => g.expiresAt).join(', ')}: ${what}`
        : action === 'revoked'
          ? `revoked: ${what}`
          : `lapsed (permissions.session_grant_ttl_ms): ${what}`;
    return { type: 'grants', action, detail, grants: [...this.held] };
  }
}
