/**
 * Sessions that sleep and wake, through the API on a real Temporal server: an idle session's run completes with all
 * it carries; the next message, setting, command or revocation wakes it as it was (update-with-start,
 * signal-with-start), once however many clients wake it at once. Session grants lapse and can be revoked; sessions
 * and tasks past the namespace's retention answer 410.
 *
 * Each session here is made by an API whose sessions sleep after a short idle time, and woken by one whose
 * sessions stay awake for an hour, so a test that waits for the sleep is never overtaken by another one.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../api/app';
import { sessionStarter } from '../../api/session-start';
import { sessionWaker } from '../../api/session-wake';
import { newSessionId } from '../../api/targets';
import { TemporalCalls } from '../../api/temporal-calls';
import type { Config } from '../../common/config';
import type { KleaEvent } from '../../common/events';
import { SessionSleepSchema, type SessionState } from '../../common/session';
import { eventsQuery, settingsSignal, submitUpdate } from '../../workflows/session/messages';
import { CARRIED_EVENTS } from '../../workflows/session/session-state';
import { permissionSignal, reviewSignal, stateQuery } from '../../workflows/task/messages';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { SessionDriver } from '../support/session-driver';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { until } from '../support/until';

describe('sessions that sleep and wake', () => {
  let fake: FakeModel;
  let env: TestEnv;
  /** Makes sessions that sleep after 1.5 s idle. */
  let dozy: Express;
  /** Wakes them into runs that stay awake (idle_close_ms: one hour). */
  let awake: Express;
  const appWith = (over: { idle?: number; grantTtl?: number }): Express => {
    const config: Config = {
      ...env.config,
      session: { idle_close_ms: over.idle ?? 3_600_000 },
      permissions: { session_grant_ttl_ms: over.grantTtl ?? 86_400_000 },
    };
    return createApp({ client: env.client, config, ssePollMs: 50 });
  };
  useFakeModelEnv({ name: 'session-sleep' }, (f, e) => {
    fake = f;
    env = e;
    dozy = appWith({ idle: 1500 });
    awake = appWith({});
  });

  const chat = (reply: string) => ({ call: { route: 'chat', reply } });
  const task = { call: { route: 'task', reply: null } };
  const handleOf = (sessionId: string, runId?: string) =>
    env.client.workflow.getHandle(`session-${sessionId}`, runId, runId ? { followRuns: false } : undefined);

  async function newSession(app: Express, projectDir: string): Promise<string> {
    const res = await request(app).post('/sessions').send({ projectDir });
    expect(res.status).toBe(201);
    return res.body.sessionId as string;
  }

  /** Waits until the session's latest run has gone to sleep; returns that run's id. */
  const asleep = (sessionId: string) =>
    until(`session ${sessionId} sleeps`, async () => {
      const d = await handleOf(sessionId).describe();
      return d.status.name === 'COMPLETED' ? d.runId : undefined;
    });

  /** The session's runs, once visibility has caught up with the latest (listed running or completed). */
  const runsOf = async (sessionId: string) => {
    const latest = (await handleOf(sessionId).describe()).runId;
    return until('visibility lists the latest run', async () => {
      const runs: string[] = [];
      for await (const w of env.client.workflow.list({ query: `WorkflowId = 'session-${sessionId}'` }))
        runs.push(w.runId);
      return runs.includes(latest) ? runs : undefined;
    });
  };

  const stateOf = async (app: Express, sessionId: string): Promise<SessionState> => {
    const res = await request(app).get(`/sessions/${sessionId}`);
    expect(res.status).toBe(200);
    return res.body as SessionState;
  };

  const eventsOf = async (app: Express, sessionId: string): Promise<KleaEvent[]> =>
    (await request(app).get(`/sessions/${sessionId}/events?after=0`)).body.events as KleaEvent[];

  /**
   * A task that reads a file outside the project: asks, unless a session grant covers it. One the user denies
   * (`allowed` false) achieves nothing and ends failed without composing an answer.
   */
  function readOutside(file: string, allowed = true) {
    fake.on('route_request', task);
    fake.on('write_plan', { call: plan([step('s1', 'Read the outside file')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: file } }] });
    if (allowed) fake.on('compose_answer', { content: 'outside data' });
  }

  async function grantOutsideFile(app: Express, sessionId: string, file: string) {
    readOutside(file);
    const sent = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'read it' });
    expect(sent.status).toBe(200);
    const t = await TaskDriver.attach(env, sent.body.taskId);
    const ask = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'allow_session' });
    expect((await t.result()).status).toBe('done');
  }

  it('an idle session sleeps with everything it carries; the next message wakes it as it was', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const id = await newSession(dozy, p.dir);
    fake.on('route_request', chat('hello back'));
    expect((await request(dozy).post(`/sessions/${id}/messages`).send({ text: 'hello' })).body).toEqual({
      kind: 'chat',
      reply: 'hello back',
    });
    await grantOutsideFile(dozy, id, outsideFile);
    const patched = await request(dozy).patch(`/sessions/${id}`).send({ network: 'on' });
    expect(patched.status).toBe(200);
    const awakeState = await until('the setting is applied', async () => {
      const st = await stateOf(dozy, id);
      return st.network === 'on' ? st : undefined;
    });

    const sleptRun = await asleep(id);

    // The run's result is everything it carries; the API reads the sleeping session as it was.
    const slept = SessionSleepSchema.parse(await handleOf(id, sleptRun).result());
    expect(slept.carry.grants.map((g) => g.path)).toEqual([outsideFile]);
    const sleeping = (await stateOf(dozy, id)) as SessionState & { temporalUiUrl: string };
    expect(sleeping).toEqual({ ...awakeState, status: 'sleeping', temporalUiUrl: sleeping.temporalUiUrl });
    expect(sleeping.memory.turns.map((t) => t.text)).toEqual(['hello', 'hello back', 'read it', 'outside data']);
    expect(sleeping.network).toBe('on');
    expect(sleeping.usage.modelCalls).toBeGreaterThan(0);
    const listed = (await request(dozy).get('/sessions?limit=100')).body.sessions as Array<{
      id: string;
      status: string;
    }>;
    expect(listed.filter((s) => s.id === id)).toEqual([expect.objectContaining({ status: 'sleeping' })]);
    const eventsBefore = await eventsOf(dozy, id);

    // The next message wakes it: same id, same memory, grants and settings, numbering carried on.
    readOutside(outsideFile);
    const woke = await request(awake).post(`/sessions/${id}/messages`).send({ text: 'read it again' });
    expect(woke.status).toBe(200);
    expect(woke.body).toEqual({ kind: 'task', taskId: `task-${id}-2` });
    const t2 = await TaskDriver.attach(env, woke.body.taskId);
    expect((await t2.result()).status).toBe('done');
    expect(await t2.countOf('permission_requested')).toBe(0);
    const now = await until('the woken session is idle', async () => {
      const s = await stateOf(awake, id);
      return s.currentTaskId === null && s.queue.length === 0 && s.memory.turns.length === 6 ? s : undefined;
    });
    expect(now.status).toBe('running');
    expect(now.network).toBe('on');
    expect(now.grants).toEqual(sleeping.grants);
    expect(now.tasks).toEqual([`task-${id}-1`, `task-${id}-2`]);
    expect(now.memory.turns.map((t) => t.text).slice(0, 4)).toEqual(sleeping.memory.turns.map((t) => t.text));
    expect((await handleOf(id).describe()).runId).not.toBe(sleptRun);
    const events = await eventsOf(awake, id);
    expect(events.slice(0, eventsBefore.length)).toEqual(eventsBefore);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // Listed once, running again.
    const relisted = (await request(awake).get('/sessions?limit=100')).body.sessions as Array<{ id: string }>;
    expect(relisted.filter((s) => s.id === id)).toEqual([expect.objectContaining({ status: 'running' })]);
  });

  it('the inbox lists sessions by their last activity: one that sleeps keeps its place between two awake ones', async () => {
    const p = makeProject();
    fake.always('route_request', chat('noted'));
    const sessions: string[] = [];
    // Three sessions, each active in turn: the middle one goes to sleep, the others stay awake.
    for (const app of [awake, dozy, awake]) {
      const id = await newSession(app, p.dir);
      expect((await request(app).post(`/sessions/${id}/messages`).send({ text: 'hello' })).status).toBe(200);
      sessions.push(id);
    }
    const [older, middle, newer] = sessions;
    type Listed = { id: string; status: string; lastActivityAt: string | null };
    const listed = async () => {
      const res = await request(awake).get('/sessions?limit=100');
      expect(res.status).toBe(200);
      return (res.body.sessions as Listed[]).filter((x) => sessions.includes(x.id));
    };
    const inOrder = (want: string[], statuses: string[]) =>
      until(`the inbox lists ${want.join(', ')} (${statuses.join(', ')})`, async () => {
        const got = await listed();
        return JSON.stringify(got.map((x) => [x.id, x.status])) ===
          JSON.stringify(want.map((id, i) => [id, statuses[i]]))
          ? got
          : undefined;
      });
    await inOrder([newer, middle, older], ['running', 'running', 'running']);

    await asleep(middle);

    // Asleep, it keeps its place, and its time of last activity.
    const got = await inOrder([newer, middle, older], ['running', 'sleeping', 'running']);
    expect(got.every((x) => x.lastActivityAt !== null)).toBe(true);
    const activities = got.map((x) => Date.parse(x.lastActivityAt!));
    expect([...activities].sort((a, b) => b - a)).toEqual(activities);
    // Woken by a setting it is awake again, in the same place; a message brings it to the top.
    expect((await request(awake).patch(`/sessions/${middle}`).send({ network: 'on' })).status).toBe(200);
    await inOrder([newer, middle, older], ['running', 'running', 'running']);
    expect((await request(awake).post(`/sessions/${middle}/messages`).send({ text: 'again' })).status).toBe(200);
    await inOrder([middle, newer, older], ['running', 'running', 'running']);
    // Pages of one session each follow the same order.
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await request(awake).get(`/sessions?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(...(res.body.sessions as Listed[]).map((x) => x.id));
      cursor = res.body.nextCursor as string | null;
    } while (cursor && !sessions.every((id) => pages.includes(id)));
    expect(pages.filter((id) => sessions.includes(id))).toEqual([middle, newer, older]);
    fake.reset();
  });

  it('two clients waking a sleeping session at once get one run, which takes both messages', async () => {
    const p = makeProject();
    const id = await newSession(dozy, p.dir);
    fake.on('route_request', chat('first'));
    await request(dozy).post(`/sessions/${id}/messages`).send({ text: 'one' });
    const sleptRun = await asleep(id);
    const slept = SessionSleepSchema.parse(await handleOf(id, sleptRun).result());

    // Both wakers have read the sleeping run and send their message with a start of the same session: whichever
    // reaches Temporal first starts the run, and the other's message goes to that run.
    const calls = new TemporalCalls(env.client, {
      namespace: env.config.temporal.namespace,
      taskQueue: env.taskQueue,
      address: env.config.temporal.address,
    });
    const config = { ...env.config, session: { idle_close_ms: 1500 } };
    const starter = sessionStarter({ calls, config, resolveProjectDir: () => p.dir });
    const start = { workflowType: 'sessionWorkflow' as const, options: starter.wakeOptions(slept, sleptRun) };
    const target = { what: `session "${id}"`, workflowId: `session-${id}` };
    fake.always('route_request', chat('answered'));
    const replies = await Promise.all([
      calls.updateWithStart(target, submitUpdate, { text: 'two' }, { noun: 'message' }, start),
      calls.updateWithStart(target, submitUpdate, { text: 'three' }, { noun: 'message' }, start),
    ]);

    expect(replies.map((r) => r.kind)).toEqual(['chat', 'chat']);
    expect(await runsOf(id)).toHaveLength(2);
    const s = await until('both messages are in memory', async () => {
      const st = await stateOf(awake, id);
      return st.memory.turns.length === 6 ? st : undefined;
    });
    expect(s.memory.turns.slice(0, 2).map((t) => t.text)).toEqual(['one', 'first']);
    expect(
      s.memory.turns
        .filter((t) => t.role === 'user')
        .map((t) => t.text)
        .sort()
    ).toEqual(['one', 'three', 'two']);

    // Two API requests at once do the same from the start: each finds the run ended, and one run takes both.
    await asleep(id);
    const [a, b] = await Promise.all([
      request(dozy).post(`/sessions/${id}/messages`).send({ text: 'four' }),
      request(dozy).post(`/sessions/${id}/messages`).send({ text: 'five' }),
    ]);
    expect([a.status, b.status, a.body.reply, b.body.reply]).toEqual([200, 200, 'answered', 'answered']);
    expect(await runsOf(id)).toHaveLength(3);
    fake.reset();
  });

  it('a client that found the session asleep, overtaken by another that woke it, sends to the new run', async () => {
    const p = makeProject();
    const id = await newSession(dozy, p.dir);
    await asleep(id);
    fake.always('route_request', chat('answered'));

    // This client's update finds the run ended; before it asks Temporal how, another client wakes the session.
    class Overtaken extends TemporalCalls {
      override async describe(target: Parameters<TemporalCalls['describe']>[0]) {
        const other = await request(dozy).post(`/sessions/${id}/messages`).send({ text: 'first waker' });
        expect(other.status).toBe(200);
        return super.describe(target);
      }
    }
    const calls = new Overtaken(env.client, {
      namespace: env.config.temporal.namespace,
      taskQueue: env.taskQueue,
      address: env.config.temporal.address,
    });
    const sessions = sessionStarter({ calls, config: env.config, resolveProjectDir: () => p.dir });
    const reply = await sessionWaker({ calls, sessions }).update(id, submitUpdate, { text: 'second' }, 'message');

    expect(reply).toMatchObject({ kind: 'chat', reply: 'answered' });
    expect(await runsOf(id)).toHaveLength(2);
    const users = (await stateOf(awake, id)).memory.turns.filter((t) => t.role === 'user').map((t) => t.text);
    expect(users.sort()).toEqual(['first waker', 'second']);

    // A settings change (a signal) overtaken the same way goes to the new run too.
    await asleep(id);
    await sessionWaker({ calls, sessions }).signal(id, settingsSignal, { toolAccess: 'read_only' });
    expect(await runsOf(id)).toHaveLength(3);
    await until('the setting is applied', async () => (await stateOf(awake, id)).toolAccess === 'read_only');
    fake.reset();
  });

  it('a settings change or a /command wakes a sleeping session too', async () => {
    const p = makeProject();
    const id = await newSession(dozy, p.dir);
    await asleep(id);

    const patched = await request(awake).patch(`/sessions/${id}`).send({ toolAccess: 'read_only' });

    expect(patched.status).toBe(200);
    const s = await until('the setting is applied', async () => {
      const st = await stateOf(awake, id);
      return st.status === 'running' && st.toolAccess === 'read_only' ? st : undefined;
    });
    expect(s.sessionId).toBe(id);

    const other = await newSession(dozy, p.dir);
    await asleep(other);
    const cmd = await request(awake).post(`/sessions/${other}/messages`).send({ text: '/mode scientific' });
    expect(cmd.status).toBe(200);
    expect(cmd.body.reply).toMatch(/^Mode set to scientific/);
    expect((await stateOf(awake, other)).mode).toBe('scientific');
  });

  it('a grant shows when it lapses; once it has, no task is handed it and a waking session drops it', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const shortGrants = appWith({ grantTtl: 4000 });
    const id = await newSession(shortGrants, p.dir);
    await grantOutsideFile(shortGrants, id, outsideFile);
    const [grant] = (await stateOf(shortGrants, id)).grants;
    expect(grant).toMatchObject({ id: 'g1', path: outsideFile, op: 'read' });
    expect(Date.parse(grant.expiresAt) - Date.parse(grant.grantedAt)).toBe(4000);

    // Past its expiry, the awake session hands it to no task: the path is asked about again.
    await until('the grant has lapsed', () => (Date.now() > Date.parse(grant.expiresAt) + 100 ? true : undefined));
    readOutside(outsideFile, false);
    const sent = await request(shortGrants).post(`/sessions/${id}/messages`).send({ text: 'read it again' });
    const t = await TaskDriver.attach(env, sent.body.taskId);
    const ask = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'deny' });
    await t.result();
    const events = await eventsOf(shortGrants, id);
    expect(events.filter((e) => e.type === 'grants').map((e) => (e as { action: string }).action)).toEqual([
      'granted',
      'expired',
    ]);
    expect((await stateOf(shortGrants, id)).grants).toEqual([]);

    // A session that sleeps holding a grant drops it when it wakes after the expiry.
    const other = await newSession(appWith({ idle: 1500, grantTtl: 4000 }), p.dir);
    await grantOutsideFile(shortGrants, other, outsideFile);
    const [held] = (await stateOf(shortGrants, other)).grants;
    await asleep(other);
    await until('the grant has lapsed', () => (Date.now() > Date.parse(held.expiresAt) + 100 ? true : undefined));
    fake.on('route_request', chat('hi'));
    await request(awake).post(`/sessions/${other}/messages`).send({ text: 'hi' });
    // (The reply comes first: the woken run reads its grants once the message that woke it is routed.)
    expect((await stateOf(awake, other)).grants).toEqual([]);
    const wokenEvents = await until('the lapsed grant is dropped', async () => {
      const all = await eventsOf(awake, other);
      return all.some((e) => e.type === 'grants' && e.action === 'expired') ? all : undefined;
    });
    expect(wokenEvents.filter((e) => e.type === 'grants').at(-1)).toMatchObject({ action: 'expired', grants: [] });
    expect((await stateOf(awake, other)).grants).toEqual([]);
  });

  it('DELETE /sessions/:id/grants/:grantId revokes a grant, waking a sleeping session; clear errors otherwise', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const id = await newSession(dozy, p.dir);
    await grantOutsideFile(dozy, id, outsideFile);
    await asleep(id);

    const res = await request(awake).delete(`/sessions/${id}/grants/g1`);

    expect(res.status).toBe(200);
    expect(res.body.revoked).toMatchObject({ id: 'g1', path: outsideFile, op: 'read' });
    expect((await stateOf(awake, id)).grants).toEqual([]);
    const again = await request(awake).delete(`/sessions/${id}/grants/g1`);
    expect([again.status, again.body.error.code]).toEqual([404, 'not_found']);
    expect(again.body.error.message).toBe(`session "${id}" holds no grant "g1" (it holds: none)`);
    const bad = await request(awake).delete(`/sessions/${id}/grants/everything`);
    expect([bad.status, bad.body.error.message]).toEqual([
      400,
      'path.grantId: grant ids look like g1 (see grants in GET /sessions/:id)',
    ]);
    // The next task asks again.
    readOutside(outsideFile, false);
    const sent = await request(awake).post(`/sessions/${id}/messages`).send({ text: 'read it' });
    const t = await TaskDriver.attach(env, sent.body.taskId);
    const ask = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'deny' });
    await t.result();
  });

  /**
   * A task that reads `file` in each of `steps` steps (one after the other), pausing for review where `review` asks:
   * each pause holds the task still while the test changes its grants.
   */
  function readOutsideInSteps(
    file: string,
    steps: string[],
    review: { before_work?: boolean; after_step_ids?: string[] },
    allowed = true
  ) {
    fake.on('route_request', task);
    fake.on('write_plan', {
      call: plan(
        steps.map((id, i) => step(id, 'Read the outside file', { depends_on: i ? [steps[i - 1]] : [] })),
        review
      ),
    });
    for (const id of steps)
      fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: id, path: file } }] });
    if (allowed) fake.on('compose_answer', { content: 'read' });
  }

  it('a grant revoked while a task waits is not used by that task: its next call on the path asks again', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const id = await newSession(awake, p.dir);
    await grantOutsideFile(awake, id, outsideFile);
    readOutsideInSteps(outsideFile, ['s1'], { before_work: true }, false);
    const sent = await request(awake).post(`/sessions/${id}/messages`).send({ text: 'read it once more' });
    const t = await TaskDriver.attach(env, sent.body.taskId);
    // The task started holding the grant, and waits for its review: nothing moves until the test approves.
    await t.waitFor('review_requested');

    const revoked = await request(awake).delete(`/sessions/${id}/grants/g1`);
    expect(revoked.status).toBe(200);
    await t.handle.signal(reviewSignal, { decision: 'approve' });

    // The read is asked about again, saying why, instead of running on the revoked grant.
    const ask = await t.waitFor('permission_requested');
    expect(ask).toMatchObject({ path: outsideFile, op: 'read' });
    expect(ask.reason).toMatch(/the grant for the session \(g1\) was revoked$/);
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'deny' });
    const result = await t.result();
    // Its one step was denied: nothing achieved.
    expect(result.status).toBe('failed');
    const finished = await t.eventsOf('step_finished');
    expect(finished.map((e) => e.calls?.map((c) => c.status))).toEqual([['denied']]);
    expect((await stateOf(awake, id)).grants).toEqual([]);
  });

  it('a grant the task made, revoked during its run, is asked for again and not handed back to the session', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const id = await newSession(awake, p.dir);
    readOutsideInSteps(outsideFile, ['s1', 's2'], { after_step_ids: ['s1'] });
    const sent = await request(awake).post(`/sessions/${id}/messages`).send({ text: 'read it twice' });
    const t = await TaskDriver.attach(env, sent.body.taskId);
    const first = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: first.requestId, decision: 'allow_session' });
    await t.waitFor('review_requested');
    const [grant] = await until('the session holds the grant', async () => {
      const held = (await stateOf(awake, id)).grants;
      return held.length ? held : undefined;
    });
    expect(grant).toMatchObject({ id: 'g1', path: outsideFile, op: 'read' });

    expect((await request(awake).delete(`/sessions/${id}/grants/g1`)).status).toBe(200);
    await t.handle.signal(reviewSignal, { decision: 'approve' });

    const second = await t.waitFor('permission_requested', (e) => e.requestId !== first.requestId);
    expect(second.reason).toMatch(/was revoked$/);
    await t.handle.signal(permissionSignal, { requestId: second.requestId, decision: 'allow_once' });
    const result = await t.result();
    expect(result).toMatchObject({ status: 'done', newGrants: [] });
    const idle = await until('the session is idle', async () => {
      const st = await stateOf(awake, id);
      return st.currentTaskId === null ? st : undefined;
    });
    expect(idle.grants).toEqual([]);
  });

  it('a grant that lapses while a task waits is not used by that task: its next call on the path asks again', async () => {
    const p = makeProject();
    const outsideFile = path.join(p.outside, 'data.txt');
    writeFileSync(outsideFile, 'outside data');
    const shortGrants = appWith({ grantTtl: 3000 });
    const id = await newSession(shortGrants, p.dir);
    await grantOutsideFile(shortGrants, id, outsideFile);
    const [grant] = (await stateOf(shortGrants, id)).grants;
    readOutsideInSteps(outsideFile, ['s1'], { before_work: true }, false);
    const sent = await request(shortGrants).post(`/sessions/${id}/messages`).send({ text: 'read it later' });
    const t = await TaskDriver.attach(env, sent.body.taskId);
    await t.waitFor('review_requested');
    expect((await t.handle.query(stateQuery)).status).toBe('awaiting_review');

    // The task holds the review until the grant it started with has lapsed.
    await until('the grant has lapsed', () => (Date.now() > Date.parse(grant.expiresAt) + 100 ? true : undefined));
    await t.handle.signal(reviewSignal, { decision: 'approve' });

    const ask = await t.waitFor('permission_requested');
    expect(ask.reason).toBe(`outside the project directory; the grant for the session lapsed at ${grant.expiresAt}`);
    await t.handle.signal(permissionSignal, { requestId: ask.requestId, decision: 'deny' });
    expect((await t.result()).status).toBe('failed');
  });

  it('a session with more events than a run carries: every reader gets them all once, from its earlier runs', async () => {
    const p = makeProject();
    const sleepy = appWith({ idle: 3000 });
    const id = await newSession(sleepy, p.dir);
    // Each setting that changes is a `context` event; the session may sleep and wake on the way.
    while ((await stateOf(sleepy, id)).lastSeq < CARRIED_EVENTS + 60) {
      const sent = await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          request(sleepy)
            .patch(`/sessions/${id}`)
            .send({ toolAccess: j % 2 ? 'full' : 'read_only' })
        )
      );
      expect(sent.map((r) => r.status)).toEqual(sent.map(() => 200));
    }
    // Once more, woken from sleep: the run it wakes into is handed only the newest events.
    await asleep(id);
    expect((await request(sleepy).patch(`/sessions/${id}`).send({ network: 'on' })).status).toBe(200);
    await asleep(id);
    const state = await stateOf(awake, id);
    expect(state.earlierRuns.length).toBeGreaterThanOrEqual(1);
    // The run it went to sleep in holds only the newest events.
    const latest = await handleOf(id).query(eventsQuery, { after: 0 });
    expect(latest[0].seq).toBeGreaterThan(1);

    // A reader from the start (an API with nothing in memory) gets every event once; so does one resuming early.
    const fresh = appWith({});
    const all = (await request(fresh).get(`/sessions/${id}/events?after=0`)).body.events as KleaEvent[];
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: state.lastSeq }, (_, i) => i + 1));
    expect(all.slice(-latest.length)).toEqual(latest);
    const resumed = (await request(appWith({})).get(`/sessions/${id}/events?after=10`)).body.events as KleaEvent[];
    expect(resumed).toEqual(all.slice(10));
    // Still asleep: reading woke nothing.
    expect((await handleOf(id).describe()).status.name).toBe('COMPLETED');
  }, 120_000);

  it('a session or task past the namespace retention answers 410 with why; an unknown one 404', async () => {
    const p = makeProject();
    // A session made long ago (its id says when), whose runs Temporal has since removed, as retention does.
    const old = newSessionId(randomUUID(), Date.now() - 400 * 86_400_000);
    const s = await SessionDriver.start(env, p.dir, { sessionId: old });
    await s.state();
    await s.handle.terminate('retention test');
    await env.client.workflowService.deleteWorkflowExecution({
      namespace: env.config.temporal.namespace,
      workflowExecution: { workflowId: `session-${old}` },
    });
    // Temporal deletes in the background (its own task queue): on a busy machine that takes a while.
    await until(
      'the run is removed',
      async () => {
        try {
          await s.handle.describe();
          return undefined;
        } catch {
          return true;
        }
      },
      150_000
    );

    const session = await request(awake).get(`/sessions/${old}`);
    const taskOf = await request(awake).get(`/tasks/task-${old}-1`);
    const message = await request(awake).post(`/sessions/${old}/messages`).send({ text: 'hi' });
    const unknown = await request(awake).get(`/sessions/${newSessionId(randomUUID())}`);

    expect([session.status, session.body.error.code]).toEqual([410, 'gone']);
    expect(session.body.error.message).toMatch(
      new RegExp(`^session "${old}" is no longer kept: Temporal keeps a closed session or task for [0-9.]+ day`)
    );
    expect([taskOf.status, taskOf.body.error.code]).toEqual([410, 'gone']);
    expect(message.status).toBe(410);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
  }, 180_000);
});
