/**
 * The permission gate's bookkeeping (pure): the requests waiting for a decision, the decisions taken, the grants
 * the session holds, and the idempotency rules shared by the `permission` signal and update. A request is decided
 * once; repeating the decision it got is answered, not refused, so a client may retry safely. A grant for the
 * session answers every request it covers, the ones already waiting included, for as long as it holds: a grant
 * counts only before its expiry (at the `now` the workflow passes: its own clock, so replay decides the same) and
 * until the session says the user revoked it.
 */
import { grantCovers, type GuardedPath, type PathOp } from '../../common/path-guard';
import {
  PermissionDecisionSchema,
  type GrantRevoked,
  type PendingInterrupt,
  type PermissionDecision,
  type PermissionRequest,
  type SessionGrant,
  type TaskCarry,
  type TaskGrant,
} from '../../common/task';
import type { PickedCall } from '../../common/tools';

export type Decision = PermissionDecision['decision'];
/** A path the gate asks about: one outside the project, or a sensitive file inside it. */
export type GatedPath = GuardedPath & { class: 'outside' | 'sensitive' };

/** What the gate says of a call: it runs (with these grants), it is refused (a forbidden path), or ask about a path. */
export type GateAnswer =
  { kind: 'run'; grants: SessionGrant[] } | { kind: 'refuse'; path: GuardedPath } | { kind: 'ask'; path: GatedPath };

/**
 * The permission gate for one call's checked paths, in their order (pure): a path inside the project passes; Klea's
 * own state is refused outright, and no decision of the user's can open it; any other path passes only while
 * `covered` says a grant covers it (a path the call names twice is looked at once), else the user is asked about it.
 */
export function gate(guarded: readonly GuardedPath[], covered: (real: string, op: PathOp) => boolean): GateAnswer {
  const grants: SessionGrant[] = [];
  for (const p of guarded) {
    if (p.class === 'inside') continue;
    if (p.class === 'forbidden') return { kind: 'refuse', path: p };
    if (grantCovers(grants, p.real, p.op)) continue;
    if (!covered(p.real, p.op)) return { kind: 'ask', path: { ...p, class: p.class } };
    grants.push({ path: p.real, op: p.op });
  }
  return { kind: 'run', grants };
}

export interface DecidedRequest {
  decision: Decision;
  /** True when a grant for the session answered the request, not the user. */
  automatic: boolean;
  /** The grant this decision added to the session, if it added one. */
  grant: SessionGrant | null;
}

export class PermissionGate {
  private readonly requests = new Map<string, PermissionRequest>();
  /** Decisions that have arrived and not yet been applied. */
  private readonly arrived = new Map<string, Decision>();
  /** Decisions already applied, so a client retrying the same one is answered, not refused. */
  private readonly decided = new Map<string, Decision>();
  private counter = 0;
  private sessionGrants: TaskGrant[];
  /** Grants this run dropped (lapsed or revoked), and why: a request they would have covered says so. */
  private readonly ended: Array<TaskGrant & { why: string }> = [];
  /** Grants made with allow_session during this task (the session keeps them); a revoked one leaves. */
  newGrants: SessionGrant[] = [];

  /**
   * @param grants the grants the session holds (or, continuing as new, those the earlier run held).
   * @param grantTtlMs how long a grant made in this task holds (the session's `permissions.session_grant_ttl_ms`).
   * @param carried the rest of an earlier run's gate (continue-as-new happens with no request waiting).
   */
  constructor(
    private readonly taskId: string,
    grants: readonly TaskGrant[],
    private readonly grantTtlMs = 86_400_000,
    carried?: Omit<TaskCarry['permissions'], 'grants'>
  ) {
    this.sessionGrants = [...grants];
    if (!carried) return;
    this.newGrants.push(...carried.newGrants);
    this.counter = carried.counter;
    for (const [id, d] of Object.entries(carried.decided)) this.decided.set(id, d);
  }

  /** What the next run takes over: the grants, the decisions taken (a client may still repeat one), the ids used. */
  carry(): TaskCarry['permissions'] {
    if (this.requests.size) throw new TypeError('a permission request is waiting');
    return {
      grants: [...this.sessionGrants],
      newGrants: [...this.newGrants],
      counter: this.counter,
      decided: Object.fromEntries(this.decided),
    };
  }

  get pending(): Extract<PendingInterrupt, { kind: 'permission' }> | null {
    return this.requests.size ? { kind: 'permission', requests: [...this.requests.values()] } : null;
  }

  /**
   * Every grant for the session that holds at `now`, this task's allow_session decisions included, as plain
   * grants (what a command's sandbox is handed).
   */
  granted(now: Date): SessionGrant[] {
    return this.sessionGrants.filter((g) => holds(g, now)).map(({ path, op }) => ({ path, op }));
  }

