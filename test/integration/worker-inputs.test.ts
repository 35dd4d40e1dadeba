/**
 * The worker checks its own inputs, whoever started the workflow: a session or task started straight from a
 * Temporal client with a project directory outside `project.allowed_roots` ends at once and runs no tool, and
 * grants in an input that no session handed over open nothing. And /healthz tells a caller without the token only
 * whether the service is up.
 */
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
