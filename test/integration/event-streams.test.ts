/**
 * Event streams on a real Temporal server, with every query and describe the API makes counted by a client
 * interceptor: a task parked at a review costs no query while it waits, a decision sent through the API wakes its
 * stream, a finished task's events are served from memory and its stream ends after the final `status`, and
 * reconnects (Last-Event-ID) across an API restart get every event exactly once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { createApp, type AppDeps } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import { dataConverterFor } from '../../runtime/payload-codec';
import type { FakeModel } from '../support/fake-model';
import { createFrameParser } from '../../web/sse';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step } from '../support/task-driver';
import { until } from '../support/until';

/** Calls the API made to each workflow. */
class CallCounter {
  readonly queries = new Map<string, number>();
  readonly describes = new Map<string, number>();
  readonly interceptor: WorkflowClientInterceptor = {
    query: (input, next) => {
      this.bump(this.queries, input.workflowExecution.workflowId);
      return next(input);
    },
    describe: async (input, next) => {
      const id = input.workflowExecution.workflowId;
      this.bump(this.describes, id);
      const res = await next(input);
      this.lengths.set(id, [...(this.lengths.get(id) ?? []), Number(res.workflowExecutionInfo?.historyLength ?? 0)]);
      return res;
    },
  };
  /** The history length each describe of a workflow answered, in order. */
  private readonly lengths = new Map<string, number[]>();
  /** The feed's last poll found nothing new: two describes in a row answered the same history length. */
  quiet(id: string): true | undefined {
    const l = this.lengths.get(id) ?? [];
    return l.length >= 2 && l.at(-1) === l.at(-2) ? true : undefined;
  }
  private bump(m: Map<string, number>, id: string) {
    m.set(id, (m.get(id) ?? 0) + 1);
  }
  of(id: string) {
    return { queries: this.queries.get(id) ?? 0, describes: this.describes.get(id) ?? 0 };
  }
}

/** One SSE client: the events it received, in order, and whether the server ended the stream. */
interface StreamClient {
  events: KleaEvent[];
  ended: boolean;
  close(): void;
}

function openStream(port: number, path: string, lastEventId?: number): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const client: StreamClient = { events: [], ended: false, close: () => req.destroy() };
    const req = http.get(
      {
        host: '127.0.0.1',
        port,
        path,
        headers: {
          accept: 'text/event-stream',
          ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}),
        },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
        const frames = createFrameParser();
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          for (const frame of frames.push(chunk)) {
            if (frame.event === 'stream_error') reject(new Error(`stream_error: ${frame.data}`));
            if (frame.id !== undefined && frame.data) client.events.push(JSON.parse(frame.data) as KleaEvent);
          }
        });
        res.on('end', () => (client.ended = true));
        resolve(client);
      }
    );
    req.on('error', (e) => (String(e).includes('socket hang up') ? undefined : reject(e)));
  });
}