  /** Whether a grant that holds at `now` covers an operation on a path. */
  covers(path: string, op: PathOp, now: Date): boolean {
    return grantCovers(
      this.sessionGrants.filter((g) => holds(g, now)),
      path,
      op
    );
  }

  /** Drops the grants that have lapsed by `now`; returns them (the task says so once). */
  dropLapsed(now: Date): TaskGrant[] {
    const lapsed = this.sessionGrants.filter((g) => !holds(g, now));
    if (lapsed.length) this.sessionGrants = this.sessionGrants.filter((g) => holds(g, now));
    this.ended.push(...lapsed.map((g) => ({ ...g, why: `the grant for the session lapsed at ${g.expiresAt}` })));
    return lapsed;
  }

  /**
   * The user revoked a grant for the session: the task drops it (matched by its id, or by path and operation for a
   * grant this task made, whose id only the session knows), and no longer hands it to the session at its end.
   * Returns the grants dropped.
   */
  revoke(r: GrantRevoked): TaskGrant[] {
    const matches = (g: TaskGrant) => g.id === r.grantId || (g.path === r.path && g.op === r.op);
    const dropped = this.sessionGrants.filter(matches);
    this.sessionGrants = this.sessionGrants.filter((g) => !matches(g));
    this.newGrants = this.newGrants.filter((g) => !(g.path === r.path && g.op === r.op));
    this.ended.push(...dropped.map((g) => ({ ...g, why: `the grant for the session (${r.grantId}) was revoked` })));
    return dropped;
  }

  /** Why a decision cannot be taken, or null (a repeat of the decision a request got is fine). */
  problem(d: PermissionDecision): string | null {
    const earlier = this.decided.get(d.requestId);
    if (earlier !== undefined)
      return earlier === d.decision ? null : `permission request ${d.requestId} was already decided (${earlier})`;
    if (!this.requests.has(d.requestId)) return `no permission request ${d.requestId} is pending`;
    if (this.arrived.has(d.requestId)) return `permission request ${d.requestId} has already been decided`;
    return null;
  }

  /** Takes a decision if it can be taken; malformed, unknown, repeated and conflicting ones change nothing. */
  accept(raw: unknown): void {
    const d = raw as PermissionDecision;
    if (!PermissionDecisionSchema.safeParse(raw).success || this.problem(d) || this.decided.has(d.requestId)) return;
    this.arrived.set(d.requestId, d.decision);
  }

  /** Asks about one path a call touches. */
  request(call: PickedCall, p: GatedPath): PermissionRequest {
    const request: PermissionRequest = {
      requestId: `${this.taskId}.perm-${++this.counter}`,
      stepId: call.stepId,
      tool: call.qualifiedName,
      path: p.real,
      requestedPath: p.requested,
      op: p.op,
      class: p.class,
      reason: this.whyAskedAgain(p.real, p.op, p.reason),
      // Security: the person deciding sees everything the call would do, not just the path it names.
      call: { tool: call.qualifiedName, args: call.args },
      ...(p.change ? { change: p.change } : {}),
    };
    this.requests.set(request.requestId, request);
    return request;
  }

  /** The reason a path is asked about, and why a grant that covered it no longer does (the latest such). */
  private whyAskedAgain(path: string, op: PathOp, reason: string): string {
    const ended = [...this.ended].reverse().find((g) => grantCovers([g], path, op));
    return ended ? `${reason}; ${ended.why}` : reason;
  }

  /** Whether a request has its answer at `now`: a decision, or a grant for the session made while it waited. */
  isAnswered(r: PermissionRequest, now: Date): boolean {
    return this.arrived.has(r.requestId) || this.covers(r.path, r.op, now);
  }

  /**
   * Applies the answer to a request (call once `isAnswered`, with the same `now`); an allow_session decision grants
   * the path until `grantTtlMs` after `now`.
   */
  close(r: PermissionRequest, now: Date): DecidedRequest {
    const given = this.arrived.get(r.requestId);
    const decision = given ?? 'allow_session';
    const automatic = given === undefined;
    this.decided.set(r.requestId, decision);
    this.requests.delete(r.requestId);
    this.arrived.delete(r.requestId);
    let grant: SessionGrant | null = null;
    if (decision === 'allow_session' && !automatic && !this.covers(r.path, r.op, now)) {
      grant = { path: r.path, op: r.op };
      this.sessionGrants.push({ ...grant, expiresAt: new Date(now.getTime() + this.grantTtlMs).toISOString() });
      this.newGrants.push(grant);
    }
    return { decision, automatic, grant };
  }

  /** The task ends (cancelled) while requests wait: nothing is waited for any more. */
  withdraw(): void {
    this.requests.clear();
  }
}

/** A grant holds until its expiry; one without an expiry (written before grants lapsed) holds for the task. */
const holds = (g: TaskGrant, now: Date): boolean =>
  g.expiresAt === undefined || Date.parse(g.expiresAt) > now.getTime();
