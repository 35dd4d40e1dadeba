/**
 * Tasks of any length: a long task continues as new between rounds of steps (here after a low
 * `task.continue_as_new_after_events`, so the tests cross several runs), and clients still see one task: the same
 * id, events without a gap or a repeat across runs (live streams and late readers alike), queries, decisions and
 * cancel reaching the current run, grants and answers carried over, and large tool outputs kept by reference so
 * history stays small.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createApp } from '../../api/app';
import { dataConverterFor } from '../../runtime/payload-codec';
import type { KleaEvent } from '../../common/events';
import type { PlanStep } from '../../common/plan';
import { createFrameParser } from '../../web/sse';
import type { FakeModel, RecordedRequest } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step } from '../support/task-driver';
import { until } from '../support/until';

/** Low enough that a task of a few dozen rounds runs in several runs. */
const THRESHOLD = 300;

/** Every run of a workflow id, oldest first, with its history size. */
async function runsOf(client: Client, workflowId: string) {
  const runs: Array<{ runId: string; status: string; bytes: number; events: number }> = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await client.workflow.getHandle(workflowId, w.runId).fetchHistory();
    runs.push({
      runId: w.runId,
      status: w.status.name,
      bytes: temporal.api.history.v1.History.encode(history).finish().length,
      events: history.events?.length ?? 0,
    });
  }
  return runs.reverse();
}

/** Step ids offered in a pick_tools request (the enum of the step_id parameter). */
function offeredStepIds(req: RecordedRequest): string[] {
  const props = (req.toolSchemas[0]?.parameters as { properties?: { step_id?: { enum?: string[] } } })?.properties;
  return props?.step_id?.enum ?? [];
}

/** Reads an SSE stream to its end (or until closed), collecting the events. */
function openStream(port: number, urlPath: string, lastEventId?: number) {
  const client = { events: [] as KleaEvent[], ended: false, errors: [] as string[], close: () => req.destroy() };
  const req = http.get(
    {
      host: '127.0.0.1',
      port,
      path: urlPath,
      headers: {
        accept: 'text/event-stream',
        ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}),
      },
    },
    (res) => {
      const frames = createFrameParser();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        for (const frame of frames.push(chunk)) {
          if (frame.event === 'stream_error') client.errors.push(frame.data ?? '');
          if (frame.id !== undefined && frame.data) client.events.push(JSON.parse(frame.data) as KleaEvent);
        }
      });
      res.on('end', () => (client.ended = true));
    }
  );
  req.on('error', () => undefined);
  return client;
}

