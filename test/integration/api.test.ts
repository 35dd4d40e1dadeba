/** Every API route on a real Temporal server: success, each error status, auth on and off, SSE resume, OpenAPI. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createApp } from '../../api/app';
import { loadConfig } from '../../runtime/config';
import type { FakeModel } from '../support/fake-model';
import { createFrameParser } from '../../web/sse';
import { testConfig, type TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step } from '../support/task-driver';
import { until } from '../support/until';

describe('API', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  useFakeModelEnv({ name: 'api', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
    app = createApp({ client: env.client, config: env.config, ssePollMs: 50 });
  });

  async function waitTask(taskId: string, pred: (s: Record<string, unknown>) => boolean, ms = 20_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = await request(app).get(`/tasks/${taskId}`);
      if (res.status === 200 && pred(res.body)) return res.body;
      if (Date.now() > deadline)
        throw new Error(`task ${taskId} never got there: ${JSON.stringify(res.body).slice(0, 500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  describe('health and the document', () => {
    it('GET /healthz reports temporal ok, a polling worker and the model', async () => {
      const res = await request(app).get('/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'ok',
        temporal: { status: 'ok' },
        worker: { status: 'ok', taskQueue: env.taskQueue },
        model: { status: 'configured', name: 'fake-model' },
      });
    });

    it('GET /healthz says when no worker polls the task queue', async () => {
      const lonely = createApp({
        client: env.client,
        config: { ...env.config, temporal: { ...env.config.temporal, task_queue: 'nobody-polls-this' } },
      });
      const res = await request(lonely).get('/healthz');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({
        status: 'degraded',
        temporal: { status: 'ok' },
        worker: { status: 'none', pollers: 0 },
      });
    });

    it('GET /healthz sees a worker that stopped as gone at once, not after its last poll ages out', async () => {
      const queue = `stops-${Date.now()}`;
      const connection = await NativeConnection.connect({ address: env.config.temporal.address });
      const worker = await Worker.create({
        connection,
        taskQueue: queue,
        workflowBundle: { codePath: process.env.KLEA_TEST_WORKFLOW_BUNDLE! },
        activities: { noop: async () => 0 },
      });
      const running = worker.run();
      const there = createApp({
        client: env.client,
        config: { ...env.config, temporal: { ...env.config.temporal, task_queue: queue } },
      });
      // Control: while it runs, it is there.
      await until('the worker seen', async () =>
        (await request(there).get('/healthz')).status === 200 ? true : undefined
      );
      worker.shutdown();
      await running;
      await connection.close();
      // Its poll is listed for a minute more; its heartbeat said it stopped.
      const res = await request(there).get('/healthz');
      expect(res.status).toBe(503);
      expect(res.body.worker).toMatchObject({ status: 'none', pollers: 0 });
    });

    it('GET /healthz says when Temporal is unreachable, without hanging', async () => {
      const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: '1s' });
      const unreachable = createApp({ client: new Client({ connection }), config: testConfig({ taskQueue: 'x' }) });
      const res = await request(unreachable).get('/healthz');
      expect(res.status).toBe(503);
      expect(res.body.temporal.status).toBe('unreachable');
      expect(res.body.model).toMatchObject({
        status: 'not_configured',
        hint: expect.stringContaining('OPENAI_API_KEY'),
      });
    });

    it('GET /openapi.json is valid OpenAPI 3 and lists exactly the routes the app serves', async () => {
      const res = await request(app).get('/openapi.json');
      expect(res.status).toBe(200);
      await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toBeDefined();
      const documented = Object.entries(res.body.paths as Record<string, Record<string, unknown>>)
        .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`))
        .sort();
      const router = (
        app as unknown as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }
      ).router;
      const served = router.stack
        .flatMap(
          (layer) =>
            ((layer as unknown as { handle?: { stack?: unknown[] } }).handle?.stack ?? [layer]) as typeof router.stack
        )
        .filter((l) => l.route)
        .flatMap((l) => Object.keys(l.route!.methods).map((m) => `${m.toUpperCase()} ${l.route!.path}`))
        .sort();
      expect(served).toEqual(documented);
      expect(documented).toEqual(
        expect.arrayContaining([
          'GET /healthz',
          'POST /sessions',
          'GET /sessions/:id',
          'POST /sessions/:id/messages',
          'PATCH /sessions/:id',
          'GET /sessions/:id/events',
          'POST /tasks',
          'GET /tasks/:id',
          'GET /tasks/:id/events',
          'POST /tasks/:id/review',
          'POST /tasks/:id/clarify',
          'POST /tasks/:id/permissions',
          'POST /tasks/:id/cancel',
          'GET /openapi.json',
          'GET /',
        ])
      );
    });
  });

  describe('other sites', () => {
    it('a Host the API does not serve (a DNS name rebound to this machine) gets 403, on every route', async () => {
      for (const r of [request(app).get('/healthz'), request(app).get('/'), request(app).post('/sessions').send({})]) {
        const res = await r.set('host', 'evil.example:8080');
        expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'forbidden_host' });
        expect(res.body.error.message).toMatch(/does not serve host "evil\.example:8080".*api\.allowed_hosts/);
      }
      // A name the operator allowed is served.
      const named = createApp({
        client: env.client,
        config: { ...env.config, api: { ...env.config.api, allowed_hosts: ['klea.internal'] } },
      });
      expect((await request(named).get('/healthz').set('host', 'klea.internal:8080')).status).toBe(200);
    });

    it("a change asked from another site's page (Origin) gets 403; the API's own page and no Origin pass", async () => {
      const foreign = await request(app).post('/sessions').set('origin', 'http://evil.example').send({});
      expect({ status: foreign.status, code: foreign.body.error?.code }).toEqual({
        status: 403,
        code: 'forbidden_origin',
      });
      const sessionsBefore = foreign.body.sessionId;
      expect(sessionsBefore).toBeUndefined();
      // The page the API serves at http://127.0.0.1:8080 sends its own origin.
      const ownRes = await request(app)
        .post('/sessions')
        .set('host', '127.0.0.1:8080')
        .set('origin', 'http://127.0.0.1:8080')
        .send({});
      expect(ownRes.status).toBe(201);
      // Reading is not a change: a GET with a foreign Origin is answered (the browser keeps it from the page).
      expect((await request(app).get('/healthz').set('origin', 'http://evil.example')).status).toBe(200);
    });

    it('a POST or PATCH that is not JSON (a cross-site form, text/plain) gets 415 and changes nothing', async () => {
      const form = await request(app).post('/sessions').set('content-type', 'text/plain').send('{}');
      expect({ status: form.status, code: form.body.error?.code }).toEqual({
        status: 415,
        code: 'unsupported_media_type',
      });
      expect(form.body.error.message).toBe(
        'POST /sessions takes a JSON body: send content-type: application/json (not text/plain)'
      );
      const empty = await request(app).post('/sessions');
      expect(empty.status).toBe(415);
      const patch = await request(app)
        .patch('/sessions/s-00000000')
        .set('content-type', 'application/x-www-form-urlencoded')
        .send('mode=general');
      expect(patch.status).toBe(415);
      // As the README's curl does it.
      const curl = await request(app)
        .post('/sessions')
        .set('content-type', 'application/json; charset=utf-8')
        .send('{}');
      expect(curl.status).toBe(201);
    });
  });

  describe('sessions', () => {
    it('create, chat, read state, change settings, read events', async () => {
      const created = await request(app).post('/sessions').send({});
      expect(created.status).toBe(201);
      const id = created.body.sessionId;
      expect(created.body.temporalUiUrl).toContain(`/workflows/session-${id}`);

      fake.on('route_request', { call: { route: 'chat', reply: 'Hello from Klea.' } });
      const msg = await request(app).post(`/sessions/${id}/messages`).send({ text: 'hi' });
      expect(msg.status).toBe(200);
      expect(msg.body).toEqual({ kind: 'chat', reply: 'Hello from Klea.' });

      const help = await request(app).post(`/sessions/${id}/messages`).send({ text: '/help' });
      expect(help.body.kind).toBe('command');

      const patched = await request(app).patch(`/sessions/${id}`).send({ toolAccess: 'read_only' });
      expect(patched.status).toBe(200);
      const state = await request(app).get(`/sessions/${id}`);
      expect(state.status).toBe(200);
      expect(state.body).toMatchObject({ sessionId: id, toolAccess: 'read_only', projectDir: project.dir });
      expect(state.body.commands.map((c: { name: string }) => c.name)).toEqual(['/help', '/mode', '/compact', '/init']);

      const events = await request(app).get(`/sessions/${id}/events?after=0`);
      expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(['context', 'answer', 'context']);
      expect(events.body.events[2]).toMatchObject({ toolAccess: 'read_only' });
    });

    it('memory thresholds from klea.yaml reach the session', async () => {
      const dirOf = makeProject();
      const yamlFile = path.join(dirOf.root, 'klea.yaml');
      writeFileSync(
        yamlFile,
        'general:\n  memory:\n    summarisation_threshold_chars: 1234\n    num_history_chars: 567\n'
      );
      const { config } = loadConfig({ KLEA_CONFIG: yamlFile }, dirOf.root);
      const custom = createApp({ client: env.client, config: { ...env.config, general: config.general } });
      const id = (await request(custom).post('/sessions').send({})).body.sessionId;
      const state = await request(custom).get(`/sessions/${id}`);
      expect(state.body.memory.settings).toEqual({ summarisationThresholdChars: 1234, numHistoryChars: 567 });
    });

    it('validates bodies: 400 names the field; unknown fields are refused; PATCH needs something to change', async () => {
      const id = (await request(app).post('/sessions').send({})).body.sessionId;
      const empty = await request(app).post(`/sessions/${id}/messages`).send({ text: '  ' });
      expect(empty.status).toBe(400);
      expect(empty.body.error.message).toMatch(/^body\.text: /);
      const extra = await request(app).post('/sessions').send({ colour: 'red' });
      expect(extra.body.error.details).toEqual([{ path: 'body.colour', message: 'unknown field' }]);
      const nothing = await request(app).patch(`/sessions/${id}`).send({});
      expect(nothing.status).toBe(400);
      expect(nothing.body.error.message).toMatch(/give mode, toolAccess or network/);
      const badId = await request(app).get('/sessions/bad id!');
      expect(badId.status).toBe(400);
    });

    it('404 for a session that does not exist; 409 for one that has ended', async () => {
      for (const r of [
        request(app).get('/sessions/nope'),
        request(app).post('/sessions/nope/messages').send({ text: 'hi' }),
        request(app).patch('/sessions/nope').send({ mode: 'general' }),
        request(app).get('/sessions/nope/events?after=0'),
      ]) {
        const res = await r;
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      const id = (await request(app).post('/sessions').send({})).body.sessionId;
      await env.client.workflow.getHandle(`session-${id}`).terminate('closing for the test');
      const closed = await request(app).post(`/sessions/${id}/messages`).send({ text: 'hi' });
      expect(closed.status).toBe(409);
      expect((await request(app).patch(`/sessions/${id}`).send({ mode: 'general' })).status).toBe(409);
    });

    it('refuses a projectDir outside the allowed roots, symlinks included', async () => {
      const res = await request(app).post('/sessions').send({ projectDir: '/etc' });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^body\.projectDir: must lie under an allowed project root/);
      mkdirSync(path.join(project.dir, 'sub'), { recursive: true });
      symlinkSync(project.outside, path.join(project.dir, 'sneaky'));
      expect(
        (
          await request(app)
            .post('/sessions')
            .send({ projectDir: path.join(project.dir, 'sneaky') })
        ).status
      ).toBe(400);
      expect(
        (
          await request(app)
            .post('/sessions')
            .send({ projectDir: path.join(project.dir, 'sub') })
        ).status
      ).toBe(201);
      // Outside the roots, a missing directory reads like any other, so the API cannot be used to probe the disk.
      expect((await request(app).post('/sessions').send({ projectDir: '/no/such/dir' })).body.error.message).toMatch(
        /^body\.projectDir: must lie under an allowed project root/
      );
    });
  });

  describe('tasks', () => {
    it('POST /tasks plans without routing; review, permissions and answer over REST', async () => {
      const canary = path.join(project.outside, 'secret.txt');
      writeFileSync(canary, 'canary');
      // s2 waits for an answer, so the task is still running when a decision is repeated.
      const steps = [
        step('s1', 'Read the secret'),
        step('s2', 'Report', { needs_tool: false, depends_on: ['s1'], questions: ['Anything else?'] }),
      ];
      fake.on('write_plan', { call: plan(steps, { before_work: true }) });
      fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: canary } }] });
      fake.on('do_step', { content: 'Nothing to report.' });
      fake.on('compose_answer', { content: 'I was not allowed to read it.' });
      const created = await request(app).post('/tasks').send({ prompt: 'Read the secret' });
      expect(created.status).toBe(201);
      const { taskId, sessionId } = created.body;
      expect(taskId).toBe(`task-${sessionId}-1`);

      const reviewing = await waitTask(taskId, (s) => s.status === 'awaiting_review');
      const hash = reviewing.planHash as string;
      const stale = await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: 'stale' });
      expect(stale.status).toBe(409);
      expect(stale.body.error.message).toMatch(/stale decision/);
      expect(
        (await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: hash })).body
      ).toEqual({ accepted: true });
      // A client retrying the same decision is answered again, harmlessly.
      expect(
        (await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: hash })).status
      ).toBe(200);
      expect(
        (await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'revise', planHash: hash })).status
      ).toBe(409);

      const asking = await waitTask(taskId, (s) => s.status === 'awaiting_permission');
      const pending = (
        asking.pending as Array<{ kind: string; requests?: Array<{ requestId: string; path: string }> }>
      ).find((p) => p.kind === 'permission')!;
      expect(pending.requests![0].path).toBe(canary);
      const requestId = pending.requests![0].requestId;
      expect(
        (await request(app).post(`/tasks/${taskId}/permissions`).send({ requestId: 'nope', decision: 'deny' })).status
      ).toBe(409);
      expect(
        (await request(app).post(`/tasks/${taskId}/permissions`).send({ requestId, decision: 'maybe' })).status
      ).toBe(400);
      const decidePermission = (decision: string) =>
        request(app).post(`/tasks/${taskId}/permissions`).send({ requestId, decision });
      expect((await decidePermission('deny')).status).toBe(200);
      await waitTask(taskId, (s) => s.status === 'awaiting_clarification');
      expect((await decidePermission('deny')).status).toBe(200); // a retried decision: harmless
      expect((await decidePermission('allow_once')).status).toBe(409); // a different one: refused
      expect(
        (
          await request(app)
            .post(`/tasks/${taskId}/clarify`)
            .send({ answers: { 'Anything else?': 'no' } })
        ).status
      ).toBe(200);

      const done = await waitTask(taskId, (s) => s.status === 'done');
      // The denied step did not achieve its instruction: the answer says so first, above what the model wrote.
      expect(done).toMatchObject({
        answer: expect.stringMatching(
          /^\*\*Not achieved\*\* \(1 of 2 steps\):\n- s1 .*\n\nI was not allowed to read it\.$/
        ),
        notAchieved: [{ stepId: 's1', reason: expect.stringContaining('denied by the user') }],
        verification: 'unverified',
      });
      expect((await request(app).post(`/tasks/${taskId}/cancel`).send({})).status).toBe(409);
      expect(
        (
          await request(app)
            .post(`/tasks/${taskId}/clarify`)
            .send({ answers: { q: 'a' } })
        ).status
      ).toBe(409);
      const session = await request(app).get(`/sessions/${sessionId}`);
      expect(session.body.tasks).toEqual([taskId]);
    });

    it('clarify and cancel over REST', async () => {
      fake.on('write_plan', { call: plan([step('s1', 'Greet', { needs_tool: false, questions: ['Who?'] })]) });
      const { taskId } = (await request(app).post('/tasks').send({ prompt: 'Greet someone' })).body;
      await waitTask(taskId, (s) => s.status === 'awaiting_clarification');
      expect((await request(app).post(`/tasks/${taskId}/clarify`).send({ answers: {} })).status).toBe(400);
      expect((await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve' })).status).toBe(409);
      fake.on('do_step', { content: 'Hello, Grace.' });
      fake.on('compose_answer', { content: 'Hello, Grace.' });
      expect(
        (
          await request(app)
            .post(`/tasks/${taskId}/clarify`)
            .send({ answers: { 'Who?': 'Grace' } })
        ).status
      ).toBe(200);
      await waitTask(taskId, (s) => s.status === 'done');

      fake.on('write_plan', { call: plan([step('s1', 'x', { needs_tool: false })], { before_work: true }) });
      const second = (await request(app).post('/tasks').send({ prompt: 'Wait for me' })).body.taskId;
      await waitTask(second, (s) => s.status === 'awaiting_review');
      expect((await request(app).post(`/tasks/${second}/cancel`).send({ reason: 'not needed' })).body).toEqual({
        accepted: true,
      });
      expect(await waitTask(second, (s) => s.status === 'cancelled')).toMatchObject({ error: 'not needed' });
    });

    it('404 for unknown tasks and routes, 400 for bad bodies', async () => {
      expect((await request(app).get('/tasks/task-s-nobody00-1')).body).toEqual({
        error: { code: 'not_found', message: 'no task "task-s-nobody00-1"' },
      });
      // An id that is not a task's is answered before Temporal is asked.
      expect((await request(app).get('/tasks/session-s-nobody00')).body).toEqual({
        error: { code: 'not_found', message: 'no task "session-s-nobody00": task ids look like task-s-1a2b3c4d-1' },
      });
      for (const r of [
        request(app).get('/tasks/task-s-nobody00-1/events?after=0'),
        request(app).post('/tasks/task-s-nobody00-1/review').send({ decision: 'approve' }),
        request(app)
          .post('/tasks/task-s-nobody00-1/clarify')
          .send({ answers: { a: 'b' } }),
        request(app).post('/tasks/task-s-nobody00-1/permissions').send({ requestId: 'x', decision: 'deny' }),
        request(app).post('/tasks/task-s-nobody00-1/cancel').send({}),
        request(app).post('/tasks').send({ prompt: 'x', sessionId: 'no-such-session' }),
      ]) {
        expect((await r).status).toBe(404);
      }
      expect((await request(app).get('/nowhere')).status).toBe(404);
      expect((await request(app).post('/tasks').send({ prompt: '' })).body.error.message).toMatch(/^body\.prompt: /);
      expect((await request(app).post('/tasks').send({ prompt: 'x', mode: 'poetic' })).body.error.message).toMatch(
        /^body\.mode: /
      );
      const notJson = await request(app).post('/tasks').set('content-type', 'application/json').send('{"prompt": ');
      expect(notJson.body.error.code).toBe('invalid_json');
      const big = await request(app)
        .post('/tasks')
        .send({ prompt: 'x'.repeat(300 * 1024) });
      expect(big.status).toBe(413);
    });
  });

  describe('server-sent events', () => {
    it('a client that disconnects and reconnects with Last-Event-ID receives every event exactly once', async () => {
      const id = (await request(app).post('/sessions').send({})).body.sessionId;
      const server = http.createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const port = (server.address() as AddressInfo).port;
      const seen: number[] = [];
      const readStream = (lastId: number | null, stopAfter: number) =>
        new Promise<number>((resolve, reject) => {
          const req = http.get(
            {
              host: '127.0.0.1',
              port,
              path: `/sessions/${id}/events`,
              headers: { accept: 'text/event-stream', ...(lastId !== null ? { 'last-event-id': String(lastId) } : {}) },
            },
            (res) => {
              expect(res.headers['content-type']).toMatch(/text\/event-stream/);
              const frames = createFrameParser();
              let last = lastId ?? 0;
              let got = 0;
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => {
                for (const frame of frames.push(chunk)) {
                  if (frame.id === undefined) continue;
                  last = Number(frame.id);
                  seen.push(last);
                  if (++got >= stopAfter) {
                    req.destroy();
                    resolve(last);
                  }
                }
              });
            }
          );
          req.on('error', (e) => (String(e).includes('socket hang up') ? undefined : reject(e)));
        });
      try {
        fake.always('route_request', (r) => ({
          call: { route: 'chat', reply: `echo: ${r.text.split('Latest user message:\n')[1]?.trim()}` },
        }));
        for (let i = 1; i <= 3; i++)
          await request(app)
            .post(`/sessions/${id}/messages`)
            .send({ text: `m${i}` });
        const last = await readStream(null, 2); // context, answer m1: then the client drops
        for (let i = 4; i <= 5; i++)
          await request(app)
            .post(`/sessions/${id}/messages`)
            .send({ text: `m${i}` });
        await readStream(last, 4); // answers m2..m5
        expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
      } finally {
        server.closeAllConnections();
        server.close();
        fake.reset();
      }
    });

    it('?after= returns JSON for clients that poll', async () => {
      const id = (await request(app).post('/sessions').send({})).body.sessionId;
      let res = await request(app).get(`/sessions/${id}/events?after=0`).set('accept', 'text/event-stream');
      for (let i = 0; i < 50 && res.body.events?.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        res = await request(app).get(`/sessions/${id}/events?after=0`).set('accept', 'text/event-stream');
      }
      expect(res.headers['content-type']).toMatch(/json/);
      expect(res.body.events[0]).toMatchObject({ seq: 1, type: 'context' });
    });
  });

  describe('with KLEA_API_TOKEN', () => {
    const token = 'a-long-enough-secret-token';
    let secured: Express;
    beforeAll(() => {
      secured = createApp({ client: env.client, config: { ...env.config, api: { ...env.config.api, token } } });
    });

    it('keeps /healthz and the page open', async () => {
      expect((await request(secured).get('/healthz')).status).toBe(200);
      expect((await request(secured).get('/')).status).toBe(200);
    });

    it('requires the bearer token on every API route', async () => {
      for (const [method, url] of [
        ['get', '/openapi.json'],
        ['post', '/sessions'],
        ['get', '/sessions/x'],
        ['post', '/sessions/x/messages'],
        ['patch', '/sessions/x'],
        ['get', '/sessions/x/events'],
        ['post', '/tasks'],
        ['get', '/tasks/x'],
        ['get', '/tasks/x/events'],
        ['post', '/tasks/x/review'],
        ['post', '/tasks/x/clarify'],
        ['post', '/tasks/x/permissions'],
        ['post', '/tasks/x/cancel'],
      ] as const) {
        const res = await request(secured)[method](url).send({});
        expect([method, url, res.status]).toEqual([method, url, 401]);
        expect(res.body.error.code).toBe('unauthorized');
      }
      expect((await request(secured).get('/openapi.json').set('authorization', 'Bearer nope')).status).toBe(401);
      expect((await request(secured).get('/openapi.json').set('authorization', `Bearer ${token}`)).status).toBe(200);
      expect((await request(secured).post('/sessions').set('authorization', `Bearer ${token}`).send({})).status).toBe(
        201
      );
    });
  });
});
