/** Everything a session holds: its `state` query answer and its continue-as-new carry, from one reading. */
import { SessionInputSchema, type QueuedMessage } from '../../common/session';
import { CARRIED_EVENTS, Session, taskReply, type ParsedSessionInput } from '../../workflows/session/session-state';

const input = (over: Partial<ParsedSessionInput> = {}): ParsedSessionInput =>
  SessionInputSchema.parse({ sessionId: 's', projectDir: '/p', ...over });

const NOW = new Date('2025-01-01T00:00:00Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);
const DAY = 86_400_000;

function busySession(): Session {
  const session = new Session(input({ mode: 'general', toolAccess: 'read_only' }), NOW, 'r1');
  session.memory.add({ role: 'user', text: 'hello' }, { role: 'assistant', text: 'hi' });
  session.grants.add([{ path: '/notes', op: 'read' }], NOW);
  session.contextFile = 'AGENTS.md';
  const taskId = session.queue.nextTaskId();
  session.queue.push({ seq: session.queue.nextSeq(), kind: 'task', text: 'sum up', route: 'task', taskId });
  session.tasks.push(taskId);
  session.log.emit({ type: 'status', status: 'running', taskId });
  return session;
}

describe('session state', () => {
  it('a session restored from its carry shows the same state, one run later', () => {
    const session = busySession();
    const { state, carry } = session.snapshot();

    const next = new Session(input({ carry }));

    // One run later: the run before is named, with the events it holds.
    expect(next.snapshot().state).toEqual({
      ...state,
      earlierRuns: [{ runId: 'r1', firstSeq: 1, lastSeq: 1 }],
    });
    expect(next.log.after(0)).toEqual(session.log.after(0));
    expect(next.runs).toBe(2);
    expect(next.queue.nextTaskId()).toBe('task-s-2');
  });

  it('the carry passes the schema the next run parses its input with', () => {
    const session = busySession();

    const { carry } = session.snapshot();

    expect(SessionInputSchema.safeParse({ sessionId: 's', projectDir: '/p', carry }).success).toBe(true);
  });

  it('the carry keeps only the newest events, so the next run starts small and a client sees no gap in seq', () => {
    const session = new Session(input());
    for (let i = 0; i < CARRIED_EVENTS + 20; i++) session.log.emit({ type: 'memory', action: 'x', detail: `${i}` });

    const { carry } = session.snapshot();

    expect(carry.recentEvents).toHaveLength(CARRIED_EVENTS);
    expect(carry.recentEvents[0].seq).toBe(21);
    expect(carry.lastSeq).toBe(CARRIED_EVENTS + 20);
  });

  it('a grant the session already holds is not added twice', () => {
    const session = new Session(input());

    session.grants.add([{ path: '/notes', op: 'read' }], NOW);
    session.grants.add(
      [
        { path: '/notes', op: 'read' },
        { path: '/notes', op: 'write' },
      ],
      later(1000)
    );

    expect(session.grants.held).toEqual([
      { id: 'g1', path: '/notes', op: 'read', grantedAt: NOW.toISOString(), expiresAt: later(DAY).toISOString() },
      {
        id: 'g2',
        path: '/notes',
        op: 'write',
        grantedAt: later(1000).toISOString(),
        expiresAt: later(DAY + 1000).toISOString(),
      },
    ]);
  });

  it('a grant lapses after permissions.session_grant_ttl_ms: no task gets it, and it is dropped', () => {
    const session = new Session(input({ grantTtlMs: 60_000 }));
    session.grants.add([{ path: '/notes', op: 'read' }], NOW);
    const item = { seq: 1, kind: 'task' as const, text: 'x', taskId: 'task-s-1' };

    expect(session.taskInput(item, later(59_999))).toMatchObject({
      grants: [{ id: 'g1', path: '/notes', op: 'read', expiresAt: later(60_000).toISOString() }],
      grantTtlMs: 60_000,
    });
    expect(session.taskInput(item, later(60_000)).grants).toEqual([]);
    expect(session.grants.dropExpired(later(59_999))).toEqual([]);
    expect(session.grants.dropExpired(later(60_000)).map((g) => g.id)).toEqual(['g1']);
    expect(session.grants.held).toEqual([]);
  });

  it('a lapsed grant allowed again is a new grant with a new id and a new expiry', () => {
    const session = new Session(input({ grantTtlMs: 60_000 }));
    session.grants.add([{ path: '/notes', op: 'read' }], NOW);

    const added = session.grants.add([{ path: '/notes', op: 'read' }], later(60_000));

    expect(added.map((g) => [g.id, g.expiresAt])).toEqual([['g2', later(120_000).toISOString()]]);
    expect(session.grants.held.map((g) => g.id)).toEqual(['g2']);
  });

  it('a revoked grant is gone, and grant ids are never reused, across runs too', () => {
    const session = new Session(input());
    session.grants.add(
      [
        { path: '/a', op: 'read' },
        { path: '/b', op: 'write' },
      ],
      NOW
    );

    expect(session.grants.revoke('g1', false)?.path).toBe('/a');
    expect(session.grants.revoke('g1', false)).toBeUndefined();
    const next = new Session(input({ carry: session.snapshot().carry }));
    next.grants.add([{ path: '/a', op: 'read' }], NOW);

    expect(next.grants.held.map((g) => g.id)).toEqual(['g2', 'g3']);
  });

  it("a grant revoked while a task ran is not taken back from that task's result", () => {
    const session = new Session(input());
    session.currentTaskId = 'task-s-1';
    session.grants.add([{ path: '/a', op: 'read' }], NOW);

    session.grants.revoke('g1', session.currentTaskId !== null);
    const added = session.grants.takeFromTask(
      [
        { path: '/a', op: 'read' },
        { path: '/b', op: 'read' },
      ],
      NOW
    );

    expect(added.map((g) => g.path)).toEqual(['/b']);
    expect(session.grants.takeFromTask([{ path: '/a', op: 'read' }], NOW).map((g) => g.path)).toEqual(['/a']);
  });

  it('its last activity starts with the session, moves with what it takes, and stays through sleep and wake', () => {
    const session = new Session(input(), NOW);
    expect(session.lastActivityAt).toBe(NOW.toISOString());

    session.touch(later(5000));
    const slept = session.sleep(later(60_000));

    expect(slept.carry.lastActivityAt).toBe(later(5000).toISOString());
    expect(new Session(input({ carry: slept.carry }), later(90_000)).lastActivityAt).toBe(later(5000).toISOString());
  });

  it('a woken run shows the grants its input names until it has read its own, and hands none of them on', () => {
    const slept = new Session(input());
    slept.grants.add([{ path: '/a', op: 'read' }], new Date());
    const { carry } = slept.snapshot();
    const woken = new Session(input({ carry: { ...carry, grants: [] } }));
    const item = { seq: 1, kind: 'task' as const, text: 'x', taskId: 'task-s-1' };

    woken.grants.awaitRead(carry.grants);

    expect(woken.snapshot().state.grants).toEqual(carry.grants);
    expect(woken.taskInput(item, new Date()).grants).toEqual([]);
    woken.grants.restore([], 1);
    expect(woken.snapshot().state.grants).toEqual([]);
  });

  it('a session that goes to sleep returns everything it carries, and its state says sleeping', () => {
    const session = busySession();

    const slept = session.sleep(NOW);

    expect(slept).toEqual({
      sessionId: 's',
      status: 'sleeping',
      projectDir: '/p',
      sleptAt: NOW.toISOString(),
      carry: session.snapshot().carry,
    });
    expect(session.snapshot().state.status).toBe('sleeping');
    expect(new Session(input({ carry: slept.carry })).snapshot().state).toEqual({
      ...session.snapshot().state,
      status: 'running',
      earlierRuns: [{ runId: 'r1', firstSeq: 1, lastSeq: 1 }],
    });
  });

  it("a task gets the session's settings and memory, unless its request names its own", () => {
    const session = busySession();
    const item: QueuedMessage & { taskId: string } = {
      seq: 9,
      kind: 'task',
      text: 'write it',
      taskId: 'task-s-9',
      toolAccess: 'full',
    };

    const taskInput = session.taskInput(item, NOW);

    expect(taskInput).toMatchObject({
      taskId: 'task-s-9',
      prompt: 'write it',
      mode: 'general',
      toolAccess: 'full',
      route: false,
      grants: [{ id: 'g1', path: '/notes', op: 'read', expiresAt: later(DAY).toISOString() }],
      recentTurns: [
        { role: 'user', text: 'hello' },
        { role: 'assistant', text: 'hi' },
      ],
    });
  });

  it('the context event says the mode in force, and why scientific cannot run', () => {
    const session = new Session(input({ mode: 'scientific' }));

    const event = session.contextEvent();

    expect(event).toMatchObject({ type: 'context', mode: 'scientific', requestedMode: 'scientific' });
    expect(event.modeNote).toMatch(/Scientific mode cannot run yet/);
  });

  it('settings change only what they name, and say whether anything changed', () => {
    const session = new Session(input({ mode: 'general', toolAccess: 'full', network: 'off' }));

    const first = session.applySettings({ toolAccess: 'read_only' });
    const again = session.applySettings({ toolAccess: 'read_only', mode: 'general' });
    const network = session.applySettings({ network: 'on' });

    expect([first, again, network]).toEqual([true, false, true]);
    expect({ mode: session.mode, toolAccess: session.toolAccess, network: session.network }).toEqual({
      mode: 'general',
      toolAccess: 'read_only',
      network: 'on',
    });
  });

  it('the details say what the session is doing', () => {
    const session = busySession();
    session.currentTaskId = 'task-s-1';

    expect(session.details()).toBe(
      '**running task-s-1**\n\nmode general · tools read_only · 1 task(s) · 1 queued\n\n' +
        'memory: 7 chars verbatim, 0 summarised'
    );
  });

  it('a task that ended without an answer leaves a turn that says why', () => {
    const base = { taskId: 't', verification: 'unverified' as const, newGrants: [] };

    expect(taskReply({ ...base, status: 'done', answer: 'forty-two', error: null })).toBe('forty-two');
    expect(taskReply({ ...base, status: 'cancelled', answer: null, error: 'stop' })).toBe(
      '(the task was cancelled: stop)'
    );
    expect(taskReply({ ...base, status: 'failed', answer: null, error: null })).toBe('(the task failed)');
    expect(taskReply({ ...base, status: 'rewound', answer: null, error: null })).toBe('(the task was rewound)');
  });
});
