/**
 * Event streams watching parked tasks: 200 tasks wait for a review, one SSE client follows each through a real
 * API server for 60 s, and the Temporal server's own metrics (`service_requests{operation="QueryWorkflow"}`) count
 * the workflow queries it served meanwhile (goal: at most 6 per client per minute). Then 20 of the tasks are
 * approved through the API, their streams must end after the final `status`, and reading the 20 finished tasks'
 * events again must cost no query at all.
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createApp } from '../api/app';
import { projectDirResolver } from '../api/projects';
import type { KleaEvent } from '../common/events';
import { KleaStatus } from '../common/search-attributes';
import { REPO_ROOT } from '../runtime/repo-root';
import type * as Sse from '../web/sse';
import type { BenchResult } from './history';
import { scriptParkedTasks, runAlone, startKleaTask, type BenchEnv } from './support';

// The parser the page and the CLI use; plain JavaScript served as it is, so not in the build (as in cli/page-modules.ts).
const { createFrameParser } = createRequire(__filename)(path.join(REPO_ROOT, 'web', 'sse.js')) as typeof Sse;

/** Requests of one operation the Temporal server's frontend served, from its Prometheus metrics. */
async function serverRequests(metricsUrl: string | null, operation: string): Promise<number> {
  if (!metricsUrl)
    throw new Error("the event-streams benchmark counts the dev server's requests: it needs its metrics");
  const text = await (await fetch(metricsUrl)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    // Each service (frontend, history, matching) counts a request it handles: the frontend's are the clients'.
    if (!line.startsWith('service_requests{') || !line.includes('service_name="frontend"')) continue;
    if (!line.includes(`operation="${operation}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * The server's count once it has caught up: its metrics are reported on an interval (about a second), so a request
 * made a moment ago may not be counted yet. Read until two readings a report interval apart agree.
 */
async function settledRequests(metricsUrl: string | null, operation: string): Promise<number> {
  let last = await serverRequests(metricsUrl, operation);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, METRICS_REPORT_MS));
    const now = await serverRequests(metricsUrl, operation);
    if (now === last) return now;
    last = now;
  }
  return last;
}
const METRICS_REPORT_MS = 1500;

interface Follower {
  events: KleaEvent[];
  /** The stream ended after the task's final status. */
  ended: boolean;
  /** Times the stream ended early (a stream_error) and the client resumed with Last-Event-ID, as the CLI does. */
  reconnects: number;
  close(): void;
}

const isFinal = (e: KleaEvent | undefined) =>
  e?.type === 'status' && ['done', 'failed', 'cancelled'].includes((e as { status: string }).status);

function follow(port: number, path: string): Promise<Follower> {
  let req: http.ClientRequest;
  let closed = false;
  const f: Follower = {
    events: [],
    ended: false,
    reconnects: 0,
    close: () => {
      closed = true;
      req.destroy();
    },
  };
  return new Promise((resolve, reject) => {
    const connect = () => {
      const last = f.events.at(-1)?.seq;
      req = http.get(
        {
          host: '127.0.0.1',
          port,
          path,
          headers: { accept: 'text/event-stream', ...(last ? { 'last-event-id': String(last) } : {}) },
        },
        (res) => {
          if (res.statusCode !== 200) return reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
          const frames = createFrameParser();
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            for (const frame of frames.push(chunk)) {
              if (frame.id === undefined || !frame.data) continue;
              const e = JSON.parse(frame.data) as KleaEvent;
              if (e.seq !== (f.events.at(-1)?.seq ?? 0) + 1) reject(new Error(`${path}: event ${e.seq} out of order`));
              f.events.push(e);
            }
          });
          res.on('end', () => {
            if (isFinal(f.events.at(-1))) f.ended = true;
            else if (!closed) {
              f.reconnects++;
              setTimeout(connect, 500);
            }
          });
          resolve(f);
        }
      );
      req.on('error', (e) => (String(e).includes('socket hang up') ? undefined : reject(e)));
    };
    connect();
  });
}

async function until(what: string, ready: () => boolean | Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`event-streams bench: never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

export async function benchEventStreams(
  env: BenchEnv,
  opts: { tasks?: number; seconds?: number; finished?: number } = {}
): Promise<BenchResult> {
  const tasks = opts.tasks ?? 200;
  const seconds = opts.seconds ?? 60;
  const finishedCount = Math.min(opts.finished ?? 20, tasks);
  const sessionId = `s-evbench${Date.now().toString(36)}`;
  scriptParkedTasks(env.fake, 'wait for a review');
  env.fake.always('do_step', { content: 'done' });
  env.fake.always('compose_answer', { content: 'done' });

  // The configured project directory, as the API would resolve it for a task that names none.
  const projectDir = projectDirResolver(env.config)(undefined);
  // Park the tasks (started as sessions start them, with ids the API's task routes accept).
  const ids = Array.from({ length: tasks }, (_, i) => `task-${sessionId}-${i + 1}`);
  for (let i = 0; i < tasks; i += 50) {
    await Promise.all(
      ids.slice(i, i + 50).map((taskId) =>
        startKleaTask(env.client, env.config.temporal.task_queue, {
          taskId,
          sessionId,
          prompt: 'wait for a review',
          projectDir,
        })
      )
    );
  }
  // Waited for through describe (search attributes), so that no query is made before the count starts.
  const waiting = new Set(ids);
  await until(
    `${tasks} tasks waiting for review`,
    async () => {
      await Promise.all(
        [...waiting].map(async (id) => {
          const desc = await env.client.workflow.getHandle(id).describe();
          if (desc.typedSearchAttributes.get(KleaStatus) === 'awaiting_review') waiting.delete(id);
        })
      );
      return waiting.size === 0;
    },
    600_000
  );

  const server = http.createServer(createApp({ client: env.client, config: env.config }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const followers: Follower[] = [];
  try {
    const queries0 = await serverRequests(env.serverMetricsUrl, 'QueryWorkflow');
    const describes0 = await serverRequests(env.serverMetricsUrl, 'DescribeWorkflowExecution');
    const t0 = performance.now();
    followers.push(...(await Promise.all(ids.map((id) => follow(port, `/tasks/${id}/events`)))));
    await until('every client has the review request', () =>
      followers.every((f) => f.events.some((e) => e.type === 'review_requested'))
    );
    await new Promise((r) => setTimeout(r, Math.max(0, seconds * 1000 - (performance.now() - t0))));
    const minutes = (performance.now() - t0) / 60_000;
    const queries = (await serverRequests(env.serverMetricsUrl, 'QueryWorkflow')) - queries0;
    const describes = (await serverRequests(env.serverMetricsUrl, 'DescribeWorkflowExecution')) - describes0;
    const perClientMinute = queries / tasks / minutes;

    // Approve some through the API: their streams follow them to the end, then reading them again asks nothing.
    const approved = ids.slice(0, finishedCount);
    await Promise.all(
      approved.map(async (id, i) => {
        const review = followers[i].events.find((e) => e.type === 'review_requested') as { planHash: string };
        const res = await fetch(`http://127.0.0.1:${port}/tasks/${id}/review`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ decision: 'approve', planHash: review.planHash }),
        });
        if (!res.ok) throw new Error(`approving ${id}: HTTP ${res.status} ${await res.text()}`);
      })
    );
    await until('the approved tasks’ streams end after their final status', () =>
      followers.slice(0, finishedCount).every((f) => f.ended)
    );
    const notDone = followers
      .slice(0, finishedCount)
      .filter((f) => (f.events.at(-1) as { status?: string }).status !== 'done');
    if (notDone.length) throw new Error(`event-streams bench: ${notDone.length} approved tasks did not finish done`);
    // The queries that read the finished tasks' last events are counted before, and any the re-reads make after.
    const queriesDone0 = await settledRequests(env.serverMetricsUrl, 'QueryWorkflow');
    const rereads = await Promise.all(approved.map((id) => follow(port, `/tasks/${id}/events`)));
    await until('the re-read streams end', () => rereads.every((f) => f.ended));
    const rereadQueries = (await settledRequests(env.serverMetricsUrl, 'QueryWorkflow')) - queriesDone0;
    const complete = rereads.every((f, i) => f.events.length === followers[i].events.length);
    if (!complete) throw new Error('event-streams bench: a re-read stream did not carry every event');

    return {
      name: `event streams: workflow queries per SSE client per minute, ${tasks} tasks parked at a review`,
      figures: [
        ['clients × time', `${tasks} × ${(minutes * 60).toFixed(0)} s`],
        ['QueryWorkflow served (Temporal server metrics)', String(queries)],
        [
          'DescribeWorkflowExecution served',
          `${describes} (${(describes / tasks / minutes).toFixed(1)} per client per minute)`,
        ],
        [`queries to re-read ${finishedCount} finished tasks`, String(rereadQueries)],
        [
          'streams resumed with Last-Event-ID after a stream_error',
          String(followers.reduce((n, f) => n + f.reconnects, 0)),
        ],
      ],
      ratio: perClientMinute,
      goal: '≤ 6, and 0 to re-read finished tasks',
      ok: perClientMinute <= 6 && rereadQueries === 0,
    };
  } finally {
    for (const f of followers) f.close();
    server.closeAllConnections();
    server.close();
    env.fake.reset();
    // The parked tasks would otherwise wait for ever in this dev server's memory.
    await Promise.all(
      ids.map((id) =>
        env.client.workflow
          .getHandle(id)
          .terminate('benchmark over')
          .catch(() => undefined)
      )
    );
  }
}

if (require.main === module) runAlone(benchEventStreams);
