/**
 * Payload encryption on a real Temporal dev server: with a key, a task's prompt, plan and tool output are not in
 * its history in plaintext (read with a client that has no codec), the API's codec server gives them back to the
 * Temporal UI and CLI, a worker with another key fails the workflow task saying which key, and the codec routes
 * answer the UI's CORS preflight and require the API's token.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import request from 'supertest';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { Express } from 'express';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createApp } from '../../api/app';
import { dataConverterFor } from '../../runtime/payload-codec';
import { temporalCliPath } from '../../runtime/temporal';
import type { FakeModel } from '../support/fake-model';
import type { taskWorkflow } from '../../workflows';
import { startTestEnv, testConfig, uniqueId, type TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

const run = promisify(execFile);
const b64 = () => randomBytes(32).toString('base64');
const KEY = `k1:${b64()}`;
const TOKEN = 'codec-test-token-0123456789';
const UI_ORIGIN = 'http://127.0.0.1:8233';

// Distinctive strings: each must be findable in plaintext only through the codec.
const PROMPT = 'Summarise the notes about PROMPT-zebra-7741';
const STEP_TEXT = 'Read notes.txt looking for STEP-quokka-2290';
const TOOL_OUTPUT = 'TOOLOUT-narwhal-5318 is the launch code';
const ANSWER = 'The notes say ANSWER-ibis-6602.';

type JsonPayload = { metadata?: Record<string, string>; data?: string };

/** A payload's bytes as text. */
const textOf = (p: { data?: Uint8Array | null }) => Buffer.from(p.data ?? []).toString();

/**
 * What Temporal itself writes as plain JSON beside the codec, each checked to hold no content of the task: the
 * trace context the tracing interceptors put in a header (a W3C traceparent, ids only), and the bookkeeping of a
 * local activity's marker (its type, ids and times; its result goes through the codec like any other).
 */
