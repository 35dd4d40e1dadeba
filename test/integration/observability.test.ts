/**
 * Traces and metrics, as an operator would see them: with OTEL_EXPORTER_OTLP_ENDPOINT (http/json) pointing at a
 * small OTLP receiver, one task through the API is one trace from the REST call down to the model requests and the
 * MCP request; the worker's metrics endpoint (Klea's and the Temporal SDK's, as worker/run.ts installs the runtime)
 * and the API's count what happened. With the variables unset: observability-off.test.ts.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../api/app';
import { until } from '../support/until';
import { Runtime, Worker } from '@temporalio/worker';
import { freeLoopbackPort } from '../../runtime/metrics';
import { startTracing, type Tracing } from '../../runtime/tracing';
import { workerSinks } from '../../worker/telemetry';
import { sdkPrometheusOptions } from '../../worker/worker';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP JSON receiver: keeps every span POSTed to /v1/traces. */
async function otlpReceiver() {
  const spans: OtlpSpan[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        contentTypes.push(String(req.headers['content-type']));
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, contentTypes, close: () => new Promise((r) => server.close(r)) };
}

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? (v.stringValue ?? v.intValue ?? v.boolValue) : undefined;
};

/** One sample's value from Prometheus text, by name and exact labels. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (
      Object.entries(labels).every(([k, v]) => got[k] === v) &&
      Object.keys(got).length === Object.keys(labels).length
    )
      return Number(m[3]);
  }
  return undefined;
}

const sumOf = (text: string, name: string, labels: Record<string, string>) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);

const OTEL_VARS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL'];

// The Core runtime with its Prometheus exporter, as worker/run.ts installs it (before any worker exists).
let sdkMetricsUrl: string | undefined;
beforeAll(async () => {
  const at = `127.0.0.1:${await freeLoopbackPort()}`;
  Runtime.install({
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m, meta) => console.error(m, meta) },
    telemetryOptions: { metrics: { prometheus: sdkPrometheusOptions(at) } },
  });
  sdkMetricsUrl = `http://${at}/metrics`;
});

describe('traces and metrics of one task', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  let tracing: Tracing | undefined;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  const project = makeProject({ 'a.txt': 'alpha\nbeta\n' });
  beforeAll(async () => {
    receiver = await otlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
  });
  useFakeModelEnv(
    {
      name: 'otel',
      overrides: { project: { dir: project.dir }, worker: { metrics_address: '127.0.0.1:0' } },
      tracing: () => (tracing = startTracing('klea-test')),
      sdkMetricsUrl: () => sdkMetricsUrl,
      after: async () => {
        await tracing?.shutdown();
        await receiver.close();
        OTEL_VARS.forEach((k) => delete process.env[k]);
      },
    },
    (f, e) => {
      fake = f;
      env = e;
      app = createApp({ client: env.client, config: env.config });
    }
  );

  it('one trace from the REST call to the model and MCP requests; counters match what the model reported', async () => {
    expect(tracing).toBeDefined();
    // Two reads: one inside the project, one outside it, which asks for a permission (allowed once).
    const outside = path.join(project.outside, 'b.txt');
    writeFileSync(outside, 'gamma\n');
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt'), step('s2', 'Read b.txt')]) });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's2', path: outside } },
      ],
    });
    fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'read it' } });
    fake.on('compose_answer', { content: 'It says alpha, beta and gamma.' });
    const res = await request(app).post('/tasks').send({ prompt: 'read a.txt and b.txt', projectDir: project.dir });
    expect(res.status).toBe(201);
    const taskId = res.body.taskId as string;
    const task = await TaskDriver.attach(env, taskId);
    const asked = await task.waitFor('permission_requested');
    // The rest of the task runs on a new worker, which picks the run up from history: still the same trace.
    await env.stopWorker();
    await env.restartWorker();
    // As a client told 503 `no_worker` would: the decision is sent once the API sees the new worker poll.
    await until('the API sees the restarted worker', async () =>
      (await request(app).get('/healthz')).body.worker?.status === 'ok' ? true : undefined
    );
    const allowed = await request(app)
      .post(`/tasks/${taskId}/permissions`)
      .send({ requestId: asked.requestId, decision: 'allow_once' });
    expect(allowed.status).toBe(200);
    expect((await task.result()).status).toBe('done');

    // ---------------------------------------------------------------- traces
    const apiSpan = () => receiver.spans.find((s) => s.name === 'POST /tasks');
    const need = [
      'RunWorkflow:taskWorkflow',
      'RunActivity:writePlan',
      'RunActivity:callTool',
      'RunActivity:composeAnswer',
    ];
    const deadline = Date.now() + 20_000;
    for (;;) {
      await tracing!.flush();
      const api = apiSpan();
      const inTrace = api ? receiver.spans.filter((s) => s.traceId === api.traceId) : [];
      if (need.every((n) => inTrace.some((s) => s.name === n)) && inTrace.some((s) => s.name.startsWith('mcp '))) break;
      if (Date.now() > deadline)
        throw new Error(`spans missing; have ${[...new Set(receiver.spans.map((s) => s.name))].join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(receiver.contentTypes.every((c) => c.startsWith('application/json'))).toBe(true);
    const api = apiSpan()!;
    const trace = receiver.spans.filter((s) => s.traceId === api.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    /** The chain of names from a span up to the root of its trace. */
    const ancestry = (s: OtlpSpan): string[] => {
      const names = [s.name];
      for (let p = s.parentSpanId && byId.get(s.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId))
        names.push(p.name);
      return names;
    };
    const one = (name: string) => {
      const found = trace.find((s) => s.name === name);
      expect(found).toBeDefined();
      return found!;
    };
    // Every span of the task hangs off the API's span: the child task and its activities. (The session's own
    // RunWorkflow span ends, and is exported, only when its run does: sessions are long-lived.)
    for (const name of need) expect(ancestry(one(name)).at(-1)).toBe('POST /tasks');
    expect(ancestry(one('RunWorkflow:taskWorkflow'))).toContain('StartChildWorkflow:taskWorkflow');
    // Workflow spans name their run, and only that of the workflow's info.
    expect(attr(one('RunWorkflow:taskWorkflow'), 'temporalWorkflowId')).toBe(taskId);
    expect(attr(one('RunWorkflow:taskWorkflow'), 'searchAttributes')).toBeUndefined();
    // Both tool calls, the second after the restart, are in the trace.
    expect(trace.filter((s) => s.name === 'RunActivity:callTool').length).toBe(2);
    expect(api.parentSpanId || undefined).toBeUndefined();

    // Model requests: node, model and tokens on the span, under their activity.
    const models = trace.filter((s) => s.name === 'chat fake-model');
    expect(models.length).toBe(fake.reportedUsage().modelCalls);
    const planCall = models.find((s) => attr(s, 'klea.node') === 'write_plan')!;
    expect(ancestry(planCall)[1]).toBe('RunActivity:writePlan');
    expect(attr(planCall, 'gen_ai.request.model')).toBe('fake-model');
    const tokens = (n: string) => models.reduce((sum, s) => sum + Number(attr(s, n)), 0);
    expect(tokens('gen_ai.usage.input_tokens')).toBe(fake.reportedUsage().inputTokens);
    expect(tokens('gen_ai.usage.output_tokens')).toBe(fake.reportedUsage().outputTokens);
    // The model activity's own span names the node and the model, and carries the tokens of its calls: the
    // Planner's activity made the first round's tool picks too (no review was due), under the same span.
    const planActivity = one('RunActivity:writePlan');
    expect(attr(planActivity, 'klea.node')).toBe('write_plan');
    expect(attr(planActivity, 'gen_ai.request.model')).toBe('fake-model');
    const under = models.filter((s) => s.parentSpanId === planActivity.spanId);
    expect(under.map((s) => attr(s, 'klea.node'))).toEqual(['write_plan', 'pick_tools']);
    for (const n of ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens'])
      expect(Number(attr(planActivity, n))).toBe(under.reduce((sum, s) => sum + Number(attr(s, n)), 0));

    // The tool call: server and tool names, never the arguments; the MCP request beneath it.
    const toolSpan = one('RunActivity:callTool');
    expect(attr(toolSpan, 'klea.tool.server')).toBe('workspace');
    expect(attr(toolSpan, 'klea.tool.name')).toBe('read_file');
    expect(attr(toolSpan, 'klea.tool.outcome')).toBe('ok');
    expect(JSON.stringify(trace)).not.toContain('a.txt');
    expect(JSON.stringify(trace)).not.toContain('b.txt');
    // MCP reads under the tool calls; others read the files a step names for its pick, under the pick's activity
    // (or the Planner's, which made the first round's picks), and the files the request names for the answer.
    const reads = trace.filter((s) => s.name === 'mcp tools/call workspace.read_file').map((s) => ancestry(s)[1]);
    expect(reads).toContain('RunActivity:callTool');
    const readers = [
      'RunActivity:callTool',
      'RunActivity:writePlan',
      'RunActivity:pickTools',
      'RunActivity:composeAnswer',
    ];
    expect(reads.every((a) => readers.includes(a))).toBe(true);

    // ---------------------------------------------------------------- metrics
    const reported = fake.reportedUsage();
    const worker = await (await fetch(`http://${env.metricsAddress()}/metrics`)).text();
    expect(sumOf(worker, 'klea_model_calls_total', { model: 'fake-model' })).toBe(reported.modelCalls);
    expect(sumOf(worker, 'klea_model_tokens_total', { direction: 'input' })).toBe(reported.inputTokens);
    expect(sumOf(worker, 'klea_model_tokens_total', { direction: 'output' })).toBe(reported.outputTokens);
    expect(sample(worker, 'klea_model_calls_total', { node: 'write_plan', model: 'fake-model' })).toBe(1);
    expect(sample(worker, 'klea_tool_calls_total', { server: 'workspace', tool: 'read_file', outcome: 'ok' })).toBe(2);
    expect(sample(worker, 'klea_tool_call_seconds_count', { server: 'workspace', tool: 'read_file' })).toBe(2);
    expect(sample(worker, 'klea_permission_decisions_total', { decision: 'allow_once' })).toBe(1);
    expect(sample(worker, 'klea_tasks_finished_total', { status: 'done' })).toBe(1);
    expect(sample(worker, 'klea_sandbox_refusals_total')).toBe(0);
    // The Temporal SDK's own, from the Core runtime, on the same endpoint.
    expect(sumOf(worker, 'temporal_workflow_completed_total', { workflow_type: 'taskWorkflow' })).toBe(1);
    expect(sumOf(worker, 'temporal_activity_execution_latency_seconds_count', { activity_type: 'callTool' })).toBe(2);

    const apiText = (await request(app).get('/metrics')).text;
    expect(sample(apiText, 'klea_api_requests_total', { method: 'POST', route: '/tasks', status: '201' })).toBe(1);
    expect(sample(apiText, 'klea_api_request_seconds_count', { method: 'POST', route: '/tasks', status: '201' })).toBe(
      1
    );
    expect(sample(apiText, 'klea_api_open_event_streams')).toBe(0);
  }, 120_000);

  it('an update its validator refused, then one accepted: the run replays from history as it ran', async () => {
    // The refused update's workflow task never reaches history; the accepted one must complete in the same place
    // on replay as it did live (the tracing interceptors add no microtask and read no SDK flag).
    fake.on('write_plan', { call: plan([step('s1', 'Say hi', { needs_tool: false })], { before_work: true }) });
    fake.on('do_step', { content: 'hi' });
    fake.on('compose_answer', { content: 'hi' });
    const { taskId } = (await request(app).post('/tasks').send({ prompt: 'say hi', projectDir: project.dir })).body;
    const task = await TaskDriver.attach(env, taskId);
    const review = await task.waitFor('review_requested');
    const stale = await request(app).post(`/tasks/${taskId}/review`).send({ decision: 'approve', planHash: 'stale' });
    expect(stale.status).toBe(409);
    const ok = await request(app)
      .post(`/tasks/${taskId}/review`)
      .send({ decision: 'approve', planHash: review.planHash });
    expect(ok.status).toBe(200);
    expect((await task.result()).status).toBe('done');

    const history = await env.client.workflow.getHandle(taskId).fetchHistory();
    // A traced run: its start carried the trace context, so the tracing interceptors were in play.
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(Object.keys(started?.header?.fields ?? {})).toContain('_tracer-data');
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: process.env.KLEA_TEST_WORKFLOW_BUNDLE! }, sinks: workerSinks(undefined) },
        history,
        taskId
      )
    ).resolves.toBeUndefined();
  }, 60_000);
});
