/**
 * Every bad input gets a clear answer in the API's error shape, never a 500 or a hung request: Temporal down or
 * stuck, no worker, a projectDir that is not a directory, a task's projectDir that is not its session's, a
 * decision for a task that has ended, and a workflow that does not answer what the route asks.
 */
import path from 'node:path';
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import request from 'supertest';
import type { Express } from 'express';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { startDevServer, type DevServer } from '../../runtime/dev-server';
import { findFreePort } from '../../runtime/ports';
import type { FakeModel } from '../support/fake-model';
import type { summarizeMemoryWorkflow } from '../../workflows';
import { startTestEnv, testConfig, uniqueId, type TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step } from '../support/task-driver';
import { until } from '../support/until';
import { startWorkerProcess, workerConfigFile } from '../support/worker-process';

type Res = request.Response;

function expectError(res: Res, status: number, code: string, message?: RegExp) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  if (message) expect(res.body.error.message).toMatch(message);
}

describe('API errors', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  useFakeModelEnv({ name: 'api-errors', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
    app = createApp({ client: env.client, config: env.config });
  });

  const newSession = async (on = app) => {
    const res = await request(on).post('/sessions').send({});
    expect(res.status).toBe(201);
    return res.body.sessionId as string;
  };

  describe('Temporal unreachable or not answering', () => {
    let server: DevServer | undefined;
    afterAll(async () => {
      // A failed test may leave it frozen, and a frozen process ignores SIGTERM until continued.
      if (server && server.process.exitCode === null && server.process.signalCode === null)
        process.kill(server.process.pid!, 'SIGCONT');
      await server?.stop();
    });

    it('every route that calls Temporal answers 503 temporal_unavailable with Retry-After, in seconds', async () => {
      server = await startDevServer({
        port: await findFreePort(),
        httpPort: await findFreePort(),
        metricsPort: await findFreePort(),
      });
      // As the API process connects: lazily, so it starts even when Temporal is down.
      const connection = Connection.lazy({ address: server.address });
      const config = testConfig({ taskQueue: uniqueId('test-down'), overrides: { project: { dir: project.dir } } });
      const own = createApp({
        client: new Client({ connection }),
        config: { ...config, temporal: { ...config.temporal, address: server.address } },
        callTimeoutMs: 1000,
      });
      const sessionId = await newSession(own);
      const taskId = `task-${sessionId}-1`;
      const doc = (await request(own).get('/openapi.json')).body as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      const bodies: Record<string, object> = {
        'POST /sessions': {},
        'POST /sessions/{id}/messages': { text: 'hi' },
        'PATCH /sessions/{id}': { mode: 'general' },
        'POST /tasks': { prompt: 'Say hi', sessionId },
        'POST /tasks/{id}/review': { decision: 'approve' },
        'POST /tasks/{id}/clarify': { answers: { 'Who?': 'Grace' } },
        'POST /tasks/{id}/permissions': { requestId: 'r1', decision: 'deny' },
        'POST /tasks/{id}/cancel': {},
        'POST /tasks/{id}/rewind': { toStep: 's1' },
        'DELETE /sessions/{id}/grants/{grantId}': {},
      };
      /** Query strings a route needs to pass its own checks. */
      const queries: Record<string, string> = { 'GET /tasks/{id}/rewind': '?toStep=s1' };
      // Every operation the document says may answer 503, plus the event streams and /healthz.
      const calls = Object.entries(doc.paths).flatMap(([p, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.responses['503'])
          .flatMap(([method]) => {
            const key = `${method.toUpperCase()} ${p}`;
            const url =
              p.replace('{id}', p.startsWith('/tasks/') ? taskId : sessionId).replace('{grantId}', 'g1') +
              (queries[key] ?? '');
            if (method !== 'get' && !bodies[key]) throw new Error(`no example body for ${key}`);
            const send = (accept?: string) => {
              let r = request(own)[method as 'get' | 'post' | 'patch' | 'delete'](url);
              if (accept) r = r.set('accept', accept);
              return method === 'get' ? r : r.send(bodies[key]);
            };
            return p.endsWith('/events')
              ? [
                  { key: `${key} (JSON)`, send: () => request(own).get(`${url}?after=0`) },
                  { key: `${key} (stream)`, send: () => send('text/event-stream') },
                ]
              : [{ key, send: () => send() }];
          })
      );
      expect(calls.map((c) => c.key)).toEqual(
        expect.arrayContaining(['GET /healthz', 'POST /sessions/{id}/messages', 'POST /tasks/{id}/cancel'])
      );
      const everyRoute = () =>
        Promise.all(
          calls.map(async ({ key, send }) => {
            const started = Date.now();
            const res = await send();
            return { key, res, ms: Date.now() - started };
          })
        );
      const expectAllDown = (answers: Array<{ key: string; res: Res; ms: number }>) => {
        for (const { key, res, ms } of answers) {
          expect([key, res.status, res.headers['retry-after']]).toEqual([key, 503, '5']);
          if (key === 'GET /healthz') expect(res.body.temporal.status).toBe('unreachable');
          else expectError(res, 503, 'temporal_unavailable', /^Temporal \(127\.0\.0\.1:\d+, .*\) is unreachable/);
          expect([key, ms < 10_000]).toEqual([key, true]);
        }
      };

      // Arrange: the server stops answering (its process is frozen: connections open, no replies).
      process.kill(server.process.pid!, 'SIGSTOP');
      // Act + Assert
      expectAllDown(await everyRoute());

      // It comes back: the same app answers again without a restart.
      process.kill(server.process.pid!, 'SIGCONT');
      await until('Temporal answers again', async () => {
        const res = await request(own).patch(`/sessions/${sessionId}`).send({ mode: 'general' });
        return res.status === 200 ? true : undefined;
      });

      // Arrange: the server is gone (nothing listens on its port).
      await server.stop();
      expectAllDown(await everyRoute());
      await connection.close();
    });
  });

  describe('no worker', () => {
    it('a message or task while no worker polls: 503 no_worker at once, and nothing was sent', async () => {
      // Arrange: an app on a task queue nobody polls (yet).
      const taskQueue = uniqueId('test-no-worker');
      const lonely = createApp({
        client: env.client,
        config: { ...env.config, temporal: { ...env.config.temporal, task_queue: taskQueue } },
      });
      const sessionId = await newSession(lonely); // nothing waits for a new session, so it is started

      // Act
      const started = Date.now();
      const answers = {
        message: await request(lonely).post(`/sessions/${sessionId}/messages`).send({ text: 'hi' }),
        taskInSession: await request(lonely).post('/tasks').send({ prompt: 'Say hi', sessionId }),
        taskAlone: await request(lonely).post('/tasks').send({ prompt: 'Say hi' }),
      };
      const elapsed = Date.now() - started;

      // Assert: told at once (no wait for a worker), with the queue named and what to do.
      for (const [what, res] of Object.entries(answers)) {
        expect([what, res.headers['retry-after']]).toEqual([what, '5']);
        expectError(res, 503, 'no_worker', new RegExp(`^no worker is polling task queue "${taskQueue}", so the`));
      }
      expect(answers.message.body.error.message).toMatch(/the message was not sent; start a worker/);
      expect(answers.taskAlone.body.error.message).toMatch(/the task was not sent/);
      expect(elapsed).toBeLessThan(5000);

      // Nothing is left to surprise anyone: once a worker polls, the session has no message and no task, and
      // the task without a session created none.
      const late = await startTestEnv({ fakeModel: fake, taskQueue, overrides: { project: { dir: project.dir } } });
      try {
        const state = await request(lonely).get(`/sessions/${sessionId}`);
        expect(state.status).toBe(200);
        expect(state.body).toMatchObject({ tasks: [], queue: [], memory: { turns: [] } });
        const workflows = await until('the session is listed', async () => {
          const ids: string[] = [];
          for await (const w of env.client.workflow.list({ query: `TaskQueue = "${taskQueue}"` }))
            ids.push(w.workflowId);
          return ids.includes(`session-${sessionId}`) ? ids : undefined;
        });
        expect(workflows).toEqual([`session-${sessionId}`]);

        fake.on('route_request', { call: { route: 'chat', reply: 'Hello.' } });
        const now = await request(lonely).post(`/sessions/${sessionId}/messages`).send({ text: 'hi' });
        expect(now.body).toEqual({ kind: 'chat', reply: 'Hello.' });
      } finally {
        await late.shutdown();
      }
    });

    it('a worker that stopped cleanly: 503 no_worker at once, and nothing is sent', async () => {
      const own = await startTestEnv({
        fakeModel: fake,
        name: 'stopped',
        overrides: { project: { dir: project.dir } },
      });
      try {
        const ownApp = createApp({ client: own.client, config: own.config, acceptTimeoutMs: 1500 });
        const sessionId = await newSession(ownApp);
        await own.stopWorker();
        // It told Temporal it stopped: no longer taken to poll, though its last poll is listed for a minute more.
        expect((await request(ownApp).get('/healthz')).body.worker).toMatchObject({ status: 'none' });
        const message = await request(ownApp)
          .post(`/sessions/${sessionId}/messages`)
          .send({ text: '/mode scientific' });
        expectError(message, 503, 'no_worker', /^no worker is polling task queue/);
      } finally {
        await own.shutdown();
      }
    });

    it('a worker killed moments ago (it still looks alive): 503 no_worker within the bound', async () => {
      // Arrange: a worker process of its own, killed (SIGKILL, no word to Temporal) after the session starts.
      const config = { ...env.config, temporal: { ...env.config.temporal, task_queue: uniqueId('killed') } };
      const file = workerConfigFile(mkdtempSync(path.join(os.tmpdir(), 'klea-killed-')), 'klea', {
        model: { name: config.model.name, base_url: config.model.base_url, api_key: 'k', timeout_ms: 10_000 },
        temporal: { address: config.temporal.address, task_queue: config.temporal.task_queue },
        project: { dir: project.dir },
      });
      let worker = await startWorkerProcess(file);
      try {
        const ownApp = createApp({ client: env.client, config, acceptTimeoutMs: 1500 });
        const sessionId = await newSession(ownApp);
        await worker.kill();
        // Its last heartbeat and its last poll are seconds old: the case the bound is for.
        expect((await request(ownApp).get('/healthz')).body.worker).toMatchObject({ status: 'ok' });

        // Act
        const started = Date.now();
        const message = await request(ownApp)
          .post(`/sessions/${sessionId}/messages`)
          .send({ text: '/mode scientific' });
        const task = await request(ownApp).post('/tasks').send({ prompt: 'Say hi' });
        const elapsed = Date.now() - started;

        // Assert: answered within the bound, saying what becomes of what was sent.
        expectError(message, 503, 'no_worker', /^no worker took the message within 1\.5 s although one polled/);
        expect(message.body.error.message).toMatch(
          /Temporal holds the message in memory only, so a worker that comes back soon may still act on it, or it may be dropped/
        );
        expectError(task, 503, 'no_worker', /^no worker took the task within 1\.5 s .*the new session was stopped/);
        expect(elapsed).toBeLessThan(10_000);

        // What the answers said holds once a worker is back: the session answers again (the message that no worker
        // took may or may not have been acted on: Temporal holds an update it has not handed out in memory only),
        // and the task never starts.
        worker = await startWorkerProcess(file);
        await until('the session answers again', async () => {
          const s = await request(ownApp).get(`/sessions/${sessionId}`);
          return s.status === 200 && ['general', 'scientific'].includes(s.body.mode) ? true : undefined;
        });
        const stopped = await until('the session POST /tasks started is listed as stopped', async () => {
          const runs: Array<{ id: string; status: string }> = [];
          for await (const w of env.client.workflow.list({ query: `TaskQueue = "${config.temporal.task_queue}"` }))
            runs.push({ id: w.workflowId, status: w.status.name });
          return runs.some((w) => w.status === 'TERMINATED') ? runs : undefined;
        });
        expect(stopped.filter((w) => w.id !== `session-${sessionId}`).map((w) => w.status)).toEqual(['TERMINATED']);
        expect(stopped.filter((w) => w.id.startsWith('task-'))).toEqual([]);
      } finally {
        await worker.kill();
      }
    });
  });

  it('a projectDir that is a file, or does not exist: 400 naming the field', async () => {
    const file = path.join(project.dir, 'a.txt');
    const missing = path.join(project.dir, 'no-such-dir');
    for (const [route, extra] of [
      ['/sessions', {}],
      ['/tasks', { prompt: 'Say hi' }],
    ] as const) {
      const isFile = await request(app)
        .post(route)
        .send({ ...extra, projectDir: file });
      expectError(isFile, 400, 'invalid_request', /^body\.projectDir: not a directory: /);
      expect(isFile.body.error.details).toEqual([{ path: 'body.projectDir', message: 'not a directory' }]);
      const relative = await request(app)
        .post(route)
        .send({ ...extra, projectDir: 'a.txt' });
      expectError(relative, 400, 'invalid_request', /^body\.projectDir: not a directory: a\.txt$/);
      const absent = await request(app)
        .post(route)
        .send({ ...extra, projectDir: missing });
      expectError(absent, 400, 'invalid_request', /^body\.projectDir: no such directory: /);
      expect(absent.body.error.details).toEqual([{ path: 'body.projectDir', message: 'no such directory' }]);
    }
  });

  it("POST /tasks with a session and another projectDir: 400; the session's own: accepted", async () => {
    const sub = path.join(project.dir, 'sub');
    mkdirSync(sub, { recursive: true });
    const sessionId = await newSession();

    const other = await request(app).post('/tasks').send({ prompt: 'Say hi', sessionId, projectDir: sub });
    expectError(other, 400, 'invalid_request', new RegExp(`^body\\.projectDir: session "${sessionId}" works in `));
    expect(other.body.error.details).toEqual([
      { path: 'body.projectDir', message: "differs from the session's project directory" },
    ]);

    fake.on('write_plan', { call: plan([step('s1', 'Say hi', { needs_tool: false })], { before_work: true }) });
    const same = await request(app).post('/tasks').send({ prompt: 'Say hi', sessionId, projectDir: project.dir });
    expect(same.status).toBe(201);
    expect(same.body).toMatchObject({ sessionId, taskId: `task-${sessionId}-1` });
    await until('the plan is under review', async () => {
      const s = await request(app).get(`/tasks/${same.body.taskId}`);
      return s.body.status === 'awaiting_review' ? true : undefined;
    });
    expect((await request(app).post(`/tasks/${same.body.taskId}/cancel`).send({})).status).toBe(200);
  });

  it('a decision for a task that has ended: 409 naming its final status', async () => {
    // Arrange: one task done, one cancelled.
    fake.on('write_plan', { call: plan([step('s1', 'Say hi', { needs_tool: false })]) });
    fake.on('do_step', { content: 'Hi.' });
    fake.on('compose_answer', { content: 'Hi.' });
    const done = (await request(app).post('/tasks').send({ prompt: 'Say hi' })).body.taskId as string;
    await env.client.workflow.getHandle(done).result();
    fake.on('write_plan', { call: plan([step('s1', 'Say hi', { needs_tool: false })], { before_work: true }) });
    const cancelled = (await request(app).post('/tasks').send({ prompt: 'Say hi' })).body.taskId as string;
    await until('the plan is under review', async () => {
      const s = await request(app).get(`/tasks/${cancelled}`);
      return s.body.status === 'awaiting_review' ? true : undefined;
    });
    await request(app).post(`/tasks/${cancelled}/cancel`).send({});
    await env.client.workflow.getHandle(cancelled).result();

    for (const [taskId, status] of [
      [done, 'done'],
      [cancelled, 'cancelled'],
    ]) {
      for (const [decision, body] of [
        ['review', { decision: 'approve' }],
        ['clarify', { answers: { 'Who?': 'Grace' } }],
        ['permissions', { requestId: 'r1', decision: 'deny' }],
        ['cancel', {}],
      ] as const) {
        // Act
        const res = await request(app).post(`/tasks/${taskId}/${decision}`).send(body);
        // Assert
        expectError(res, 409, 'conflict');
        expect([decision, res.body.error]).toEqual([
          decision,
          {
            code: 'conflict',
            message: `task "${taskId}" has already completed (status ${status})`,
            details: { status },
          },
        ]);
      }
    }
  });

  it('an id that names no task, or a workflow that does not answer what the route asks: 404', async () => {
    // Arrange: a session, and a workflow of another kind under a task-like id.
    const sessionId = await newSession();
    const other = `task-${uniqueId('s')}-1`;
    fake.on('summarize_memory', { content: 'Nothing yet.' });
    await env.client.workflow.execute<typeof summarizeMemoryWorkflow>('summarizeMemoryWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: other,
      args: [{ summary: '', turns: [{ role: 'user', text: 'hi' }] }],
    });

    // Act + Assert: a session's id where a task is expected, for each decision (updates it does not have).
    for (const [decision, body] of [
      ['review', { decision: 'approve' }],
      ['clarify', { answers: { 'Who?': 'Grace' } }],
      ['permissions', { requestId: 'r1', decision: 'deny' }],
    ] as const) {
      const res = await request(app).post(`/tasks/session-${sessionId}/${decision}`).send(body);
      expectError(res, 404, 'not_found', new RegExp(`^no task "session-${sessionId}": task ids look like task-s-`));
    }
    // ...and a workflow without the task's queries.
    for (const url of [`/tasks/${other}`, `/tasks/${other}/events?after=0`]) {
      const res = await request(app).get(url);
      expectError(res, 404, 'not_found', new RegExp(`^no task "${other}": workflow "${other}" has no "\\w+" query$`));
    }
    const stream = await request(app).get(`/tasks/${other}/events`).set('accept', 'text/event-stream');
    expectError(stream, 404, 'not_found');
  });
});