const seqs = (events: KleaEvent[]) => events.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('long tasks continue as new and stay one task', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const project = makeProject({ 'tiny.txt': 'tiny\n' });
  useFakeModelEnv(
    {
      name: 'long-task',
      overrides: { project: { dir: project.dir }, task: { continue_as_new_after_events: THRESHOLD } },
    },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  const servers: http.Server[] = [];
  /**
   * An API of its own (nothing in memory), listening on a free port. Each `events` query it sends is recorded: the
   * run it asked (`undefined`: the latest) and from which seq.
   */
  async function startApi() {
    const queries: Array<{ runId: string | undefined; after: number }> = [];
    const client = new Client({
      connection: env.client.connection,
      namespace: env.config.temporal.namespace,
      dataConverter: dataConverterFor(env.config),
      interceptors: {
        workflow: [
          {
            query: (input, next) => {
              if (input.queryType === 'events')
                queries.push({
                  runId: input.workflowExecution.runId || undefined,
                  after: (input.args[0] as { after?: number } | undefined)?.after ?? 0,
                });
              return next(input);
            },
          },
        ],
      },
    });
    const app = createApp({ client, config: env.config, ssePollMs: 50 });
    const server = http.createServer(app);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    /** The queries of earlier runs (those naming a run), by run. */
    const earlierReads = () => queries.filter((q) => q.runId !== undefined);
    return { app, port: (server.address() as AddressInfo).port, queries, earlierReads };
  }
  afterEach(() => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      server.close();
    }
  });

  /** Tool steps pick `read_file` of `file(stepId)`; other steps are done by the model. */
  function scriptSteps(file: (stepId: string) => string) {
    fake.always('pick_tools', (req) => ({
      calls: offeredStepIds(req).map((id) => ({ name: 'workspace__read_file', args: { step_id: id, path: file(id) } })),
    }));
    fake.always('do_step', { content: 'ok' });
  }

  it('a 400-step task runs across several runs: one id, every step once, events gap-free live and afterwards', async () => {
    // Arrange: 400 steps in rounds of four (each step needs the one four before it), every fourth a tool step.
    const steps: PlanStep[] = Array.from({ length: 400 }, (_, i) =>
      step(`s${i + 1}`, `Part ${i + 1}`, {
        depends_on: i >= 4 ? [`s${i - 3}`] : [],
        needs_tool: i % 4 === 0,
      })
    );
    fake.on('write_plan', { call: plan(steps) });
    scriptSteps(() => 'tiny.txt');
    fake.on('compose_answer', { content: 'All 400 parts done.' });
    const { app, port } = await startApi();

    // Act: start it through the API and follow it with a live stream from the start.
    const created = await request(app).post('/tasks').send({ prompt: 'Do the 400 parts' });
    expect(created.status).toBe(201);
    const taskId = created.body.taskId as string;
    const live = openStream(port, `/tasks/${taskId}/events`);
    const result = await env.client.workflow.getHandle(taskId).result();
    await until('the live stream ends', () => live.ended || undefined);

    // Assert: done, in several runs, each well under the threshold it was given.
    expect(result).toMatchObject({ status: 'done', answer: expect.stringContaining('All 400 parts done.') });
    const runs = await runsOf(env.client, taskId);
    expect(runs.length).toBeGreaterThanOrEqual(4);
    expect(runs.slice(0, -1).every((r) => r.status === 'CONTINUED_AS_NEW')).toBe(true);
    expect(runs.at(-1)!.status).toBe('COMPLETED');
    for (const r of runs) expect(r.events).toBeLessThan(THRESHOLD + 200);

    // The live stream got every event exactly once, in order, across every boundary.
    expect(live.errors).toEqual([]);
    const last = live.events.at(-1)!;
    expect(last).toMatchObject({ type: 'status', status: 'done' });
    expect(seqs(live.events)).toEqual(range(1, last.seq));
    const finished = live.events.filter((e) => e.type === 'step_finished');
    expect(finished.map((e) => (e as { stepId: string }).stepId).sort()).toEqual(steps.map((s) => s.id).sort());
    expect(live.events.filter((e) => e.type === 'plan')).toHaveLength(1);

    // The state is the whole task's, with the earlier runs named.
    const state = await request(app).get(`/tasks/${taskId}`);
    expect(state.status).toBe(200);
    expect(state.body.steps.filter((s: { status: string }) => s.status === 'done')).toHaveLength(400);
    expect(state.body.runs.current).toBe(runs.length);
    expect(state.body.runs.earlier.map((r: { runId: string }) => r.runId)).toEqual(
      runs.slice(0, -1).map((r) => r.runId)
    );
    expect(state.body.usage.toolCalls).toBe(100);

    live.close();
    // A reader that comes later (a fresh API, nothing in memory) reads the earlier runs for what the last lacks.
    await startApi().then(async (fresh) => {
      const all = await request(fresh.app).get(`/tasks/${taskId}/events?after=0`);
      expect(seqs(all.body.events)).toEqual(range(1, last.seq));
      expect(all.body.events).toEqual(live.events);
    });
  }, 240_000);

  it("a task's events across its runs reach every reader once each, without a gap, reading earlier runs only as far back as asked", async () => {
    // Arrange: a session's task of 320 model steps in rounds of eight, with a review after s200 (in a later run).
    const steps: PlanStep[] = Array.from({ length: 320 }, (_, i) =>
      step(`s${i + 1}`, `Part ${i + 1}`, { depends_on: i >= 8 ? [`s${i - 7}`] : [], needs_tool: false })
    );
    fake.on('route_request', { call: { route: 'task', reply: null } });
    fake.on('write_plan', { call: plan(steps, { after_step_ids: ['s200'] }) });
    scriptSteps(() => 'tiny.txt');
    fake.on('compose_answer', { content: 'All 320 parts done.' });
    const first = await startApi();
    const sessionId = (await request(first.app).post('/sessions').send({})).body.sessionId as string;
    const sessionLive = openStream(first.port, `/sessions/${sessionId}/events`);
    const sent = await request(first.app).post(`/sessions/${sessionId}/messages`).send({ text: 'Do the parts' });
    const taskId = sent.body.taskId as string;
    const live = openStream(first.port, `/tasks/${taskId}/events`);
    const stateOf = async (app = first.app) => (await request(app).get(`/tasks/${taskId}`)).body;

    // Act 1: the task waits for the review in a later run; the live reader is cut off there and comes back to
    // another API with Last-Event-ID, as EventSource does.
    await until(
      'the review after s200',
      async () => ((await stateOf()).status === 'awaiting_review' ? true : undefined),
      60_000
    );
    const atReview = await until('the stream has the review', () =>
      live.events.at(-1)?.type === 'review_requested' ? live.events.at(-1) : undefined
    );
    live.close();
    expect((await stateOf()).runs.current).toBeGreaterThanOrEqual(2);
    const second = await startApi();
    const resumed = openStream(second.port, `/tasks/${taskId}/events`, atReview.seq);
    await until('the resumed stream is open', () => (second.queries.length ? true : undefined));
    expect((await request(first.app).post(`/tasks/${taskId}/review`).send({ decision: 'approve' })).status).toBe(200);
    const result = await env.client.workflow.getHandle(taskId).result();
    await until('the resumed stream ends', () => resumed.ended || undefined, 30_000);

    // Assert 1: the two streams together hold every event once, in order; the resumed one read nothing before the
    // event it resumed after.
    expect(result.status).toBe('done');
    const all = [...live.events, ...resumed.events];
    const last = all.at(-1)!;
    expect(last).toMatchObject({ type: 'status', status: 'done' });
    expect(seqs(all)).toEqual(range(1, last.seq));
    // (It reads an earlier run only for events it lacks: the task may go through a whole run between two polls.)
    expect(second.earlierReads().every((q) => q.after >= atReview.seq)).toBe(true);
    const runs = (await stateOf()).runs as {
      current: number;
      earlier: Array<{ runId: string; firstSeq: number; lastSeq: number }>;
    };
    expect(runs.current).toBeGreaterThanOrEqual(3);

    // Act 2: fresh APIs read the finished task from a seq a little before what its last run holds, and then from
    // the start.
    const latestFirst = Math.max(1, runs.earlier.at(-1)!.lastSeq - 199);
    const from = latestFirst - 20;
    const third = await startApi();
    const tail = openStream(third.port, `/tasks/${taskId}/events`, from);
    await until('the tail stream ends', () => tail.ended || undefined);
    const tailReads = third.earlierReads();
    const fromStart = (await request(third.app).get(`/tasks/${taskId}/events?after=0`)).body.events as KleaEvent[];
    const readsThen = third.earlierReads().length;
    const again = (await request(third.app).get(`/tasks/${taskId}/events?after=0`)).body.events as KleaEvent[];
    const sse = openStream(third.port, `/tasks/${taskId}/events`);
    await until('the stream from the start ends', () => sse.ended || undefined);

    // Assert 2: each reader got its events once, without a gap. The tail read only the runs holding what it lacked;
    // reading from the start then read the others, each once; nothing was read again.
    expect(seqs(tail.events)).toEqual(range(from + 1, last.seq));
    expect(tail.events).toEqual(all.slice(from));
    expect(fromStart).toEqual(all);
    expect(again).toEqual(all);
    expect(sse.events).toEqual(all);
    const holdsAfter = (runId: string | undefined) => runs.earlier.find((r) => r.runId === runId)!.lastSeq > from;
    expect(tailReads.length).toBeGreaterThan(0);
    expect(tailReads.every((q) => holdsAfter(q.runId) && q.after >= from)).toBe(true);
    expect(runs.earlier.filter((r) => r.lastSeq <= from).length).toBeGreaterThan(0);
    const reads = third.earlierReads();
    expect(reads.length).toBe(readsThen);
    // (A run whose events the next run carries in full is never read at all.)
    for (const run of runs.earlier) {
      const times = reads.filter((q) => q.runId === run.runId).length;
      expect(times).toBeLessThanOrEqual(run.lastSeq <= from ? 1 : 2);
    }
    expect(readsThen).toBeGreaterThan(tailReads.length);

    // The session's stream: the task started, answered and ended, each said once, and so on reconnecting.
    const sessionEvents = await until('the session has the answer', () =>
      sessionLive.events.some((e) => e.type === 'status' && e.status === 'done') ? sessionLive.events : undefined
    );
    sessionLive.close();
    expect(seqs(sessionEvents)).toEqual(range(1, sessionEvents.at(-1)!.seq));
    const ofTask = sessionEvents.filter((e) => 'taskId' in e && e.taskId === taskId).map((e) => e.type);
    expect(ofTask).toEqual(['status', 'answer', 'status']);
    const started = sessionEvents.find((e) => e.type === 'status' && e.status === 'running')!;
    const sessionAgain = openStream(third.port, `/sessions/${sessionId}/events`, started.seq);
    await until('the reconnected session stream catches up', () =>
      sessionAgain.events.at(-1)?.seq === sessionEvents.at(-1)!.seq ? true : undefined
    );
    sessionAgain.close();
    expect(sessionAgain.events).toEqual(sessionEvents.slice(sessionEvents.indexOf(started) + 1));
  }, 240_000);

  it('tool outputs of 40 MB in all are kept by reference: every run of the chain stays small', async () => {
    // Arrange: 168 reads of 250 KB files (eight lanes of 21 rounds): 42 MB of output.
    const lanes = 8;
    const line = `${'x'.repeat(99)}\n`;
    for (let l = 1; l <= lanes; l++)
      writeFileSync(path.join(project.dir, `big${l}.txt`), `lane ${l}\n${line.repeat(2560)}`);
    const steps: PlanStep[] = Array.from({ length: 168 }, (_, i) =>
      step(`s${i + 1}`, `Read big${(i % lanes) + 1}.txt`, { depends_on: i >= lanes ? [`s${i + 1 - lanes}`] : [] })
    );
    fake.on('write_plan', { call: plan(steps) });
    scriptSteps((id) => `big${((Number(id.slice(1)) - 1) % lanes) + 1}.txt`);
    fake.on('compose_answer', { content: 'Read them all.' });
    const { app } = await startApi();

    // Act
    const created = await request(app).post('/tasks').send({ prompt: 'Read the big files' });
    const taskId = created.body.taskId as string;
    const result = await env.client.workflow.getHandle(taskId).result();

    // Assert: every step read its whole file, kept by reference; the histories hold a small part of it.
    expect(result.status).toBe('done');
    const state = await request(app).get(`/tasks/${taskId}`);
    const kept = (state.body.steps as Array<{ result: string }>).map((s) =>
      Number(/\[full output of (\d+) bytes kept as sha256:[0-9a-f]+\]/.exec(s.result)?.[1] ?? 0)
    );
    expect(kept.every((b) => b > 250_000)).toBe(true);
    const total = kept.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(40 * 2 ** 20);
    const runs = await runsOf(env.client, taskId);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    const historyBytes = runs.reduce((a, r) => a + r.bytes, 0);
    for (const r of runs) expect(r.bytes).toBeLessThan(4 * 2 ** 20);
    expect(historyBytes).toBeLessThan(total / 4);
  }, 240_000);

  it('decisions, grants and cancel reach the current run: a grant made in the first run holds in a later one', async () => {
    // Arrange: 80 model steps in rounds of two; s3 and s77 read a file outside the project; reviews after s70 and s78.
    writeFileSync(path.join(project.outside, 'x.txt'), 'outside\n');
    const outsideStep = (id: string) => id === 's3' || id === 's77';
    const steps: PlanStep[] = Array.from({ length: 80 }, (_, i) =>
      step(`s${i + 1}`, `Part ${i + 1}`, {
        depends_on: i >= 2 ? [`s${i - 1}`] : [],
        needs_tool: outsideStep(`s${i + 1}`),
      })
    );
    fake.on('write_plan', { call: plan(steps, { after_step_ids: ['s70', 's78'] }) });
    scriptSteps(() => '../outside/x.txt');
    const { app } = await startApi();
    const created = await request(app).post('/tasks').send({ prompt: 'Do the 80 parts' });
    const taskId = created.body.taskId as string;
    const handle = env.client.workflow.getHandle(taskId);
    const firstRun = (await handle.describe()).runId;
    const stateOf = async () =>
      (await request(app).get(`/tasks/${taskId}`)).body as {
        status: string;
        pending: Array<{ kind: string; afterStepIds?: string[]; requests?: Array<{ requestId: string }> }>;
        runs: { current: number };
      };

    // Act + Assert: the permission of the first run, allowed for the session.
    const asking = await until('a permission request', async () => {
      const st = await stateOf();
      return st.status === 'awaiting_permission' ? st : undefined;
    });
    const requestId = asking.pending.find((p) => p.kind === 'permission')!.requests![0].requestId;
    expect(
      (await request(app).post(`/tasks/${taskId}/permissions`).send({ requestId, decision: 'allow_session' })).status
    ).toBe(200);

    // The review after s70 comes from a later run; approving it through the API reaches that run.
    const atReview = await until(
      'the review after s70',
      async () => {
        const st = await stateOf();
        return st.status === 'awaiting_review' ? st : undefined;
      },
      60_000
    );
    expect(atReview.pending[0].afterStepIds).toEqual(['s70']);
    expect(atReview.runs.current).toBeGreaterThanOrEqual(2);
    expect((await handle.describe()).runId).not.toBe(firstRun);
    expect((await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve' })).status).toBe(200);

    // s77 reads the granted file again without asking; then the review after s78, and a cancel that ends the task.
    await until(
      'the review after s78',
      async () => {
        const st = await stateOf();
        return st.status === 'awaiting_review' && st.pending[0].afterStepIds?.[0] === 's78' ? st : undefined;
      },
      60_000
    );
    expect((await request(app).post(`/tasks/${taskId}/cancel`).send({ reason: 'enough' })).status).toBe(200);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'cancelled', error: 'enough' });
    const events = (await request(app).get(`/tasks/${taskId}/events?after=0`)).body.events as KleaEvent[];
    expect(seqs(events)).toEqual(range(1, events.at(-1)!.seq));
    expect(events.filter((e) => e.type === 'permission_requested')).toHaveLength(1);
    const s77 = events.find((e) => e.type === 'step_finished' && e.stepId === 's77');
    expect(s77).toMatchObject({ status: 'done', calls: [{ tool: 'workspace__read_file', status: 'ok' }] });
  }, 240_000);
});
