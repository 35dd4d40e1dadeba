/**
 * Sessions that sleep: what a sleeping session costs a worker, and what waking one adds to a message.
 *
 * - Cost (goal: nothing). A Klea worker runs alone in a child process (bench/memory-worker.ts, as the memory
 *   benchmark runs it) with the Temporal SDK's Prometheus metrics on. `SESSIONS` sessions each take a message and
 *   go to sleep after `session.idle_close_ms`. The worker is read three times, after a full garbage collection
 *   each time: before they start (after `WARM` sessions have paid what is paid once), while they are awake and
 *   idle, and once they all sleep. What a worker holds for a workflow is its run in the workflow cache (a parked
 *   run costs about 0.25 MiB, the memory row above): the goal is that it holds none for a sleeping session; the heap
 *   figures beside it show what an awake session holds and that a sleeping one holds nothing more than the garbage
 *   collector's noise (about ±1 KiB a session). Then nothing is sent for `QUIET_MS`, and what happened meanwhile is counted on
 *   both sides: the workflow tasks the worker polled and completed (its SDK metrics), and on the server the events
 *   added to the sessions' runs and the runs started for them (each run described before and after).
 * - Waking (goal: at most 1.5 × a message to an awake session). Through the API, as a client sends them: a message
 *   to a session that is awake, and one to a session that sleeps (the API finds its run ended, reads what it
 *   returned and sends the message with a start of its next run: update-with-start), `SAMPLES` of each, taken in
 *   turn, after `WARMUP` of each that are not counted. The ratio is of the medians.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../api/app';
import type { Config } from '../common/config';
import type { SessionInput } from '../common/session';
import { findFreePort } from '../runtime/ports';
import type { sessionWorkflow } from '../workflows';
import { submitUpdate } from '../workflows/session/messages';
import { untilPolling } from '../test/support/until';
import type { BenchResult } from './history';
import { answer, read, threadHeap } from './memory';
import type { MemoryReading, MemoryWorkerArgs } from './memory-worker';
import { runAlone, type BenchEnv } from './support';

const SESSIONS = 200;
/**
 * Sessions that wake and sleep before the first reading: as many as are measured, since a worker's first few
 * hundred runs grow its heap once (code compiled, caches filled) whatever becomes of them.
 */
const WARM = SESSIONS;
const BATCH = 25;
/** Long enough for every session to have taken its message before the first one sleeps. */
const IDLE_CLOSE_MS = 30_000;
const QUIET_MS = 20_000;

const SAMPLES = 15;
const WARMUP = 3;

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Workflow tasks the worker completed, from the SDK's Prometheus text (summed over its labels). */
async function workflowTasks(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('temporal_workflow_task_execution_latency_seconds_count'))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** Each session's latest run as the server describes it. */
async function runsOf(env: BenchEnv, ids: string[]) {
  return Promise.all(
    ids.map(async (id) => {
      const d = await env.client.workflow.getHandle(id).describe();
      return { runId: d.runId, status: d.status.name, events: d.historyLength };
    })
  );
}

async function untilAsleep(env: BenchEnv, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await runsOf(env, ids);
    if (runs.every((r) => r.status === 'COMPLETED')) return;
    if (Date.now() > deadline)
      throw new Error(`${runs.filter((r) => r.status !== 'COMPLETED').length} session(s) still awake`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Starts sessions on `queue` that sleep after `idleCloseMs`, each taking one message; returns their workflow ids. */
async function sessionsWithAMessage(
  env: BenchEnv,
  queue: string,
  projectDir: string,
  prefix: string,
  count: number,
  idleCloseMs: number
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - i) }, (_, j) => `${prefix}-${i + j}-${Date.now()}`);
    await Promise.all(
      batch.map(async (sessionId) => {
        const input: SessionInput = { sessionId, projectDir, idleCloseMs };
        const handle = await env.client.workflow.start<typeof sessionWorkflow>('sessionWorkflow', {
          taskQueue: queue,
          workflowId: `session-${sessionId}`,
          args: [input],
        });
        await handle.executeUpdate(submitUpdate, { args: [{ text: 'hello' }] });
      })
    );
    ids.push(...batch.map((s) => `session-${s}`));
  }
  return ids;
}

