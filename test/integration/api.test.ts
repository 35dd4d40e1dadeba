import request from 'supertest';
import type { Express } from 'express';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { FakeModel } from '../support/fake-model';
import { startTestEnv, testConfig, type TestEnv } from '../support/harness';

describe('API on a real Temporal server', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;

  beforeAll(async () => {
    fake = await FakeModel.start();
    env = await startTestEnv({ fakeModel: fake, name: 'api', overrides: { project: { dir: '/tmp' } } });
    app = createApp({ client: env.client, config: env.config });
  });
  afterAll(async () => {
    await env?.shutdown();
    await fake?.close();
  });

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

  it('GET /healthz says when Temporal is unreachable, without hanging', async () => {
    const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: '1s' });
    const unreachable = createApp({ client: new Client({ connection }), config: testConfig({ taskQueue: 'x' }) });
    const res = await request(unreachable).get('/healthz');
    expect(res.status).toBe(503);
    expect(res.body.temporal.status).toBe('unreachable');
    expect(res.body.model).toMatchObject({ status: 'not_configured', hint: expect.stringContaining('OPENAI_API_KEY') });
  });

  it('POST /tasks starts a task whose chat answer can be read back', async () => {
    fake.on('route_request', { call: { route: 'chat', reply: 'Hi from the API test.' } });
    const created = await request(app).post('/tasks').send({ prompt: 'hello' });
    expect(created.status).toBe(201);
    expect(created.body.taskId).toMatch(new RegExp(`^task-${created.body.sessionId}-1$`));
    expect(created.body.temporalUiUrl).toContain(`/workflows/${created.body.taskId}`);
    await env.client.workflow.getHandle(created.body.taskId).result();

    const state = await request(app).get(`/tasks/${created.body.taskId}`);
    expect(state.status).toBe(200);
    expect(state.body).toMatchObject({ status: 'done', answer: 'Hi from the API test.' });
    const events = await request(app).get(`/tasks/${created.body.taskId}/events?after=1`);
    expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(['answer', 'status']);
  });

  it('gives the next free task number within a session', async () => {
    fake.always('route_request', { call: { route: 'chat', reply: 'ok' } });
    const a = await request(app).post('/tasks').send({ prompt: 'one', sessionId: 'api-seq' });
    const b = await request(app).post('/tasks').send({ prompt: 'two', sessionId: 'api-seq' });
    expect([a.body.taskId, b.body.taskId]).toEqual(['task-api-seq-1', 'task-api-seq-2']);
    await env.client.workflow.getHandle(b.body.taskId).result();
    await env.client.workflow.getHandle(a.body.taskId).result();
    fake.reset();
  });

  it('answers bad input with 400 naming the field and why', async () => {
    const empty = await request(app).post('/tasks').send({ prompt: '   ' });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/^body\.prompt: /),
    });

    const unknown = await request(app).post('/tasks').send({ prompt: 'x', colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details).toEqual([{ path: 'body.colour', message: 'unknown field' }]);

    const badMode = await request(app).post('/tasks').send({ prompt: 'x', mode: 'poetic' });
    expect(badMode.body.error.message).toMatch(/^body\.mode: /);

    const notJson = await request(app).post('/tasks').set('content-type', 'application/json').send('{"prompt": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('invalid_json');
  });

  it('refuses a projectDir outside the allowed roots', async () => {
    const res = await request(app).post('/tasks').send({ prompt: 'x', projectDir: '/etc' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^body\.projectDir: must lie under an allowed project root/);
  });

  it('404s unknown tasks and unknown routes in the JSON error format', async () => {
    const task = await request(app).get('/tasks/task-nobody-1');
    expect(task.status).toBe(404);
    expect(task.body).toEqual({ error: { code: 'not_found', message: 'no task with id "task-nobody-1"' } });
    const route = await request(app).get('/nowhere');
    expect(route.status).toBe(404);
    expect(route.body.error.code).toBe('not_found');
  });

  describe('with KLEA_API_TOKEN', () => {
    const token = 'a-long-enough-secret-token';
    let secured: Express;
    beforeAll(() => {
      secured = createApp({ client: env.client, config: { ...env.config, api: { ...env.config.api, token } } });
    });

    it('keeps /healthz open', async () => {
      expect((await request(secured).get('/healthz')).status).toBe(200);
    });

    it('requires the bearer token everywhere else', async () => {
      const none = await request(secured).get('/openapi.json');
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe('unauthorized');
      const wrong = await request(secured).get('/openapi.json').set('authorization', 'Bearer nope');
      expect(wrong.status).toBe(401);
      const right = await request(secured).get('/openapi.json').set('authorization', `Bearer ${token}`);
      expect(right.status).toBe(200);
      const post = await request(secured).post('/tasks').send({ prompt: 'x' });
      expect(post.status).toBe(401);
    });
  });
});
