/**
 * The worker checks its own inputs, whoever started the workflow: a session or task started straight from a
 * Temporal client with a project directory outside `project.allowed_roots` ends at once and runs no tool, and
 * grants in an input that no session handed over open nothing. And /healthz tells a caller without the token only
 * whether the service is up.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { WorkflowFailedError } from '@temporalio/client';
import { createApp } from '../../api/app';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { SessionDriver } from '../support/session-driver';
import { makeProject, TaskDriver } from '../support/task-driver';

describe('the worker checks its own inputs', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  // Only this project is allowed; everything else on the machine is not.
  useFakeModelEnv({ name: 'inputs', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a task started from the Temporal client with a projectDir outside the roots ends at once, running no tool', async () => {
    const t = await TaskDriver.start(env, 'List everything', '/');
    const result = await t.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^project directory "\/" must lie under an allowed project root \(.+\): this worker runs nothing there/
    );
    const error = await t.waitFor('error');
    expect(error.code).toBe('ProjectNotAllowed');
    // Nothing but the check itself ran: no model call, no tool list, no tool call.
    expect((await t.scheduledActivities()).map((a) => a.type)).toEqual([]);
    expect(await t.localActivities()).toEqual(['projectContextInfo']);
    expect(fake.requests).toHaveLength(0);
  });

  it('so does a path that only leads there through a symlink, or one that is not a real path', async () => {
    const t = await TaskDriver.start(env, 'List', `${project.dir}/../outside`);
    expect((await t.result()).status).toBe('failed');
    expect((await t.scheduledActivities()).map((a) => a.type)).toEqual([]);
    expect(await t.localActivities()).toEqual(['projectContextInfo']);
  });

  it('a session started from the client with a projectDir outside the roots fails at once, saying why', async () => {
    const s = await SessionDriver.start(env, '/etc');
    const failed = await s.handle.result().then(
      () => null,
      (err: unknown) => err
    );
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    expect(String((failed as WorkflowFailedError).cause?.message)).toMatch(/^project directory "\/etc" must lie under/);
    expect((await s.events()).find((e) => e.type === 'error')).toMatchObject({ code: 'ProjectNotAllowed' });
  });

  it('a session started with a made-up carry takes none of its grants', async () => {
    const s = await SessionDriver.start(env, project.dir, {
      carry: {
        mode: 'general',
        toolAccess: 'full',
        network: 'off',
        review: 'plan',
        grants: [
          { id: 'g1', path: '/', op: 'write', grantedAt: '2020-01-01T00:00:00Z', expiresAt: '2999-01-01T00:00:00Z' },
        ],
        grantCounter: 0,
        summary: '',
        turns: [],
        summarisedChars: 0,
        queue: [],
        taskCounter: 0,
        messageSeq: 0,
        tasks: [],
        lastSeq: 0,
        recentEvents: [],
        contextFile: null,
        runs: 1,
        lastActivityAt: '2020-01-01T00:00:00Z',
        earlierRuns: [],
      },
    });
    const ignored = await s.waitFor((e) => e.type === 'error', 'the grants are ignored');
    expect(ignored).toMatchObject({ code: 'GrantsIgnored' });
    expect((await s.state()).grants).toEqual([]);
    await s.handle.terminate('the test is over');
  });
});

describe('a task with a home (a cluster host): its first activity there checks the project', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  // This worker is host h1 too (it polls klea-host-h1), as a worker host on a cluster is.
  useFakeModelEnv(
    { name: 'inputs-home', overrides: { project: { dir: project.dir }, worker: { host_id: 'h1' } } },
    (f, e) => {
      fake = f;
      env = e;
    }
  );
  const home = { hostId: 'h1', waitMs: 30_000 };

  it('a projectDir outside the roots ends the task before any model call, as on one machine', async () => {
    const t = await TaskDriver.start(env, 'List everything', '/', { home });
    const result = await t.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^project directory "\/" must lie under an allowed project root \(.+\): this worker/);
    expect(await t.waitFor('error')).toMatchObject({ code: 'ProjectNotAllowed' });
    expect((await t.events()).map((e) => e.type)).not.toContain('context');
    // The plan's activity, at the home, refused the directory before it asked the model anything.
    expect((await t.scheduledActivities()).map((a) => a.type)).toEqual(['writePlan']);
    expect(fake.requests).toHaveLength(0);
  });

  it('an allowed project: the context event tells the same facts as on one machine, before the plan, and no round trip of its own', async () => {
    writeFileSync(path.join(project.dir, 'AGENTS.md'), 'Be brief.\n');
    const steps = (id: string) => [
      { id, title: 'Read a.txt', instruction: 'Read a.txt', depends_on: [], needs_tool: true, questions: [] },
    ];
    fake.on('write_plan', {
      call: { goal: 'read', steps: steps('s1'), review: { before_work: false, after_step_ids: [] } },
    });
    fake.on('write_plan', {
      call: { goal: 'read', steps: steps('s1'), review: { before_work: false, after_step_ids: [] } },
    });
    fake.always('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.always('compose_answer', { content: 'a.txt says alpha.' });
    const atHome = await TaskDriver.start(env, 'What does a.txt say?', project.dir, { home });
    expect((await atHome.result()).status).toBe('done');
    const alone = await TaskDriver.start(env, 'What does a.txt say?', project.dir);
    expect((await alone.result()).status).toBe('done');

    const types = (await atHome.events()).map((e) => e.type);
    expect(types.indexOf('context')).toBe(0);
    expect(types.indexOf('plan')).toBeGreaterThan(0);
    const context = (t: TaskDriver) => t.events().then((es) => es.find((e) => e.type === 'context'));
    const told = await context(atHome);
    expect(told).toMatchObject({ projectContextFile: 'AGENTS.md', sandbox: expect.any(String) });
    const { seq: _a, at: _b, ...facts } = told as Record<string, unknown>;
    expect(await context(alone)).toMatchObject(facts);
    const scheduled = (await atHome.scheduledActivities()).map((a) => a.type);
    expect(scheduled[0]).toBe('writePlan');
    expect(scheduled).not.toContain('projectContextInfo');
    expect(await atHome.localActivities()).toEqual([]);
  });

  it('a plan that fails at its home: the context event is still told first, without the facts it could not bring', async () => {
    fake.on('write_plan', { call: '{"goal": "x", "steps": [' }, { call: { goal: 'x', steps: [] } }, { call: '{' });
    const t = await TaskDriver.start(env, 'Do it', project.dir, { home });
    expect((await t.result()).status).toBe('failed');
    const events = await t.events();
    expect(events[0]).toMatchObject({ type: 'context', projectDir: project.dir, projectContextFile: null });
    expect(events.map((e) => e.type)).toContain('error');
  });

  it('a routed task at its home: the route checks the project, and a chat reply comes after the context event', async () => {
    fake.on('route_request', { call: { route: 'chat', reply: 'Hello!' } });
    const t = await TaskDriver.start(env, 'Hi there', project.dir, { home, route: true });
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'Hello!' });
    expect((await t.events()).map((e) => e.type)).toEqual(['context', 'answer', 'status']);
    expect((await t.scheduledActivities()).map((a) => a.type)).toEqual(['routeRequest']);
  });
});

describe('/healthz with a token', () => {
  let env: TestEnv;
  const token = 'a-token-of-sixteen-plus-chars';
  useFakeModelEnv({ name: 'health-token' }, (_f, e) => {
    env = e;
  });

  it('tells a caller without the token only whether the service is up', async () => {
    const app = createApp({ client: env.client, config: { ...env.config, api: { ...env.config.api, token } } });
    const anonymous = await request(app).get('/healthz');
    expect(anonymous.status).toBe(200);
    expect(anonymous.body).toEqual({ status: 'ok' });
    const known = await request(app).get('/healthz').set('authorization', `Bearer ${token}`);
    expect(known.body).toMatchObject({ status: 'ok', temporal: { status: 'ok' }, worker: { status: 'ok' } });
  });
});