const TRACE_HEADER = /^\{"traceparent":"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]"(,"tracestate":"[^"]*")?\}$/;
const LOCAL_ACTIVITY_DATA_KEYS = [
  'activity_id',
  'activity_type',
  'attempt',
  'backoff',
  'complete_time',
  'original_schedule_time',
  'seq',
];

/** Every payload in a history, wherever it sits, as Temporal's JSON form (what the UI sends to a codec server). */
function payloadsOf(history: temporal.api.history.v1.IHistory): JsonPayload[] {
  const found: JsonPayload[] = [];
  const walk = (v: unknown): void => {
    if (!v || typeof v !== 'object' || v instanceof Uint8Array) return;
    if (Array.isArray(v)) return v.forEach(walk);
    const o = v as Record<string, unknown>;
    // Search attributes are indexed by Temporal, so no codec touches them; nor does one touch the markers of
    // patched() (the patch's id), which Temporal's core writes itself.
    if ('indexedFields' in o || o.markerName === 'core_patch') return;
    const header = (o.header as { fields?: Record<string, { data?: Uint8Array }> } | undefined)?.fields;
    if (header?.['_tracer-data']) {
      expect(textOf(header['_tracer-data'])).toMatch(TRACE_HEADER);
      const { ['_tracer-data']: _trace, ...rest } = header;
      return walk({ ...o, header: { fields: rest } });
    }
    if (o.markerName === 'core_local_activity') {
      const details = o.details as Record<string, { payloads?: Array<{ data?: Uint8Array }> }>;
      for (const p of details.data?.payloads ?? [])
        expect(Object.keys(JSON.parse(textOf(p)) as object).sort()).toEqual(LOCAL_ACTIVITY_DATA_KEYS);
      const { data: _data, ...rest } = details;
      expect(rest.result?.payloads?.length).toBeGreaterThan(0);
      return walk(rest);
    }
    if (o.metadata && typeof o.metadata === 'object' && 'encoding' in (o.metadata as object)) {
      found.push({
        metadata: Object.fromEntries(
          Object.entries(o.metadata as Record<string, Uint8Array>).map(([k, b]) => [
            k,
            Buffer.from(b).toString('base64'),
          ])
        ),
        data: Buffer.from((o.data as Uint8Array | undefined) ?? []).toString('base64'),
      });
      return;
    }
    Object.values(o).forEach(walk);
  };
  walk(history.events);
  return found;
}

const rawBytes = (history: temporal.api.history.v1.IHistory) =>
  Buffer.from(temporal.api.history.v1.History.encode(history).finish());

describe('payload encryption', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'notes.txt': `${TOOL_OUTPUT}\n` });
  useFakeModelEnv(
    { name: 'codec', overrides: { project: { dir: project.dir }, temporal: { payload_key: KEY, ui_url: UI_ORIGIN } } },
    (f, e) => {
      fake = f;
      env = e;
      app = createApp({ client: env.client, config: env.config });
    }
  );

  it('history holds no prompt, plan or tool output in plaintext; /codec/decode and the CLI give them back', async () => {
    fake.on('write_plan', { call: plan([step('s1', STEP_TEXT, { title: 'Read the notes' })], {}, 'Summarise') });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'notes.txt' } }] });
    fake.on('compose_answer', { content: ANSWER });

    // Through the API, whose client encrypts what it sends and decrypts what it reads.
    const created = await request(app).post('/tasks').send({ prompt: PROMPT });
    expect(created.status).toBe(201);
    const { taskId, sessionId } = created.body as { taskId: string; sessionId: string };
    const deadline = Date.now() + 30_000;
    let state: Record<string, unknown> = {};
    while (state.status !== 'done') {
      if (Date.now() > deadline) throw new Error(`task never finished: ${JSON.stringify(state).slice(0, 500)}`);
      await new Promise((r) => setTimeout(r, 100));
      state = (await request(app).get(`/tasks/${taskId}`)).body;
    }
    expect(state).toMatchObject({ status: 'done', answer: ANSWER });

    // A client without the codec sees only what Temporal stores.
    const plain = new Client({ connection: env.client.connection, namespace: env.config.temporal.namespace });
    const taskHistory = await plain.workflow.getHandle(taskId).fetchHistory();
    const sessionHistory = await plain.workflow.getHandle(`session-${sessionId}`).fetchHistory();
    for (const history of [taskHistory, sessionHistory]) {
      const raw = rawBytes(history);
      for (const secret of [PROMPT, 'PROMPT-zebra-7741', STEP_TEXT, 'STEP-quokka-2290', 'TOOLOUT-narwhal-5318', ANSWER])
        expect(raw.includes(secret)).toBe(false);
      expect(raw.includes('binary/encrypted')).toBe(true);
      // Nothing but the encrypted encoding: no payload slipped past the codec.
      const encodings = new Set(payloadsOf(history).map((p) => Buffer.from(p.metadata!.encoding, 'base64').toString()));
      expect([...encodings]).toEqual(['binary/encrypted']);
    }
    // Search attributes stay readable (the Temporal UI filters on them), which is why they carry no secrets.
    expect(rawBytes(taskHistory).includes(sessionId)).toBe(true);

    // The codec server, as the Temporal UI calls it.
    const decoded = await request(app)
      .post('/codec/decode')
      .set('origin', UI_ORIGIN)
      .set('x-namespace', 'default')
      .send({ payloads: payloadsOf(taskHistory) });
    expect(decoded.status).toBe(200);
    expect(decoded.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    const texts = (decoded.body.payloads as JsonPayload[]).map((p) => Buffer.from(p.data!, 'base64').toString());
    const all = texts.join('\n');
    for (const secret of ['PROMPT-zebra-7741', 'STEP-quokka-2290', 'TOOLOUT-narwhal-5318', 'ANSWER-ibis-6602'])
      expect(all).toContain(secret);
    const encodings = (decoded.body.payloads as JsonPayload[]).map((p) =>
      Buffer.from(p.metadata!.encoding, 'base64').toString()
    );
    expect(encodings).toContain('json/plain');
    expect(encodings).not.toContain('binary/encrypted');

    // And as the Temporal CLI calls it: `temporal workflow show --codec-endpoint`.
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/codec`;
      const show = (extra: string[]) =>
        run(
          temporalCliPath(),
          [
            'workflow',
            'show',
            '--workflow-id',
            taskId,
            '--address',
            env.config.temporal.address,
            '--output',
            'json',
            ...extra,
          ],
          { maxBuffer: 64 * 1024 * 1024 }
        );
      // Its JSON output keeps payloads as base64: read the data of each.
      const dataOf = (stdout: string) => {
        const out: string[] = [];
        JSON.stringify(JSON.parse(stdout), (key, value: unknown) => {
          if (key === 'data' && typeof value === 'string') out.push(Buffer.from(value, 'base64').toString());
          return value;
        });
        return out.join('\n');
      };
      const without = await show([]);
      expect(dataOf(without.stdout)).not.toContain('TOOLOUT-narwhal-5318');
      const withCodec = await show(['--codec-endpoint', endpoint]);
      expect(withCodec.stdout).not.toContain(Buffer.from('binary/encrypted').toString('base64'));
      for (const secret of ['PROMPT-zebra-7741', 'STEP-quokka-2290', 'TOOLOUT-narwhal-5318'])
        expect(dataOf(withCodec.stdout)).toContain(secret);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('/codec/encode seals payloads that /codec/decode opens; a payload of another key is a 422 naming it', async () => {
    const payload = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: btoa('"hi"') };
    const sealed = await request(app)
      .post('/codec/encode')
      .send({ payloads: [payload] });
    expect(sealed.status).toBe(200);
    expect(Buffer.from(sealed.body.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    expect(Buffer.from(sealed.body.payloads[0].metadata['encryption-key-id'], 'base64').toString()).toBe('k1');
    const opened = await request(app).post('/codec/decode').send(sealed.body);
    expect(opened.body).toEqual({ payloads: [payload] });

    const other = createApp({
      client: env.client,
      config: { ...env.config, temporal: { ...env.config.temporal, payload_key: `k7:${b64()}` } },
    });
    const foreign = await request(other).post('/codec/decode').send(sealed.body);
    expect(foreign.status).toBe(422);
    expect(foreign.body.error).toMatchObject({
      code: 'payload_key',
      message: expect.stringContaining('encrypted with key id "k1", which this process does not have'),
      details: { keyId: 'k1' },
    });
    const bad = await request(app)
      .post('/codec/decode')
      .send({ payloads: [{ data: 'not base64!' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^body\.payloads\.0\.data: expected base64/);
  });

  it('CORS for the Temporal UI, the token required when set, and no codec routes without a key', async () => {
    const secured = createApp({
      client: env.client,
      config: { ...env.config, api: { ...env.config.api, token: TOKEN } },
    });
    const preflight = await request(secured)
      .options('/codec/decode')
      .set('origin', UI_ORIGIN)
      .set('access-control-request-method', 'POST')
      .set('access-control-request-headers', 'content-type,authorization,x-namespace');
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': UI_ORIGIN,
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': 'content-type, authorization, x-namespace',
      'access-control-allow-credentials': 'true',
    });
    const foreign = await request(secured).options('/codec/decode').set('origin', 'https://evil.example');
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    expect(foreign.body.error.message).toContain(`only the Temporal UI's (${UI_ORIGIN}`);

    const body = { payloads: [] };
    const noToken = await request(secured).post('/codec/decode').set('origin', UI_ORIGIN).send(body);
    expect(noToken.status).toBe(401);
    // The UI can read the refusal (and say so) rather than meet a CORS error.
    expect(noToken.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    const withToken = await request(secured).post('/codec/decode').set('authorization', `Bearer ${TOKEN}`).send(body);
    expect(withToken.status).toBe(200);
    expect(withToken.body).toEqual({ payloads: [] });

    const doc = (await request(secured).get('/openapi.json').set('authorization', `Bearer ${TOKEN}`)).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/codec/decode', '/codec/encode']));
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();

    const off = createApp({
      client: env.client,
      config: { ...env.config, temporal: { ...env.config.temporal, payload_key: null } },
    });
    const missing = await request(off).post('/codec/decode').send(body);
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toMatch(
      /payload encryption is off, so there is no codec endpoint: set KLEA_PAYLOAD_KEY/
    );
    expect(Object.keys((await request(off).get('/openapi.json')).body.paths)).not.toContain('/codec/decode');
  });

  it('a worker with another key fails the workflow task with an error naming the key, never running on garbage', async () => {
    // This worker has key id k1 too, but not the same key; the client below also writes with a key id it lacks.
    const wrong = await startTestEnv({
      name: 'codec-wrong',
      overrides: { project: { dir: project.dir }, temporal: { payload_key: `k1:${b64()}` } },
    });
    const clientWith = (payloadKey: string) =>
      new Client({
        connection: env.client.connection,
        namespace: env.config.temporal.namespace,
        dataConverter: dataConverterFor(
          testConfig({ taskQueue: wrong.taskQueue, overrides: { temporal: { payload_key: payloadKey } } })
        ),
      });
    const cases: Array<[Client, RegExp]> = [
      [
        env.client,
        /a payload encrypted with key id "k1" does not decrypt with this process's key "k1": the key is wrong/,
      ],
      [clientWith(`k9:${b64()}`), /a payload is encrypted with key id "k9", which this process does not have/],
    ];
    try {
      for (const [client, message] of cases) {
        const taskId = `task-${uniqueId('s')}-1`;
        const handle = await client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
          taskQueue: wrong.taskQueue,
          workflowId: taskId,
          args: [
            {
              taskId,
              sessionId: taskId.slice(5, -2),
              prompt: PROMPT,
              projectDir: project.dir,
              mode: 'general',
              toolAccess: 'full',
              route: false,
            },
          ],
        });
        // What the operator sees in the Temporal UI (and the worker logs): the workflow task failed, and why.
        const deadline = Date.now() + 20_000;
        let failure: string | undefined;
        while (!failure) {
          if (Date.now() > deadline) throw new Error('no workflow task failure in the history');
          await new Promise((r) => setTimeout(r, 200));
          const { events } = await handle.fetchHistory();
          failure =
            events?.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes?.failure
              ?.message ?? undefined;
        }
        expect(failure).toMatch(message);
        // Nothing ran: no activity was scheduled with whatever a wrong key would have produced.
        const { events } = await handle.fetchHistory();
        expect(events?.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
        expect((await handle.describe()).status.name).toBe('RUNNING');
        await handle.terminate('test over');
      }
    } finally {
      await wrong.shutdown();
    }
  });
  it('an API that lacks the key a worker answered with says so (500 payload_key), naming the key id', async () => {
    // The worker was rotated to k2 (keeping k1); the API was not, so it cannot read what the worker seals now.
    const rotated = await startTestEnv({
      fakeModel: fake,
      name: 'codec-rotated',
      overrides: { project: { dir: project.dir }, temporal: { payload_key: `k2:${b64()},${KEY}` } },
    });
    try {
      const api = createApp({
        client: env.client,
        config: { ...env.config, temporal: { ...env.config.temporal, task_queue: rotated.taskQueue } },
        callTimeoutMs: 5000,
      });
      fake.on('write_plan', { call: plan([step('s1', STEP_TEXT)], { before_work: true }) });
      const { sessionId } = (await request(api).post('/sessions').send({})).body as { sessionId: string };
      const payloadKeyError = {
        code: 'payload_key',
        message: expect.stringContaining('a payload is encrypted with key id "k2", which this process does not have'),
        details: { keyId: 'k2' },
      };
      // The session's answer to the API's update is sealed with k2: the task starts, but the API cannot read that.
      const created = await request(api).post('/tasks').send({ prompt: PROMPT, sessionId });
      expect(created.status).toBe(500);
      expect(created.body.error).toMatchObject(payloadKeyError);
      const t = await TaskDriver.attach(rotated, `task-${sessionId}-1`);
      await t.waitFor('review_requested');
      const res = await request(api).get(`/tasks/${t.taskId}`);
      expect(res.status).toBe(500);
      expect(res.body.error).toMatchObject(payloadKeyError);
      await t.handle.terminate('test over');
      await rotated.client.workflow.getHandle(`session-${sessionId}`).terminate('test over');
    } finally {
      await rotated.shutdown();
    }
  });
});
