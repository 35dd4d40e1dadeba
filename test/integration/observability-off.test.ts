/**
 * With the OpenTelemetry variables and `worker.metrics_address` unset (the defaults), nothing is exported and
 * nothing listens: no tracer provider, no metrics server; the API's GET /metrics is a route of the app itself.
 */
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../api/app';
import { currentTracing, startTracing } from '../../runtime/tracing';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';

const OTEL_VARS = Object.keys(process.env).filter((k) => k.startsWith('OTEL_'));

/** TCP servers listening in this process (Node's own handles). */
const tcpServers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;

describe('with the variables unset', () => {
  let env: TestEnv;
  let app: Express;
  const saved = OTEL_VARS.map((k) => [k, process.env[k]] as const);
  beforeAll(() => OTEL_VARS.forEach((k) => delete process.env[k]));
  afterAll(() => saved.forEach(([k, v]) => (v === undefined ? delete process.env[k] : (process.env[k] = v))));
  let started: ReturnType<typeof startTracing> | 'not called' = 'not called';
  useFakeModelEnv({ name: 'otel-off', tracing: () => (started = startTracing('klea-test')) }, (_f, e) => {
    env = e;
    app = createApp({ client: env.client, config: env.config });
  });

  it('nothing is exported and nothing listens', async () => {
    expect(started).toBeUndefined();
    expect(currentTracing()).toBeUndefined();
    expect(env.config.worker.metrics_address).toBeNull();
    expect(env.metricsAddress()).toBeUndefined();
    // A worker started with these settings opens no listener of its own.
    await env.stopWorker();
    const before = tcpServers();
    await env.restartWorker();
    expect(env.metricsAddress()).toBeUndefined();
    expect(tcpServers()).toBe(before);
    // The API's /metrics is a route of the app itself (no listener of its own).
    expect((await request(app).get('/metrics')).status).toBe(200);
  });
});
