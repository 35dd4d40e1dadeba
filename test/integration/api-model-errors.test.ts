/**
 * A message the model cannot route is the model's failure, and the API says so: 502 `model_error` with the
 * server's message when the model answers with an error, 503 `model_unavailable` when it cannot be reached.
 * Never 409, which is for decisions.
 */
import request from 'supertest';
import { createApp } from '../../api/app';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';

async function newSession(env: TestEnv) {
  const app = createApp({ client: env.client, config: env.config });
  const res = await request(app).post('/sessions').send({});
  expect(res.status).toBe(201);
  return { app, sessionId: res.body.sessionId as string };
}

describe('model failures over the API', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'api-model' }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a model that answers with errors: 502 model_error with its message', async () => {
    fake.always('route_request', { status: 500, message: 'the model is down' });
    const { app, sessionId } = await newSession(env);
    const res = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'hello' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('model_error');
    expect(res.body.error.message).toMatch(/could not route the message: .*the model is down/);
    fake.reset();
  }, 120_000);

  it('a model that refuses the key: 502 saying to check the key', async () => {
    fake.always('route_request', { status: 401, message: 'invalid api key' });
    const { app, sessionId } = await newSession(env);
    const res = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'hello' });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toMatch(/check the model key: OPENAI_API_KEY or model\.api_key/);
    fake.reset();
  }, 120_000);
});

describe('an unreachable model over the API', () => {
  let env: TestEnv;
  // A port nothing listens on: every connection is refused.
  useFakeModelEnv({ name: 'api-nomodel', overrides: { model: { base_url: 'http://127.0.0.1:9/v1' } } }, (_f, e) => {
    env = e;
  });

  it('503 model_unavailable with Retry-After', async () => {
    const { app, sessionId } = await newSession(env);
    const res = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'hello' });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('model_unavailable');
    expect(res.headers['retry-after']).toBe('5');
  }, 120_000);
});

describe('a model that hangs while routing', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'api-hang', overrides: { model: { route_timeout_ms: 1500 } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('is given model.route_timeout_ms, then the message is answered 503 model_unavailable saying so', async () => {
    fake.always('route_request', { content: 'never mind', delayMs: 30_000 });
    const { app, sessionId } = await newSession(env);
    const began = Date.now();
    const res = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'hello' });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('model_unavailable');
    expect(res.body.error.message).toBe(
      'could not route the message: the model did not answer within 1.5 s (model.route_timeout_ms)'
    );
    // Bounded by the setting, not by the model's own 120 s timeout (generous: this machine is shared).
    expect(Date.now() - began).toBeLessThan(20_000);
    // The session goes on: the next message is routed as usual.
    fake.reset();
    fake.on('route_request', { call: { route: 'chat', reply: 'Hi again' } });
    const next = await request(app).post(`/sessions/${sessionId}/messages`).send({ text: 'hello again' });
    expect(next.body).toMatchObject({ kind: 'chat', reply: 'Hi again' });
  }, 120_000);
});
