/**
 * The permission gate's bookkeeping (pure): the requests waiting for a decision, the decisions taken, the grants
 * the session holds, and the idempotency rules shared by the `permission` signal and update. A request is decided
 * once; repeating the decision it got is answered, not refused, so a client may retry safely. A grant for the
 * session answers every request it covers, the ones already waiting included.
 */
import { grantCovers, type GuardedPath, type PathOp } from '../../common/path-guard';
import {
  PermissionDecisionSchema,
  type PendingInterrupt,
  type PermissionDecision,
  type PermissionRequest,
  type SessionGrant,
  type TaskCarry,
} from '../../common/task';
import type { PickedCall } from '../../common/tools';

export type Decision = PermissionDecision['decision'];
/** A path the gate asks about: one outside the project, or a sensitive file inside it. */
export type GatedPath = GuardedPath & { class: 'outside' | 'sensitive' };

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
  private readonly sessionGrants: SessionGrant[];
  /** Grants made with allow_session during this task (the session keeps them). */
  readonly newGrants: SessionGrant[] = [];

  /**
   * @param grants the grants the session holds (or, continuing as new, those the earlier run held).
   * @param carried the rest of an earlier run's gate (continue-as-new happens with no request waiting).
   */
  constructor(
    private readonly taskId: string,
    grants: readonly SessionGrant[],
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

  /** Every grant the session holds, this task's allow_session decisions included. */
  get granted(): readonly SessionGrant[] {
    return this.sessionGrants;
  }

  covers(path: string, op: PathOp): boolean {
    return grantCovers(this.sessionGrants, path, op);
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
      reason: p.reason,
      // Security: the person deciding sees everything the call would do, not just the path it names.
      call: { tool: call.qualifiedName, args: call.args },
    };
    this.requests.set(request.requestId, request);
    return request;
  }

  /** Whether a request has its answer: a decision, or a grant for the session made while it waited. */
  isAnswered(r: PermissionRequest): boolean {
    return this.arrived.has(r.requestId) || this.covers(r.path, r.op);
  }

  /** Applies the answer to a request (call once `isAnswered`); an allow_session decision grants the path. */
  close(r: PermissionRequest): DecidedRequest {
    const given = this.arrived.get(r.requestId);
    const decision = given ?? 'allow_session';
    const automatic = given === undefined;
    this.decided.set(r.requestId, decision);
    this.requests.delete(r.requestId);
    this.arrived.delete(r.requestId);
    let grant: SessionGrant | null = null;
    if (decision === 'allow_session' && !automatic && !this.covers(r.path, r.op)) {
      grant = { path: r.path, op: r.op };
      this.sessionGrants.push(grant);
      this.newGrants.push(grant);
    }
    return { decision, automatic, grant };
  }

  /** The task ends (cancelled) while requests wait: nothing is waited for any more. */
  withdraw(): void {
    this.requests.clear();
  }
}
