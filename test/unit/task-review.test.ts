/** Plan review bookkeeping of the task workflow: what the `review` signal and update take, refuse and ignore. */
import type { Plan } from '../../common/plan';
import { ReviewGate } from '../../workflows/task/review-gate';

const plan: Plan = {
  goal: 'g',
  steps: [{ id: 's1', title: 't', instruction: 'i', depends_on: [], needs_tool: false, questions: [] }],
  review: { before_work: true, after_step_ids: [] },
};

function underReview(hash = 'h1'): ReviewGate {
  const gate = new ReviewGate();
  gate.request('before_work', hash, plan, []);
  return gate;
}

describe('plan review', () => {
  it('an approval of the plan under review is taken and ends the review', () => {
    const gate = underReview();

    gate.accept({ decision: 'approve', planHash: 'h1' });
    const decision = gate.close();

    expect(decision).toEqual({ decision: 'approve', planHash: 'h1' });
    expect(gate.pending).toBeNull();
  });

  it('a decision that names no plan counts for the plan under review', () => {
    const gate = underReview();

    gate.accept({ decision: 'revise', feedback: 'shorter' });

    expect(gate.decided).toBe(true);
    expect(gate.close()).toEqual({ decision: 'revise', feedback: 'shorter' });
  });

  it('a decision with no review pending is refused', () => {
    const gate = new ReviewGate();

    const refusal = gate.refusal({ decision: 'approve' });
    gate.accept({ decision: 'approve' });

    expect(refusal).toBe('no plan review is pending');
    expect(gate.decided).toBe(false);
  });

  it('a stale plan hash is refused and changes nothing', () => {
    const gate = underReview('h2');

    const refusal = gate.refusal({ decision: 'approve', planHash: 'h1' });
    gate.accept({ decision: 'approve', planHash: 'h1' });

    expect(refusal).toBe('stale decision: it is for plan h1, the plan under review is h2');
    expect(gate.decided).toBe(false);
  });

  it('a second decision on the same review changes nothing', () => {
    const gate = underReview();
    gate.accept({ decision: 'approve' });

    const refusal = gate.refusal({ decision: 'revise', feedback: 'no' });
    gate.accept({ decision: 'revise', feedback: 'no' });

    expect(refusal).toBe('this review has already been decided');
    expect(gate.close().decision).toBe('approve');
  });

  it('a second approval of the same plan, after the review ended, is answered and changes nothing', () => {
    const gate = underReview();
    gate.accept({ decision: 'approve', planHash: 'h1' });
    gate.close();

    const refusal = gate.refusal({ decision: 'approve', planHash: 'h1' });
    gate.accept({ decision: 'approve', planHash: 'h1' });

    expect(refusal).toBeNull();
    expect(gate.pending).toBeNull();
  });

  it('a different decision after the review ended is refused', () => {
    const gate = underReview();
    gate.accept({ decision: 'approve' });
    gate.close();

    expect(gate.refusal({ decision: 'revise' })).toBe('no plan review is pending');
    expect(gate.refusal({ decision: 'approve', planHash: 'other' })).toBe('no plan review is pending');
  });

  it('a decision taken on one plan does not count for the revised plan reviewed next', () => {
    const gate = underReview('h1');
    gate.accept({ decision: 'revise', feedback: 'more detail' });
    gate.close();

    gate.request('revised', 'h2', plan, []);

    expect(gate.decided).toBe(false);
    expect(gate.pending).toMatchObject({ kind: 'review', reason: 'revised', planHash: 'h2' });
  });

  it('a malformed signal payload changes nothing', () => {
    const gate = underReview();

    gate.accept({ decision: 'maybe' });
    gate.accept('approve');
    gate.accept({ decision: 'approve', extra: true });

    expect(gate.decided).toBe(false);
  });

  it('cancelling the task withdraws the pending review', () => {
    const gate = underReview();

    gate.withdraw();

    expect(gate.pending).toBeNull();
  });
});
