/** The permission gate's bookkeeping: requests, decisions (signal and update alike) and the session's grants. */
import type { GuardedPath } from '../../common/path-guard';
import type { PickedCall } from '../../common/tools';
import { gate, PermissionGate, type GatedPath } from '../../workflows/task/permissions';

const call: PickedCall = {
  stepId: 's1',
  server: 'workspace',
  tool: 'read_file',
  qualifiedName: 'workspace__read_file',
  args: { path: '../notes/a.txt' },
  readOnly: true,
  idempotent: true,
};
const outside = (real: string, op: GuardedPath['op'] = 'read'): GatedPath => ({
  arg: 'path',
  requested: real,
  op,
  real,
  class: 'outside',
  reason: 'outside the project directory',
});

const NOW = new Date('2026-12-01T10:00:00Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);

describe('permission gate', () => {
  it('a request is numbered within its task and is listed as pending', () => {
    const gate = new PermissionGate('task-s-1', []);

    const first = gate.request(call, outside('/notes/a.txt'));
    const second = gate.request(call, outside('/notes/b.txt'));

    expect([first.requestId, second.requestId]).toEqual(['task-s-1.perm-1', 'task-s-1.perm-2']);
    expect(gate.pending).toEqual({ kind: 'permission', requests: [first, second] });
  });

  it('allow for the session grants the path to later calls and hands the grant to the session', () => {
    const gate = new PermissionGate('t', []);
    const r = gate.request(call, outside('/notes/a.txt', 'write'));

    gate.accept({ requestId: r.requestId, decision: 'allow_session' });
    const decided = gate.isAnswered(r, NOW) ? gate.close(r, NOW) : null;

    expect(decided).toEqual({
      decision: 'allow_session',
      automatic: false,
      grant: { path: '/notes/a.txt', op: 'write' },
    });
    expect(gate.newGrants).toEqual([{ path: '/notes/a.txt', op: 'write' }]);
    expect(gate.covers('/notes/a.txt', 'read', NOW)).toBe(true);
    expect(gate.pending).toBeNull();
  });

  it('allow once and deny grant nothing beyond the call', () => {
    const gate = new PermissionGate('t', []);
    const once = gate.request(call, outside('/notes/a.txt'));
    const denied = gate.request(call, outside('/notes/b.txt'));

    gate.accept({ requestId: once.requestId, decision: 'allow_once' });
    gate.accept({ requestId: denied.requestId, decision: 'deny' });

    expect(gate.close(once, NOW)).toEqual({ decision: 'allow_once', automatic: false, grant: null });
    expect(gate.close(denied, NOW)).toEqual({ decision: 'deny', automatic: false, grant: null });
    expect(gate.covers('/notes/a.txt', 'read', NOW)).toBe(false);
    expect(gate.newGrants).toEqual([]);
  });

  it('a grant for the session made while a request waited answers it, with nobody asked', () => {
    const gate = new PermissionGate('t', []);
    const first = gate.request(call, outside('/notes/a.txt'));
    const second = gate.request(call, outside('/notes/a.txt'));
    gate.accept({ requestId: first.requestId, decision: 'allow_session' });
    gate.close(first, NOW);

    const answered = gate.isAnswered(second, NOW);
    const decided = gate.close(second, NOW);

    expect(answered).toBe(true);
    expect(decided).toEqual({ decision: 'allow_session', automatic: true, grant: null });
    expect(gate.newGrants).toHaveLength(1);
  });

  it('grants the session already held cover their paths from the start', () => {
    const gate = new PermissionGate('t', [{ path: '/notes', op: 'execute' }]);

    expect(gate.covers('/notes', 'read', NOW)).toBe(true);
    expect(gate.covers('/notes', 'write', NOW)).toBe(false);
    expect(gate.newGrants).toEqual([]);
  });

  it('a second, different decision on a request is refused and changes nothing', () => {
    const gate = new PermissionGate('t', []);
    const r = gate.request(call, outside('/notes/a.txt'));
    gate.accept({ requestId: r.requestId, decision: 'deny' });

    const beforeApplied = gate.problem({ requestId: r.requestId, decision: 'allow_once' });
    gate.accept({ requestId: r.requestId, decision: 'allow_once' });
    const decided = gate.close(r, NOW);
    const afterApplied = gate.problem({ requestId: r.requestId, decision: 'allow_once' });

    expect(beforeApplied).toBe(`permission request ${r.requestId} has already been decided`);
    expect(decided.decision).toBe('deny');
    expect(afterApplied).toBe(`permission request ${r.requestId} was already decided (deny)`);
  });

  it('repeating the decision a request got is answered, not refused, and changes nothing', () => {
    const gate = new PermissionGate('t', []);
    const r = gate.request(call, outside('/notes/a.txt'));
    gate.accept({ requestId: r.requestId, decision: 'allow_once' });
    gate.close(r, NOW);

    const problem = gate.problem({ requestId: r.requestId, decision: 'allow_once' });
    gate.accept({ requestId: r.requestId, decision: 'allow_once' });

    expect(problem).toBeNull();
    expect(gate.pending).toBeNull();
    expect(gate.isAnswered(r, NOW)).toBe(false);
  });

  it('a decision for a request that does not exist is refused', () => {
    const gate = new PermissionGate('t', []);

    expect(gate.problem({ requestId: 't.perm-9', decision: 'deny' })).toBe('no permission request t.perm-9 is pending');
  });

  it('a malformed decision changes nothing', () => {
    const gate = new PermissionGate('t', []);
    const r = gate.request(call, outside('/notes/a.txt'));

    gate.accept({ requestId: r.requestId, decision: 'allow_forever' });
    gate.accept({ requestId: r.requestId });

    expect(gate.isAnswered(r, NOW)).toBe(false);
  });

  it('cancelling the task withdraws the waiting requests', () => {
    const gate = new PermissionGate('t', []);
    gate.request(call, outside('/notes/a.txt'));

    gate.withdraw();

    expect(gate.pending).toBeNull();
  });

  it('a grant made in the task lapses after the session grant TTL, by the clock it is asked with', () => {
    const gate = new PermissionGate('t', [], 60_000);
    const r = gate.request(call, outside('/notes/a.txt'));
    gate.accept({ requestId: r.requestId, decision: 'allow_session' });
    gate.close(r, NOW);

    expect(gate.covers('/notes/a.txt', 'read', later(59_999))).toBe(true);
    expect(gate.covers('/notes/a.txt', 'read', later(60_000))).toBe(false);
    expect(gate.granted(later(60_000))).toEqual([]);
  });

  it("the session's grants hold until their expiry; a lapsed one covers nothing and a new request says why", () => {
    const expiresAt = later(1000).toISOString();
    const gate = new PermissionGate('t', [{ id: 'g1', path: '/notes/a.txt', op: 'write', expiresAt }]);

    expect(gate.covers('/notes/a.txt', 'read', NOW)).toBe(true);
    expect(gate.granted(NOW)).toEqual([{ path: '/notes/a.txt', op: 'write' }]);
    expect(gate.dropLapsed(later(1000))).toEqual([{ id: 'g1', path: '/notes/a.txt', op: 'write', expiresAt }]);
    expect(gate.covers('/notes/a.txt', 'read', NOW)).toBe(false);
    expect(gate.request(call, outside('/notes/a.txt')).reason).toBe(
      `outside the project directory; the grant for the session lapsed at ${expiresAt}`
    );
  });

  it('a waiting request is not answered by a grant that has lapsed', () => {
    const gate = new PermissionGate('t', [{ path: '/notes/a.txt', op: 'read', expiresAt: later(1000).toISOString() }]);
    const r = gate.request(call, outside('/notes/a.txt'));

    expect(gate.isAnswered(r, NOW)).toBe(true);
    expect(gate.isAnswered(r, later(1000))).toBe(false);
  });

  it('a revoked grant covers nothing, by id or (made in this task) by path, and is not handed to the session', () => {
    const gate = new PermissionGate('t', [
      { id: 'g1', path: '/notes/a.txt', op: 'read', expiresAt: later(9e6).toISOString() },
    ]);
    const r = gate.request(call, outside('/notes/b.txt'));
    gate.accept({ requestId: r.requestId, decision: 'allow_session' });
    gate.close(r, NOW);

    gate.revoke({ grantId: 'g1', path: '/notes/a.txt', op: 'read' });
    gate.revoke({ grantId: 'g2', path: '/notes/b.txt', op: 'read' });

    expect(gate.covers('/notes/a.txt', 'read', NOW)).toBe(false);
    expect(gate.covers('/notes/b.txt', 'read', NOW)).toBe(false);
    expect(gate.newGrants).toEqual([]);
    expect(gate.carry().grants).toEqual([]);
    expect(gate.request(call, outside('/notes/b.txt')).reason).toBe(
      'outside the project directory; the grant for the session (g2) was revoked'
    );
  });

  it('grants written before grants lapsed (no expiry) hold for the task', () => {
    const gate = new PermissionGate('t', [{ path: '/notes', op: 'read' }]);

    expect(gate.covers('/notes', 'read', later(10 * 365 * 86_400_000))).toBe(true);
  });
});

describe("gate(): run, refuse or ask, for one call's paths", () => {
  const inside = (real: string): GuardedPath => ({ ...outside(real), class: 'inside', reason: 'inside the project' });
  const forbidden = (real: string): GuardedPath => ({
    ...outside(real),
    class: 'forbidden',
    reason: "Klea's own state",
  });
  const none = () => false;

  it("paths inside the project run with no grant; Klea's own state is refused whatever is granted", () => {
    expect(gate([inside('/p/a.txt')], none)).toEqual({ kind: 'run', grants: [] });
    expect(gate([inside('/p/a.txt'), forbidden('/data/klea.db')], () => true)).toMatchObject({
      kind: 'refuse',
      path: { real: '/data/klea.db' },
    });
  });

  it("a path no grant covers is asked about, the first in the call's order; covered ones run with their grants", () => {
    const asked = gate([outside('/n/a.txt'), outside('/n/b.txt')], (real) => real === '/n/a.txt');
    expect(asked).toEqual({ kind: 'ask', path: outside('/n/b.txt') });
    expect(gate([outside('/n/a.txt'), outside('/n/a.txt', 'read')], () => true)).toEqual({
      kind: 'run',
      grants: [{ path: '/n/a.txt', op: 'read' }],
    });
  });

  it('asks the cover once per path and operation the call names, in order', () => {
    const looked: string[] = [];
    gate([outside('/n/a.txt'), outside('/n/a.txt'), outside('/n/a.txt', 'write')], (real, op) => {
      looked.push(`${op} ${real}`);
      return true;
    });
    expect(looked).toEqual(['read /n/a.txt', 'write /n/a.txt']);
  });
});