describe('event streams', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const project = makeProject({ 'a.txt': 'alpha\n' });
  useFakeModelEnv({ name: 'event-streams', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
  });

  const servers: http.Server[] = [];
  /** A fresh API process as far as streams go: its own app, feeds and counted client. */
  async function startApi(eventPolling: AppDeps['eventPolling']) {
    const calls = new CallCounter();
    const client = new Client({
      connection: env.client.connection,
      namespace: env.config.temporal.namespace,
      dataConverter: dataConverterFor(env.config),
      interceptors: { workflow: [calls.interceptor] },
    });
    const app = createApp({ client, config: env.config, eventPolling });
    const server = http.createServer(app);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return { app, calls, port: (server.address() as AddressInfo).port };
  }
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });

  /** A task that asks for a review of its one-step plan before it works. */
  async function taskAtReview(app: http.RequestListener) {
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')], { before_work: true }) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'It says alpha.' });
    const created = await request(app).post('/tasks').send({ prompt: 'Read a.txt' });
    expect(created.status).toBe(201);
    return created.body.taskId as string;
  }

  const seqs = (events: KleaEvent[]) => events.map((e) => e.seq);
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('a stream on a task parked at a review asks no query while it waits; approving it runs the stream to its end', async () => {
    // Arrange: polls every 20 ms at most, parked ones too, so the parked feed is asked often
    const api = await startApi({ minMs: 10, maxMs: 20, parkedMs: 20 });
    const taskId = await taskAtReview(api.app);
    const stream = await openStream(api.port, `/tasks/${taskId}/events`);
    await until('the review is requested', () => stream.events.find((e) => e.type === 'review_requested'));
    await until('a quiet poll has parked the feed', () => api.calls.quiet(taskId));
    const parked = api.calls.of(taskId);

    // Act: let the feed poll the parked task 25 more times
    await until('25 more polls', () => (api.calls.of(taskId).describes >= parked.describes + 25 ? true : undefined));

    // Assert: not one query among them
    expect(api.calls.of(taskId).queries).toBe(parked.queries);

    // Act: approve it
    const hash = (stream.events.find((e) => e.type === 'review_requested') as { planHash: string }).planHash;
    expect(
      (await request(api.app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: hash })).status
    ).toBe(200);
    await until('the stream ends', () => (stream.ended ? true : undefined));

    // Assert: every event once, in order, the last one the final status
    expect(seqs(stream.events)).toEqual(range(1, stream.events.length));
    expect(stream.events.at(-1)).toMatchObject({ type: 'status', status: 'done' });
  });

  it('a review sent through the API wakes the stream of a parked task at once', async () => {
    // Arrange: a parked task would be polled again only after ten minutes
    const api = await startApi({ minMs: 10, maxMs: 50, parkedMs: 600_000 });
    const taskId = await taskAtReview(api.app);
    const stream = await openStream(api.port, `/tasks/${taskId}/events`);
    const review = await until('the review is requested', () =>
      stream.events.find((e) => e.type === 'review_requested')
    );
    await until('a quiet poll has parked the feed', () => api.calls.quiet(taskId));
    const parked = api.calls.of(taskId);

    // Act
    const hash = (review as { planHash: string }).planHash;
    expect(
      (await request(api.app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: hash })).status
    ).toBe(200);

    // Assert: the stream follows the task to its end, long before a parked poll would have come
    await until('the stream ends', () => (stream.ended ? true : undefined));
    expect(stream.events.at(-1)).toMatchObject({ type: 'status', status: 'done' });
    expect(api.calls.of(taskId).queries).toBeGreaterThan(parked.queries);
  });

  it("a finished task's events are served from memory, and every stream on it ends after the final status", async () => {
    // Arrange: a task followed to its end
    const api = await startApi({ minMs: 10, maxMs: 50, parkedMs: 50 });
    const taskId = await taskAtReview(api.app);
    const first = await openStream(api.port, `/tasks/${taskId}/events`);
    const review = await until('the review is requested', () =>
      first.events.find((e) => e.type === 'review_requested')
    );
    await request(api.app)
      .post(`/tasks/${taskId}/review`)
      .send({ decision: 'approve', planHash: (review as { planHash: string }).planHash });
    await until('the stream ends', () => (first.ended ? true : undefined));
    const done = api.calls.of(taskId);

    // Act: three more clients, and a JSON poll
    const again = await openStream(api.port, `/tasks/${taskId}/events`);
    const resumed = await openStream(api.port, `/tasks/${taskId}/events`, 2);
    const caughtUp = await openStream(api.port, `/tasks/${taskId}/events`, first.events.length);
    const json = await request(api.app).get(`/tasks/${taskId}/events?after=0`);
    await until('the streams end', () => (again.ended && resumed.ended && caughtUp.ended ? true : undefined));

    // Assert: the same events, nothing asked of Temporal
    expect(again.events).toEqual(first.events);
    expect(seqs(resumed.events)).toEqual(range(3, first.events.length));
    expect(caughtUp.events).toEqual([]);
    expect(json.body.events).toEqual(first.events);
    expect(api.calls.of(taskId)).toEqual(done);

    // Act: an API restart (nothing in memory), a client resuming after event 2
    const restarted = await startApi({ minMs: 10, maxMs: 50, parkedMs: 50 });
    const afterRestart = await openStream(restarted.port, `/tasks/${taskId}/events`, 2);
    await until('the stream ends', () => (afterRestart.ended ? true : undefined));
    const again2 = await openStream(restarted.port, `/tasks/${taskId}/events`);
    await until('the stream ends', () => (again2.ended ? true : undefined));

    // Assert: read once, with one query
    expect(afterRestart.events).toEqual(first.events.slice(2));
    expect(again2.events).toEqual(first.events);
    expect(restarted.calls.of(taskId).queries).toBe(1);
  });

  it('a client that reconnects with Last-Event-ID to a restarted API gets every event exactly once', async () => {
    // Arrange: a client follows a task on one API until the review, then the API goes away
    const before = await startApi({ minMs: 10, maxMs: 50, parkedMs: 50 });
    const taskId = await taskAtReview(before.app);
    const first = await openStream(before.port, `/tasks/${taskId}/events`);
    const review = await until('the review is requested', () =>
      first.events.find((e) => e.type === 'review_requested')
    );
    first.close();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }

    // Act: the task goes on while the client is away, which reconnects to a new API process
    const after = await startApi({ minMs: 10, maxMs: 50, parkedMs: 50 });
    await request(after.app)
      .post(`/tasks/${taskId}/review`)
      .send({ decision: 'approve', planHash: (review as { planHash: string }).planHash });
    const second = await openStream(after.port, `/tasks/${taskId}/events`, first.events.at(-1)!.seq);
    await until('the stream ends', () => (second.ended ? true : undefined));

    // Assert
    const all = [...first.events, ...second.events];
    expect(seqs(all)).toEqual(range(1, all.length));
    expect(all.at(-1)).toMatchObject({ type: 'status', status: 'done' });
  });

  it('a session stream follows messages and settings exactly once and stays open', async () => {
    // Arrange
    const api = await startApi({ minMs: 10, maxMs: 50, parkedMs: 50 });
    const sessionId = (await request(api.app).post('/sessions').send({})).body.sessionId as string;
    fake.on('route_request', { call: { route: 'chat', reply: 'hello there' } });
    fake.on('route_request', { call: { route: 'chat', reply: 'hello again' } });
    const stream = await openStream(api.port, `/sessions/${sessionId}/events`);

    // Act
    await request(api.app).post(`/sessions/${sessionId}/messages`).send({ text: 'hi' });
    await request(api.app).post(`/sessions/${sessionId}/messages`).send({ text: 'hi again' });
    await request(api.app).patch(`/sessions/${sessionId}`).send({ toolAccess: 'read_only' });

    // Assert
    await until('the new settings arrive', () =>
      stream.events.find((e) => e.type === 'context' && e.toolAccess === 'read_only')
    );
    expect(stream.events.map((e) => e.type)).toEqual(['context', 'answer', 'answer', 'context']);
    expect(seqs(stream.events)).toEqual(range(1, 4));
    expect(stream.ended).toBe(false);
    stream.close();
  });
});
