/**
 * Klea against a real OpenAI-compatible server: llama.cpp's (xllamacpp) with SmolLM2-135M-Instruct, Klea's worker
 * on a real Temporal dev server, with no model configuration beyond the endpoint. llama.cpp ignores a forced
 * function, so this proves `model.structured_output: auto` end to end: the move to json_schema, and every
 * structured answer held to its schema by the server's grammar.
 *
 * It asserts protocol and behaviour, not the quality of a 135M model's work: every structured answer the server
 * finishes is JSON that parses and fits the schema it was sent, no request hangs, the number of model calls stays
 * bounded, and every failure says what was wrong. At temperature 0 this model runs on in write_plan (a string of
 * digits to the field's maxLength) until the server's 512-token cap cuts it: Klea must name the cut when it
 * re-asks and when the task fails. The exchanges are kept in .klea/test/real-model-exchanges.json.
 * Run by `make test-real-model` (jest.real-model.config.js).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { KleaEvent } from '../../common/events';
import type { TaskResult } from '../../common/task';
import { REPO_ROOT } from '../../runtime/temporal';
import { startTaskUpdate } from '../../workflows/session/messages';
import { clarifySignal, permissionSignal, reviewSignal } from '../../workflows/task/messages';
import { recordingLogger, startTestEnv, type TestEnv } from '../support/harness';
import { startLlamaServer, type LlamaServer } from '../support/llama-server';
import { RecordingProxy, type Exchange } from '../support/recording-proxy';
import { SessionDriver } from '../support/session-driver';
import { makeProject, TaskDriver } from '../support/task-driver';

const REQUEST_TIMEOUT_MS = 120_000;
const TRANSCRIPT = path.join(REPO_ROOT, '.klea', 'test', 'real-model-exchanges.json');
const STRUCTURED_NODES = ['route_request', 'write_plan', 'pick_tools', 'evaluate_step'];
/** Failure codes that name what went wrong (the task path's own, or a typed model failure). */
const KNOWN_CODES =
  /^(ModelOutputInvalid|ModelRequestRefused|ModelUnavailable|ModelServerError|PlanStuck|TaskFailed|ToolDenied|NothingAchieved)$/;

type Message = { content?: string | null; tool_calls?: unknown[] };
const messageOf = (x: Exchange): Message | undefined =>
  (x.response?.choices as Array<{ message: Message }> | undefined)?.[0]?.message;
const finishOf = (x: Exchange) =>
  (x.response?.choices as Array<{ finish_reason?: string }> | undefined)?.[0]?.finish_reason;
const formatOf = (x: Exchange) =>
  (x.request.response_format as { json_schema?: { name: string; schema: Record<string, unknown> } } | undefined)
    ?.json_schema;

const CUT_SHORT = "cut off at the endpoint's output token limit";

/**
 * The protocol held for these exchanges: each answered, in time; a structured node asked through response_format
 * named after it got JSON that parses and fits the schema sent (only a request with tools may have gone before).
 * An answer the server stopped at its output cap (finish_reason "length": the model ran on) is the one exception,
 * and Klea must have said so, in its re-ask or in what the task reports.
 */
function expectProtocol(exchanges: Exchange[], events: KleaEvent[] = []) {
  expect(exchanges.length).toBeGreaterThan(0);
  exchanges.forEach((x, i) => {
    const where = `${x.node} (${x.ms} ms, HTTP ${x.status}): ${x.raw.slice(0, 500)}`;
    expect({ where, status: x.status }).toEqual({ where, status: 200 });
    expect(x.ms).toBeLessThan(REQUEST_TIMEOUT_MS);
    expect(x.request.stream).toBeFalsy();
    if (!STRUCTURED_NODES.includes(x.node ?? '')) return;
    const format = formatOf(x);
    if (!format) {
      expect(x.request.tools).toBeDefined(); // the first, tool-calling request of auto
      return;
    }
    expect(format.name).toBe(x.node);
    if (finishOf(x) === 'length') {
      const toldLater = exchanges
        .slice(i + 1)
        .some((y) => y.node === x.node && JSON.stringify(y.request).includes(CUT_SHORT));
      expect({ where, told: toldLater || JSON.stringify(events).includes(CUT_SHORT) }).toEqual({ where, told: true });
      return;
    }
    expect({ where, finish: finishOf(x) }).toEqual({ where, finish: 'stop' });
    let parsed: unknown;
    expect(() => (parsed = JSON.parse(messageOf(x)?.content ?? ''))).not.toThrow();
    const fit = z.fromJSONSchema(format.schema).safeParse(parsed);
    expect({ where, issues: fit.error?.issues ?? [] }).toEqual({ where, issues: [] });
  });
}

/** A failed task or step says what went wrong. */
function expectFailuresExplained(result: TaskResult, events: KleaEvent[]) {
  if (result.status === 'failed') expect(result.error).toMatch(/\w{8,}/);
  for (const e of events) {
    if (e.type === 'error') {
      expect(e.code).toMatch(KNOWN_CODES);
      expect(e.message).toMatch(/\w{8,}/);
    }
    if (e.type === 'step_finished' && e.status !== 'done') expect(e.reason).toMatch(/\w{4,}/);
  }
}