export async function benchSleepCost(env: BenchEnv): Promise<BenchResult[]> {
  const projectDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-')));
  const queue = `bench-sessions-${Date.now()}`;
  const metricsAddress = `127.0.0.1:${await findFreePort()}`;
  const metricsUrl = `http://${metricsAddress}/metrics`;
  const args: MemoryWorkerArgs = {
    kind: 'klea',
    address: env.server.address,
    taskQueue: queue,
    bundlePath: path.join(__dirname, '..', 'workflow-bundle.js'),
    modelUrl: env.fake.url,
    projectDir,
    cachedWorkflows: 2 * (WARM + SESSIONS),
    sdkMetricsAddress: metricsAddress,
  };
  const child = fork(path.join(__dirname, 'memory-worker.js'), [JSON.stringify(args)], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  env.fake.always('route_request', { call: { route: 'chat', reply: 'noted' } });
  try {
    await answer(child, 'started');
    await untilPolling(env.client, env.config.temporal.namespace, queue);
    // What is paid once (the workflow sandbox, code compiled on first use, the model's connection) is paid first.
    const warm = await sessionsWithAMessage(env, queue, projectDir, 'bench-warm', WARM, 1000);
    await untilAsleep(env, warm, 60_000);
    const before = await read(child);

    const ids = await sessionsWithAMessage(env, queue, projectDir, 'bench-sleep', SESSIONS, IDLE_CLOSE_MS);
    const awake = await read(child);
    const awakeRuns = await runsOf(env, ids);
    if (awakeRuns.some((r) => r.status !== 'RUNNING'))
      throw new Error('a session slept before all had taken their message: raise IDLE_CLOSE_MS');
    await untilAsleep(env, ids, IDLE_CLOSE_MS + 120_000);
    const asleep = await read(child);

    // Nothing is sent for QUIET_MS: what does the worker, and the server, do for the sleeping sessions meanwhile?
    const tasksBefore = await workflowTasks(metricsUrl);
    const runsBefore = await runsOf(env, ids);
    await new Promise((r) => setTimeout(r, QUIET_MS));
    const tasksAfter = await workflowTasks(metricsUrl);
    const runsAfter = await runsOf(env, ids);
    const quietTasks = tasksAfter - tasksBefore;
    const newEvents = runsAfter.reduce((sum, r, i) => sum + (r.events - runsBefore[i].events), 0);
    const newRuns = runsAfter.filter((r, i) => r.runId !== runsBefore[i].runId || r.status !== 'COMPLETED').length;

    const per = (a: MemoryReading, f: (r: MemoryReading) => number) => (f(a) - f(before)) / SESSIONS;
    const heldAsleep = asleep.cachedWorkflows - before.cachedWorkflows;
    return [
      {
        name: `worker memory of a sleeping session (${SESSIONS} asleep): runs the worker holds for them in its workflow cache ÷ ${SESSIONS}`,
        figures: [
          ['runs in the worker cache, awake and idle', `${awake.cachedWorkflows - before.cachedWorkflows}`],
          ['runs in the worker cache, asleep', `${heldAsleep}`],
          ['workflow-thread heap per session, awake', kib(per(awake, threadHeap))],
          ['workflow-thread heap per session, asleep', kib(per(asleep, threadHeap))],
          ['main-thread heap per session, awake', kib(per(awake, (r) => r.main.usedHeapSize))],
          ['main-thread heap per session, asleep', kib(per(asleep, (r) => r.main.usedHeapSize))],
          ['RSS per session, awake', kib(per(awake, (r) => r.rss))],
          ['RSS per session, asleep', kib(per(asleep, (r) => r.rss))],
        ],
        ratio: heldAsleep / SESSIONS,
        goal: '0 (no run held)',
        ok: heldAsleep === 0,
      },
      {
        name: `workflow tasks of a sleeping session (${SESSIONS} asleep, nothing sent for ${QUIET_MS / 1000} s) ÷ ${SESSIONS}`,
        figures: [
          ['workflow tasks the worker completed (SDK metrics)', `${quietTasks}`],
          ['events added to the sessions’ runs (server)', `${newEvents}`],
          ['runs started for them (server)', `${newRuns}`],
        ],
        ratio: quietTasks / SESSIONS,
        goal: '0',
        ok: quietTasks === 0 && newEvents === 0 && newRuns === 0,
      },
    ];
  } finally {
    env.fake.reset();
    const exited = new Promise((r) => child.once('exit', r));
    if (child.connected) child.send({ kind: 'stop' });
    await exited;
  }
}

export async function benchWake(env: BenchEnv): Promise<BenchResult> {
  const projectDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-bench-')));
  const appWith = (idleCloseMs: number) => {
    const config: Config = { ...env.config, session: { idle_close_ms: idleCloseMs } };
    return http.createServer(createApp({ client: env.client, config }));
  };
  /** Sessions made here sleep after 1.5 s idle; the other API's runs stay awake for an hour. */
  const dozy = appWith(1500);
  const awake = appWith(3_600_000);
  const servers = [dozy, awake];
  for (const s of servers) await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const url = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  const post = async (s: http.Server, p: string, body: unknown) => {
    const res = await fetch(`${url(s)}${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const newSession = async (s: http.Server) => {
    const { sessionId } = (await post(s, '/sessions', { projectDir })) as { sessionId: string };
    await post(s, `/sessions/${sessionId}/messages`, { text: 'hello' });
    return sessionId;
  };
  const timed = async (sessionId: string) => {
    const t0 = performance.now();
    const reply = await post(awake, `/sessions/${sessionId}/messages`, { text: 'and again' });
    const ms = performance.now() - t0;
    if (reply.reply !== 'noted') throw new Error(`unexpected reply: ${JSON.stringify(reply)}`);
    return ms;
  };
  env.fake.always('route_request', { call: { route: 'chat', reply: 'noted' } });
  try {
    const n = WARMUP + SAMPLES;
    const sleeping: string[] = [];
    for (let i = 0; i < n; i++) sleeping.push(await newSession(dozy));
    const awakeOnes: string[] = [];
    for (let i = 0; i < n; i++) awakeOnes.push(await newSession(awake));
    await untilAsleep(
      env,
      sleeping.map((id) => `session-${id}`),
      60_000
    );
    const toAwake: number[] = [];
    const toSleeping: number[] = [];
    for (let i = 0; i < n; i++) {
      // In turn, so that both see the same machine.
      const a = await timed(awakeOnes[i]);
      const w = await timed(sleeping[i]);
      if (i >= WARMUP) {
        toAwake.push(a);
        toSleeping.push(w);
      }
    }
    const awakeMs = median(toAwake);
    const wakeMs = median(toSleeping);
    const ratio = wakeMs / awakeMs;
    return {
      name: 'waking a sleeping session: a message to a sleeping session ÷ a message to an awake one (through the API)',
      figures: [
        [`a message to an awake session (median of ${SAMPLES})`, `${awakeMs.toFixed(1)} ms`],
        [`a message that wakes a sleeping session (median of ${SAMPLES})`, `${wakeMs.toFixed(1)} ms`],
        ['added by waking', `${(wakeMs - awakeMs).toFixed(1)} ms`],
      ],
      ratio,
      goal: '≤ 1.5',
      ok: ratio <= 1.5,
    };
  } finally {
    env.fake.reset();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  }
}

export async function benchSessions(env: BenchEnv): Promise<BenchResult[]> {
  return [...(await benchSleepCost(env)), await benchWake(env)];
}

if (require.main === module) runAlone(benchSessions);
