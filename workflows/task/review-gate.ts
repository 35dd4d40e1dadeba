/**
 * Plan review bookkeeping (pure): which plan is under review, the decision taken on it, and the idempotency rules
 * shared by the `review` signal and update. A decision counts only for the plan under review (by hash, when it
 * names one), once; repeating the last decision is answered, not refused, so a client may retry safely.
 */
import type { Plan } from '../../common/plan';
import { ReviewDecisionSchema, type PendingInterrupt, type ReviewDecision, type TaskCarry } from '../../common/task';

export type PendingReview = Extract<PendingInterrupt, { kind: 'review' }>;
export type ReviewReason = PendingReview['reason'];

export class ReviewGate {
  private open: PendingReview | null = null;
  private decision: ReviewDecision | null = null;
  /** The last decided review, so a client retrying the same decision is answered, not refused. */
  private last: { planHash: string; decision: ReviewDecision['decision'] } | null = null;

  /** @param last the last decided review of an earlier run of the task (continue-as-new). */
  constructor(last: TaskCarry['lastReview'] = null) {
    this.last = last;
  }

  /** What the next run takes over (continue-as-new happens with no review open). */
  carry(): TaskCarry['lastReview'] {
    if (this.open) throw new TypeError('a review is open');
    return this.last;
  }

  get pending(): PendingReview | null {
    return this.open;
  }

  get decided(): boolean {
    return this.decision !== null;
  }

  /** Puts a plan under review; any decision taken before does not count for it. */
  request(
    reason: ReviewReason,
    planHash: string,
    plan: Plan,
    afterStepIds: string[],
    spent?: PendingReview['spent'],
    revision?: Pick<PendingReview, 'diff' | 'feedback'>
  ): PendingReview {
    this.decision = null;
    this.open = { kind: 'review', reason, planHash, plan, afterStepIds, ...(spent ? { spent } : {}), ...revision };
    return this.open;
  }

  /** Why a decision cannot be taken now, or null. */
  problem(d: ReviewDecision): string | null {
    if (!this.open) return 'no plan review is pending';
    if (d.planHash && d.planHash !== this.open.planHash)
      return `stale decision: it is for plan ${d.planHash}, the plan under review is ${this.open.planHash}`;
    if (this.decision) return 'this review has already been decided';
    return null;
  }

  /** What the update refuses: a decision that cannot be taken, unless it repeats the last one. */
  refusal(d: ReviewDecision): string | null {
    const problem = this.problem(d);
    return problem && !this.repeatsLast(d) ? problem : null;
  }

  /** Takes a decision if it can be taken; malformed, duplicate and stale ones change nothing. */
  accept(raw: unknown): void {
    const d = raw as ReviewDecision;
    if (ReviewDecisionSchema.safeParse(raw).success && !this.problem(d)) this.decision = d;
  }

  /** Ends the review with the decision taken (call once `decided`). */
  close(): ReviewDecision {
    const decision = this.decision;
    if (!this.open || !decision) throw new TypeError('no review has been decided');
    this.last = { planHash: this.open.planHash, decision: decision.decision };
    this.open = null;
    return decision;
  }

  /** The task ends (cancelled) while a review is pending: nothing is waited for any more. */
  withdraw(): void {
    this.open = null;
  }

  private repeatsLast(d: ReviewDecision): boolean {
    return (
      !this.open &&
      this.last !== null &&
      d.decision === this.last.decision &&
      (!d.planHash || d.planHash === this.last.planHash)
    );
  }
}