/** Runs a task to its end as a user would: approves every review, answers questions, denies paths outside. */
async function driveToEnd(t: TaskDriver, timeoutMs: number): Promise<{ result: TaskResult; events: KleaEvent[] }> {
  const deadline = Date.now() + timeoutMs;
  const handled = new Set<number>();
  for (;;) {
    const events = await t.events();
    for (const e of events.filter((x) => !handled.has(x.seq))) {
      handled.add(e.seq);
      if (e.type === 'review_requested')
        await t.handle.signal(reviewSignal, { decision: 'approve', planHash: e.planHash });
      if (e.type === 'questions')
        await t.handle.signal(clarifySignal, {
          answers: Object.fromEntries(e.questions.map((q) => [q, 'Use your best judgement.'])),
        });
      if (e.type === 'permission_requested')
        await t.handle.signal(permissionSignal, { requestId: e.requestId, decision: 'deny' });
    }
    if (events.some((e) => e.type === 'status')) return { result: await t.result(), events: await t.events() };
    if (Date.now() > deadline)
      throw new Error(`the task did not end within ${timeoutMs} ms; events: ${events.map((e) => e.type).join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("Klea on llama.cpp's server with SmolLM2-135M-Instruct (structured_output auto)", () => {
  let llama: LlamaServer;
  let proxy: RecordingProxy;
  let env: TestEnv;
  let session: SessionDriver;
  const log = recordingLogger();
  const project = makeProject({ 'notes.txt': 'The launch is on Friday. Bring the slides.\n' });
  const since = (from: number) => proxy.exchanges.slice(from);

  beforeAll(async () => {
    mkdirSync(path.dirname(TRANSCRIPT), { recursive: true });
    llama = await startLlamaServer();
    proxy = await RecordingProxy.start(llama.baseUrl);
    env = await startTestEnv({
      name: 'real-model',
      log,
      overrides: {
        // Only the endpoint is configured: structured_output stays at its default, auto.
        model: { name: 'SmolLM2-135M-Instruct', base_url: proxy.url, api_key: 'none', timeout_ms: REQUEST_TIMEOUT_MS },
      },
    });
    // A small model on a shared CPU may take minutes to route: the bound is the request's own timeout, retried.
    session = await SessionDriver.start(env, project.dir, { routeTimeoutMs: 5 * REQUEST_TIMEOUT_MS });
  }, 180_000);

  afterAll(async () => {
    // What the server was asked and answered, for whoever reads a failure.
    if (proxy) writeFileSync(TRANSCRIPT, JSON.stringify(proxy.exchanges, null, 2));
    await env?.shutdown();
    await proxy?.close();
    await llama?.stop();
  });

  afterEach(() => {
    // Nothing is left waiting on the model when a step of the scenario is over.
    expect(proxy.inFlight).toBe(0);
  });

  it('a greeting is routed and answered; the worker moves to json_schema once, and says so', async () => {
    const from = proxy.exchanges.length;
    const taskEvents: KleaEvent[] = [];
    const r = await session.submit('Hello! Who are you?');

    expect(['chat', 'task']).toContain(r.kind);
    if (r.kind === 'chat') expect(r.reply).toMatch(/\S/);
    else {
      const { result, events } = await driveToEnd(await TaskDriver.attach(env, r.taskId!), 300_000);
      expect(['done', 'failed']).toContain(result.status);
      expectFailuresExplained(result, events);
      taskEvents.push(...events);
    }
    await session.waitIdle(300_000);
    const mine = since(from);
    expectProtocol(mine, taskEvents);
    // llama.cpp ignores a forced function: the first structured request went with tools, and got no call.
    const withTools = proxy.exchanges.filter((x) => x.request.tools);
    expect(withTools.map((x) => x.node)).toEqual(['route_request']);
    expect(messageOf(withTools[0])?.tool_calls ?? []).toEqual([]);
    expect(log.lines.filter((l) => /json_schema/.test(l.msg))).toEqual([
      expect.objectContaining({ level: 'warn', meta: expect.objectContaining({ node: 'route_request' }) }),
    ]);
    expect(mine.length).toBeLessThanOrEqual(30);
  }, 420_000);

  it('a task is planned, reviewed if it asks, run and ended (done, or failed saying why)', async () => {
    const from = proxy.exchanges.length;
    const { taskId } = await session.handle.executeUpdate(startTaskUpdate, {
      args: [{ prompt: 'Read notes.txt and tell me what it says.' }],
    });
    const { result, events } = await driveToEnd(await TaskDriver.attach(env, taskId), 600_000);

    expect(['done', 'failed']).toContain(result.status);
    expectFailuresExplained(result, events);
    const planned = events.find((e) => e.type === 'plan');
    const failedToPlan = events.find((e) => e.type === 'error' && e.code === 'ModelOutputInvalid');
    expect(planned ?? failedToPlan).toBeDefined();
    if (result.status === 'done') expect(result.answer).toMatch(/\S/);
    await session.waitIdle(60_000);
    const mine = since(from);
    expectProtocol(mine, events);
    expect(mine.every((x) => !x.request.tools)).toBe(true);
    expect(mine.length).toBeLessThanOrEqual(40);
  }, 660_000);

  it('/compact folds the conversation into the running summary', async () => {
    const from = proxy.exchanges.length;
    const lastSeq = Math.max(0, ...(await session.events()).map((e) => e.seq));

    expect(await session.submit('/compact')).toEqual({ kind: 'command' });
    const memory = await session.waitFor((e) => e.type === 'memory' && e.seq > lastSeq, 'a memory event', 300_000);

    expect(memory).toMatchObject({ action: 'summarised', detail: expect.stringMatching(/^\/compact: folded/) });
    expect((await session.state()).memory.summary).toMatch(/\S/);
    const mine = since(from);
    expect(mine.map((x) => x.node)).toEqual(['summarize_memory']);
    expectProtocol(mine);
  }, 360_000);
});
