/**
 * Klea on a real Temporal cluster (PostgreSQL, the server's four services: test/cluster/global-setup.ts) with two
 * worker hosts, h1 and h2, each a worker process with its own host id (task queue `klea-host-<id>`) and data
 * directory, and the API as a process of its own, driven over REST as a user would:
 *
 * - the task path: a session's project has a home, and every activity that reads or changes it runs there;
 * - a rewind with two hosts: each task's files are restored by the host that holds its project;
 * - a host killed in the middle of a step: nothing is lost, nothing is applied twice, and the task says it waits
 *   for the host (`waiting_for_host`) until the host is back;
 * - a host cut off (frozen) while an edit is about to run, then back: the edit takes effect once;
 * - a task waiting for a gone host can be cancelled;
 * - Temporal's SQL visibility on PostgreSQL: the inbox finds a task by `KleaStatus = "awaiting_review"`, and lists
 *   sessions most recently active first;
 * - a session that went to sleep wakes with its home, and its next task works there.
 *
 * Every pause is deterministic: each worker asks the test before any activity runs (test/support/gated-worker.ts),
 * so the test holds the exact call it kills a host under; nothing waits on a timer it hopes is long enough.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { Connection } from '@temporalio/client';
import { findFreePort } from '../../runtime/ports';
import { FakeModel, type RecordedRequest } from '../support/fake-model';
import { addHost, cutOff, inHost, reconnect, removeHost, type Bridge, type NetHost } from '../support/netns';
import { makeProject, plan, step } from '../support/task-driver';

const ROOT = path.join(__dirname, '..', '..');
const address = process.env.KLEA_TEST_CLUSTER_ADDRESS!;
/**
 * The bridge the run made for the hosts (test/cluster/global-setup.ts): each host is then a network namespace of its
 * own, with its own address, that reaches the cluster, the model and the gate only over the bridge. Absent (no root,
 * no `ip`): the hosts share the machine's network, and a host is cut off by freezing it.
 */
const bridge: Bridge | null = process.env.KLEA_TEST_CLUSTER_BRIDGE
  ? (JSON.parse(process.env.KLEA_TEST_CLUSTER_BRIDGE) as Bridge)
  : null;
/** Where the test's own servers (the model, the gate) listen: where the hosts can reach them. */
const listenIp = bridge?.ip ?? '127.0.0.1';
const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-cluster-')));
const taskQueue = `cluster-${process.pid}`;
const HOSTS = ['h1', 'h2'] as const;
/** Two more hosts, of group g1, that share the projects under SHARED (test 'a group of hosts', at the end). */
const GROUP_HOSTS = ['h3', 'h4'] as const;
type Host = (typeof HOSTS)[number] | (typeof GROUP_HOSTS)[number];
const SHARED = path.join(dir, 'shared');
/** The group's own directory on the shared volume: leases, checkpoints, workspace state. */
const GROUP_DIR = path.join(dir, 'group-g1');
/** How long a group host's lease on a project lasts unrenewed (worker.group_lease_ms). */
const LEASE_MS = 3000;
/** How long a home activity waits for its host before the task says so (worker.host_wait_ms, the API's). */
const HOST_WAIT_MS = 1500;
/** How long a session stays awake with nothing to do (session.idle_close_ms, the API's). */
const IDLE_CLOSE_MS = 3000;

/** One activity about to start, as a gated worker reports it. */
interface GateCall {
  workflowId: string;
  activityType: string;
  activityId: string;
  attempt: number;
  taskQueue: string;
  host: Host | null;
}

let fake: FakeModel;
let gate: http.Server;
let gateUrl: string;
let api: ChildProcess | undefined;
let apiUrl: string;
const workers: Record<Host, ChildProcess | null> = { h1: null, h2: null, h3: null, h4: null };
/** Each host's network namespace, when the run has a bridge. */
const net: Partial<Record<Host, NetHost>> = {};
/** Every activity the hosts ran, in order. */
const ran: GateCall[] = [];
/** An activity attempt that failed, as a gated worker reports it after the fact. */
interface FailedCall {
  phase: 'failed';
  activityId: string;
  attempt: number;
  failure: string;
}
const failed: FailedCall[] = [];
/** What the gate does with a call; the activity runs when the promise settles. */
let onActivity: (call: GateCall) => Promise<void> = async () => undefined;

const hostDataDir = (h: Host) => path.join(dir, 'hosts', h);
const callLog = (h: Host) => path.join(dir, `${h}.calls.jsonl`);

function configFile(name: string, extra: Record<string, unknown>): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    stringify({
      model: { name: 'fake', base_url: fake.url, api_key: 'k', timeout_ms: 10_000 },
      temporal: { address, task_queue: taskQueue },
      project: { allowed_roots: [realpathSync(os.tmpdir())] },
      ...extra,
    })
  );
  return file;
}

function collect(child: ChildProcess): () => string {
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  return () => out;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 150_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts host `h`'s worker (gated) and waits until it polls all its queues. */
async function startHost(h: Host): Promise<void> {
  const inGroup = (GROUP_HOSTS as readonly string[]).includes(h);
  const argv = [process.execPath, path.join(ROOT, 'dist', 'test', 'support', 'gated-worker.js')];
  const [command, args] = net[h] ? inHost(net[h], argv) : [argv[0]!, argv.slice(1)];
  const child = spawn(command, args, {
    env: {
      ...process.env,
      KLEA_TEST_GATE_URL: gateUrl,
      KLEA_CONFIG: configFile(`host-${h}`, {
        worker: {
          sticky_queue_timeout_ms: 1000,
          ...(inGroup ? { group_id: 'g1', group_dir: GROUP_DIR, group_lease_ms: LEASE_MS } : {}),
        },
        mcp: { workspace: { call_log: callLog(h) } },
        ...(inGroup ? { project: { allowed_roots: [SHARED] } } : {}),
      }),
      KLEA_HOST_ID: h,
      KLEA_DATA_DIR: hostDataDir(h),
      KLEA_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const out = collect(child);
  await until(`host ${h} polling`, () => {
    if (child.exitCode !== null) throw new Error(`host ${h} exited: ${out()}`);
    return /worker polling/.test(out());
  });
  workers[h] = child;
}

/** SIGKILL to host `h`'s worker and everything it started (its workspace servers): the host is gone. */
async function killHost(h: Host): Promise<void> {
  const child = workers[h];
  workers[h] = null;
  if (!child?.pid) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  await exited;
}

async function rest<T = Record<string, unknown>>(method: string, route: string, body?: unknown) {
  const res = await fetch(`${apiUrl}${route}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

type Health = {
  status: string;
  hosts?: Array<{ hostId: string; status: string; pollers: number; roots?: string[]; group?: string }>;
};
type TaskState = {
  status: string;
  home?: { hostId: string } | null;
  waitingForHost?: string | null;
  steps: Array<{ id: string; status: string }>;
};
type Event = { seq: number; type: string; hostId?: string; detail?: string; status?: string };

const taskState = async (id: string) => (await rest<TaskState>('GET', `/tasks/${id}`)).body;
/**
 * The task's events, or none while the API cannot read them: a query goes to a worker, and one that holds the task
 * may be the host that is frozen (the API answers an error until Temporal hands the task to another).
 */
const taskEvents = async (id: string) => {
  const r = await rest<{ events?: Event[] }>('GET', `/tasks/${id}/events?after=0`);
  return r.status === 200 ? (r.body.events ?? []) : [];
};
const ended = (id: string) =>
  until(`task ${id} ended`, async () => {
    const s = await rest<TaskState>('GET', `/tasks/${id}`);
    return s.status === 200 && ['done', 'failed', 'cancelled', 'rewound'].includes(s.body.status) ? s.body : undefined;
  });

/** A session whose project is on host `h`, and a task in it; the task's prompt names the file it works on. */
async function startTask(h: Host | undefined, file: string, projectDir: string) {
  const session = await rest<{ sessionId: string }>('POST', '/sessions', {
    projectDir,
    ...(h ? { host: h } : {}),
  });
  expect(session.status).toBe(201);
  const task = await rest<{ taskId: string }>('POST', '/tasks', {
    prompt: `Write and then edit FILE=${file}`,
    sessionId: session.body.sessionId,
  });
  expect(task.status).toBe(201);
  return { sessionId: session.body.sessionId, taskId: task.body.taskId };
}

/** The model: a write then an edit of the file the request names, the same answer to the same request. */
function scriptModel() {
  const fileOf = (req: RecordedRequest) => /FILE=(\S+)/.exec(req.text)?.[1] ?? 'missing';
  fake.always('write_plan', (req) => ({
    call: plan([step('w', `Write FILE=${fileOf(req)}`), step('e', `Edit FILE=${fileOf(req)}`, { depends_on: ['w'] })]),
  }));
  fake.always('pick_tools', (req) => {
    const f = fileOf(req);
    const id = (req.toolSchemas[0]?.parameters as { properties: { step_id: { enum: string[] } } }).properties.step_id
      .enum[0];
    const call =
      id === 'w'
        ? { name: 'workspace__write_file', args: { path: f, content: 'version 1\n' } }
        : { name: 'workspace__edit_file', args: { path: f, old_string: 'version 1', new_string: 'version 2' } };
    return { calls: [{ name: call.name, args: { step_id: id, ...call.args } }] };
  });
  fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'fine' } });
  fake.always('do_step', { content: 'done' });
  fake.always('compose_answer', { content: 'all done' });
}

/** What the workspace server of host `h` applied to `file` (its audit log). */
function applied(h: Host, file: string) {
  const lines = existsSync(callLog(h))
    ? readFileSync(callLog(h), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as { tool: string; args: unknown; replayed?: boolean; changed?: boolean; isError?: boolean }
        )
    : [];
  const mine = lines.filter((l) => JSON.stringify(l.args).includes(file));
  return {
    writes: mine.filter((l) => l.tool === 'write_file' && !l.replayed && l.changed === true).length,
    edits: mine.filter((l) => l.tool === 'edit_file' && !l.replayed && !l.isError).length,
  };
}

/** The activities of a task (and of the rewinds of it) that touch its project, with the host each ran on. */
function projectActivities(taskId: string) {
  const project = [
    'projectContextInfo',
    'writePlan',
    'pickTools',
    'callTool',
    'composeAnswer',
    'prepareRewind',
    'restoreFiles',
  ];
  return ran.filter(
    (c) => (c.workflowId === taskId || c.workflowId.startsWith(`rewind-${taskId}-`)) && project.includes(c.activityType)
  );
}

/** Whether host `h`'s checkpoint store (in its own data directory) holds a task's journal for the project. */
function checkpointsOn(h: Host, projectDir: string): boolean {
  const root = path.join(hostDataDir(h), 'checkpoints');
  if (!existsSync(root)) return false;
  return readdirSync(root).some((p) => {
    const meta = path.join(root, p, 'project.json');
    const tasks = path.join(root, p, 'tasks');
    return (
      existsSync(meta) &&
      readFileSync(meta, 'utf8').includes(JSON.stringify(projectDir)) &&
      existsSync(tasks) &&
      readdirSync(tasks).length > 0
    );
  });
}

beforeAll(async () => {
  gate = http.createServer((req, res) => {
    let body = '';
    req.on('data', (b: Buffer) => (body += b.toString()));
    req.on('end', () => {
      const said = JSON.parse(body) as GateCall | FailedCall;
      if ('phase' in said) {
        failed.push(said);
        res.end('noted');
        return;
      }
      const call = said;
      ran.push(call);
      const answer = () => {
        if (!res.destroyed) res.end('go');
      };
      onActivity(call).then(answer, answer);
    });
  });
  await new Promise<void>((r) => gate.listen(0, listenIp, () => r()));
  gateUrl = `http://${listenIp}:${(gate.address() as AddressInfo).port}/`;
  fake = await FakeModel.start({ host: listenIp });
  if (bridge) HOSTS.forEach((h, i) => (net[h] = addHost(bridge, h, i + 1)));
  scriptModel();
  await Promise.all(HOSTS.map(startHost));
  const port = await findFreePort();
  apiUrl = `http://127.0.0.1:${port}`;
  api = spawn(process.execPath, [path.join(ROOT, 'dist', 'api', 'index.js')], {
    env: {
      ...process.env,
      KLEA_CONFIG: configFile('api', {
        worker: { host_wait_ms: HOST_WAIT_MS },
        // Sessions sleep soon after their last task, so one can be seen waking on the cluster.
        session: { idle_close_ms: IDLE_CLOSE_MS },
      }),
      KLEA_API_PORT: String(port),
      KLEA_DATA_DIR: path.join(dir, 'api-data'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const out = collect(api);
  await until('the API up, both hosts polling', async () => {
    if (api!.exitCode !== null) throw new Error(`the API exited: ${out()}`);
    try {
      const h = await rest<Health>('GET', '/healthz');
      return h.status === 200 && h.body.hosts?.filter((x) => x.status === 'ok').length === 2;
    } catch {
      return undefined;
    }
  });
}, 180_000);

afterAll(async () => {
  onActivity = async () => undefined;
  for (const h of [...HOSTS, ...GROUP_HOSTS]) await killHost(h);
  if (api?.pid) process.kill(-api.pid, 'SIGKILL');
  gate?.closeAllConnections();
  gate?.close();
  await fake?.close();
  for (const h of [...HOSTS, ...GROUP_HOSTS]) if (net[h]) removeHost(net[h]);
  // The hosts' data directories, call logs and configuration files.
  rmSync(dir, { recursive: true, force: true });
});

test('/healthz says which worker hosts poll their task queues', async () => {
  const { body } = await rest<Health>('GET', '/healthz');
  expect(body.status).toBe('ok');
  // Each with the project roots it holds (the hosts here hold the temporary directory, where the tests' projects are).
  const roots = [realpathSync(os.tmpdir())];
  expect(body.hosts).toEqual([
    { hostId: 'h1', taskQueue: 'klea-host-h1', status: 'ok', pollers: 1, roots },
    { hostId: 'h2', taskQueue: 'klea-host-h2', status: 'ok', pollers: 1, roots },
  ]);
  // Each host's worker runs in a network namespace of its own, where the run could make them.
  for (const h of HOSTS) {
    const host = net[h];
    if (!host) continue;
    const pids = spawnSync('ip', ['netns', 'pids', host.ns], { encoding: 'utf8' }).stdout.split('\n');
    expect(pids).toContain(String(workers[h]!.pid));
  }
});

test('the task path: every activity that reads or changes the project runs on its home host', async () => {
  const p = makeProject();
  const { taskId, sessionId } = await startTask('h2', 'notes.txt', p.dir);
  const state = await ended(taskId);
  expect(state.status).toBe('done');
  expect(state.home).toEqual({ hostId: 'h2' });
  expect(state.steps.map((s) => [s.id, s.status])).toEqual([
    ['w', 'done'],
    ['e', 'done'],
  ]);
  expect(readFileSync(path.join(p.dir, 'notes.txt'), 'utf8')).toBe('version 2\n');
  const session = await rest<{ home?: { hostId: string } }>('GET', `/sessions/${sessionId}`);
  expect(session.body.home).toEqual({ hostId: 'h2' });

  const calls = projectActivities(taskId);
  expect(calls.filter((c) => c.activityType === 'callTool')).toHaveLength(2);
  for (const c of calls) expect([c.activityType, c.host, c.taskQueue]).toEqual([c.activityType, 'h2', 'klea-host-h2']);
  expect(applied('h2', 'notes.txt')).toEqual({ writes: 1, edits: 1 });
  expect(applied('h1', 'notes.txt')).toEqual({ writes: 0, edits: 0 });
  expect(checkpointsOn('h2', p.dir)).toBe(true);
  expect(checkpointsOn('h1', p.dir)).toBe(false);
});

test('without a named host, the API gives a project the same home each time', async () => {
  const p = makeProject();
  const first = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir });
  const second = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir });
  const homeOf = async (id: string) =>
    (await rest<{ home?: { hostId: string } }>('GET', `/sessions/${id}`)).body.home?.hostId;
  const h = await homeOf(first.body.sessionId);
  expect(HOSTS).toContain(h);
  expect(await homeOf(second.body.sessionId)).toBe(h);
  const unknown = await rest<{ error: { code: string } }>('POST', '/sessions', { projectDir: p.dir, host: 'h9' });
  expect(unknown.status).toBe(400);
});

test('the API lists projects by host: GET /hosts, and GET /sessions?host=', async () => {
  const p1 = realpathSync(makeProject().dir);
  const p2 = realpathSync(makeProject().dir);
  const start = async (projectDir: string, host: Host) =>
    (await rest<{ sessionId: string }>('POST', '/sessions', { projectDir, host })).body.sessionId;
  const s1 = await start(p1, 'h1');
  const s2 = await start(p2, 'h2');
  const s3 = await start(p2, 'h2');
  type Listed = {
    hostId: string;
    taskQueue: string;
    status: string;
    pollers: number;
    projects: Array<{ projectDir: string; sessions: number; lastActivityAt: string | null }>;
  };
  // Visibility takes the new sessions in a moment after they start.
  const hosts = await until('both projects listed on their hosts', async () => {
    const r = await rest<{ hosts: Listed[]; complete: boolean }>('GET', '/hosts');
    const of = (h: string, dir: string) =>
      r.body.hosts.find((x) => x.hostId === h)?.projects.find((p) => p.projectDir === dir);
    return of('h1', p1) && of('h2', p2)?.sessions === 2 ? r.body : undefined;
  });
  expect(hosts.complete).toBe(true);
  const h1 = hosts.hosts.find((h) => h.hostId === 'h1')!;
  const h2 = hosts.hosts.find((h) => h.hostId === 'h2')!;
  expect([h1.taskQueue, h1.status, h1.pollers]).toEqual(['klea-host-h1', 'ok', 1]);
  expect([h2.taskQueue, h2.status, h2.pollers]).toEqual(['klea-host-h2', 'ok', 1]);
  expect(h1.projects.find((p) => p.projectDir === p1)).toMatchObject({
    sessions: 1,
    lastActivityAt: expect.any(String),
  });
  // Each project is listed on its own host only.
  expect(h1.projects.map((p) => p.projectDir)).not.toContain(p2);
  expect(h2.projects.map((p) => p.projectDir)).not.toContain(p1);

  const onH2 = await rest<{ sessions: Array<{ id: string; host: string | null; projectDir: string | null }> }>(
    'GET',
    '/sessions?host=h2&limit=100'
  );
  const ids = onH2.body.sessions.map((s) => s.id);
  expect(ids).toEqual(expect.arrayContaining([s2, s3]));
  expect(ids).not.toContain(s1);
  expect(new Set(onH2.body.sessions.map((s) => s.host))).toEqual(new Set(['h2']));
  expect(onH2.body.sessions.find((s) => s.id === s2)?.projectDir).toBe(p2);
  const bad = await rest<{ error: { message: string } }>('GET', '/sessions?host=H%202');
  expect(bad.status).toBe(400);
  expect(bad.body.error.message).toMatch(/query\.host/);
});

test('a rewind with two hosts: each task is restored by the host that holds its project', async () => {
  const p1 = makeProject();
  const p2 = makeProject();
  const t1 = await startTask('h1', 'one.txt', p1.dir);
  const t2 = await startTask('h2', 'two.txt', p2.dir);
  expect((await ended(t1.taskId)).status).toBe('done');
  expect((await ended(t2.taskId)).status).toBe('done');
  expect(readFileSync(path.join(p1.dir, 'one.txt'), 'utf8')).toBe('version 2\n');
  expect(readFileSync(path.join(p2.dir, 'two.txt'), 'utf8')).toBe('version 2\n');

  // Back to before the first step: both files were created by the task, so both are gone again.
  for (const t of [t1, t2]) {
    const r = await rest<{ status: string }>('POST', `/tasks/${t.taskId}/rewind`, { toStep: 'w', rerun: false });
    expect([r.status, r.body.status]).toEqual([200, 'rewound']);
  }
  expect(existsSync(path.join(p1.dir, 'one.txt'))).toBe(false);
  expect(existsSync(path.join(p2.dir, 'two.txt'))).toBe(false);
  expect((await ended(t1.taskId)).status).toBe('rewound');
  expect((await ended(t2.taskId)).status).toBe('rewound');
  for (const [t, h] of [
    [t1, 'h1'],
    [t2, 'h2'],
  ] as const) {
    const restores = projectActivities(t.taskId).filter((c) =>
      ['prepareRewind', 'restoreFiles'].includes(c.activityType)
    );
    expect(restores.map((c) => c.activityType).sort()).toEqual(['prepareRewind', 'restoreFiles']);
    for (const c of restores) expect([c.host, c.taskQueue]).toEqual([h, `klea-host-${h}`]);
  }
});

test('a host killed in the middle of a step: the task waits for it, then finishes with every change made once', async () => {
  const p = makeProject();
  let held: (() => void) | undefined;
  const editHeld = new Promise<GateCall>((resolve) => {
    onActivity = (call) =>
      new Promise<void>((release) => {
        // The edit's call on h1, the first time: held here while the test kills the host under it.
        const nth = ran.filter((c) => c.activityType === 'callTool' && c.workflowId === call.workflowId).length;
        if (call.activityType === 'callTool' && nth === 2 && !held) {
          held = release;
          resolve(call);
        } else release();
      });
  });
  const { taskId } = await startTask('h1', 'crash.txt', p.dir);
  const call = await editHeld;
  expect(call.workflowId).toBe(taskId);
  expect(readFileSync(path.join(p.dir, 'crash.txt'), 'utf8')).toBe('version 1\n');
  await killHost('h1');
  onActivity = async () => undefined;

  // The call is lost with its host; the step is tried again at the home, where no worker takes it: the task says so.
  const waiting = await until('waiting_for_host', async () =>
    (await taskEvents(taskId)).find((e) => e.type === 'waiting_for_host')
  );
  expect(waiting.hostId).toBe('h1');
  expect((await taskState(taskId)).waitingForHost).toBe('h1');
  expect(readFileSync(path.join(p.dir, 'crash.txt'), 'utf8')).toBe('version 1\n');

  await startHost('h1');
  const state = await ended(taskId);
  expect(state.status).toBe('done');
  expect(state.waitingForHost).toBeNull();
  const events = await taskEvents(taskId);
  expect(events.some((e) => e.type === 'status' && e.detail === 'host h1 is back')).toBe(true);
  expect(readFileSync(path.join(p.dir, 'crash.txt'), 'utf8')).toBe('version 2\n');
  // Nothing lost, nothing twice: one write and one edit applied, all on the project's host.
  expect(applied('h1', 'crash.txt')).toEqual({ writes: 1, edits: 1 });
  expect(applied('h2', 'crash.txt')).toEqual({ writes: 0, edits: 0 });
  for (const c of projectActivities(taskId)) expect(c.host).toBe('h1');
});

/** Cuts host `h` off: its network link (in a namespace of its own), else its processes (SIGSTOP). */
function cut(h: Host): () => void {
  const host = net[h];
  if (host) {
    cutOff(host);
    return () => reconnect(host);
  }
  const pid = workers[h]!.pid!;
  process.kill(-pid, 'SIGSTOP');
  return () => process.kill(-pid, 'SIGCONT');
}

test('a host cut off in the middle of an edit, then back: the edit takes effect once, and the other host works on', async () => {
  const p = makeProject();
  let release: (() => void) | undefined;
  const editHeld = new Promise<GateCall>((resolve) => {
    onActivity = (call) =>
      new Promise<void>((go) => {
        const nth = ran.filter((c) => c.activityType === 'callTool' && c.workflowId === call.workflowId).length;
        if (call.activityType === 'callTool' && nth === 2 && !release) {
          release = go;
          resolve(call);
        } else go();
      });
  });
  const { taskId } = await startTask('h2', 'cutoff.txt', p.dir);
  await editHeld;
  // The host is cut off with the edit about to run: in its own network namespace its processes run on, and the
  // answer that lets the edit go (like every poll and heartbeat of the worker) cannot reach them.
  const back = cut('h2');
  release!();
  onActivity = async () => undefined;
  // Its heartbeat lapses, the step is tried again at the home, and nobody there takes it: the task says so.
  await until('waiting_for_host', async () =>
    (await taskEvents(taskId)).find((e) => e.type === 'waiting_for_host' && e.hostId === 'h2')
  );
  expect(readFileSync(path.join(p.dir, 'cutoff.txt'), 'utf8')).toBe('version 1\n');
  // Meanwhile the other host works on: a task of its own finishes there.
  const other = makeProject();
  const onH1 = await startTask('h1', 'other.txt', other.dir);
  expect((await ended(onH1.taskId)).status).toBe('done');
  expect(readFileSync(path.join(other.dir, 'other.txt'), 'utf8')).toBe('version 2\n');
  expect(readFileSync(path.join(p.dir, 'cutoff.txt'), 'utf8')).toBe('version 1\n');

  // Back: the cut-off attempt runs on (Temporal no longer takes its result) beside the retried step's edit.
  back();
  const state = await ended(taskId);
  expect(state.status).toBe('done');
  expect(state.waitingForHost).toBeNull();
  expect(readFileSync(path.join(p.dir, 'cutoff.txt'), 'utf8')).toBe('version 2\n');
  // Whichever ran first, the edit took effect once: the other found nothing to change.
  expect(applied('h2', 'cutoff.txt')).toEqual({ writes: 1, edits: 1 });
  expect(applied('h1', 'cutoff.txt')).toEqual({ writes: 0, edits: 0 });
});

test('a task waiting for a gone host can be cancelled', async () => {
  const p = makeProject();
  const session = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir, host: 'h2' });
  // The session has read its project while h2 was there; then h2 goes away.
  await until('the session ready', async () => {
    const s = await rest<{ projectContextFile?: unknown; lastSeq: number }>(
      'GET',
      `/sessions/${session.body.sessionId}`
    );
    return s.body.lastSeq > 0;
  });
  // A host up long enough to have sent heartbeats at its interval (before its second one, it is judged by its polls).
  const temporal = await Connection.connect({ address });
  await until('h2 heard from twice', async () => {
    const res = await temporal.workflowService.listWorkers({
      namespace: 'default',
      query: 'TaskQueue = "klea-host-h2"',
    });
    return (res.workersInfo ?? []).some(
      (w) => w.workerHeartbeat?.status === 1 && Number(w.workerHeartbeat.elapsedSinceLastHeartbeat?.seconds ?? 0) > 0
    );
  });
  await temporal.close();
  await killHost('h2');
  // Seen gone by its missing heartbeats (about 20 s), not after the minute and a half its last poll stays listed.
  await until(
    'h2 gone on /healthz',
    async () => {
      const { body } = await rest<Health>('GET', '/healthz');
      return body.hosts?.find((x) => x.hostId === 'h2')?.status === 'gone' && body.status === 'ok';
    },
    60_000
  );
  const task = await rest<{ taskId: string }>('POST', '/tasks', {
    prompt: 'Write and then edit FILE=never.txt',
    sessionId: session.body.sessionId,
  });
  expect(task.status).toBe(201);
  const { taskId } = task.body;
  await until('waiting_for_host', async () => (await taskEvents(taskId)).find((e) => e.type === 'waiting_for_host'));
  const cancel = await rest('POST', `/tasks/${taskId}/cancel`, { reason: 'host is gone' });
  expect(cancel.status).toBeLessThan(300);
  expect((await ended(taskId)).status).toBe('cancelled');
  expect(existsSync(path.join(p.dir, 'never.txt'))).toBe(false);
  await startHost('h2');
});

test('a message to a session whose host is gone becomes a task that waits for the host, then finishes there', async () => {
  const p = makeProject();
  const session = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir, host: 'h2' });
  const { sessionId } = session.body;
  await until('the session ready', async () => {
    const s = await rest<{ lastSeq: number }>('GET', `/sessions/${sessionId}`);
    return s.body.lastSeq > 0;
  });
  await killHost('h2');
  // Routing lists the project's files, so it runs on h2: not taken within worker.host_wait_ms, the message is
  // answered as a task at once (not with the model's time limit, on a model that was never asked).
  const asked = Date.now();
  const sent = await rest<{ kind: string; taskId?: string }>('POST', `/sessions/${sessionId}/messages`, {
    text: 'Write and then edit FILE=routed.txt',
  });
  expect(sent.status).toBe(200);
  expect(sent.body.kind).toBe('task');
  expect(Date.now() - asked).toBeLessThan(30_000);
  const events = await rest<{ events: Event[] }>('GET', `/sessions/${sessionId}/events?after=0`);
  expect(events.body.events.filter((e) => e.type === 'waiting_for_host')).toEqual([
    expect.objectContaining({ hostId: 'h2' }),
  ]);
  const taskId = sent.body.taskId!;
  await until('the task waits for h2', async () =>
    (await taskEvents(taskId)).find((e) => e.type === 'waiting_for_host' && e.hostId === 'h2')
  );
  expect(existsSync(path.join(p.dir, 'routed.txt'))).toBe(false);
  await startHost('h2');
  expect((await ended(taskId)).status).toBe('done');
  expect(readFileSync(path.join(p.dir, 'routed.txt'), 'utf8')).toBe('version 2\n');
  for (const c of projectActivities(taskId)) expect(c.host).toBe('h2');
});

test("the inbox on PostgreSQL's visibility: a task waiting for review, and sessions most recently active first", async () => {
  const p = makeProject();
  const session = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir, host: 'h1' });
  const task = await rest<{ taskId: string }>('POST', '/tasks', {
    prompt: 'Write and then edit FILE=review.txt',
    sessionId: session.body.sessionId,
    review: 'always',
  });
  const { taskId } = task.body;
  const state = await until('awaiting_review', async () => {
    const s = await rest<TaskState & { planHash: string }>('GET', `/tasks/${taskId}`);
    return s.body.status === 'awaiting_review' ? s.body : undefined;
  });
  // Visibility lags the run by a moment: the inbox finds the task once it has taken the status in.
  const listed = await until('the task in the inbox', async () => {
    const r = await rest<{ tasks: Array<{ id: string; status: string }> }>('GET', '/tasks?status=awaiting_review');
    return r.body.tasks.find((t) => t.id === taskId);
  });
  expect(listed.status).toBe('awaiting_review');
  const later = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir: p.dir, host: 'h2' });
  const sessions = await until('both sessions listed', async () => {
    const r = await rest<{ sessions: Array<{ id: string }> }>('GET', '/sessions?limit=50');
    const ids = r.body.sessions.map((s) => s.id);
    return ids.includes(later.body.sessionId) && ids.includes(session.body.sessionId) ? ids : undefined;
  });
  expect(sessions.indexOf(later.body.sessionId)).toBeLessThan(sessions.indexOf(session.body.sessionId));

  const approved = await rest('POST', `/tasks/${taskId}/review`, { decision: 'approve', planHash: state.planHash });
  expect(approved.status).toBe(200);
  expect((await ended(taskId)).status).toBe('done');
  expect(readFileSync(path.join(p.dir, 'review.txt'), 'utf8')).toBe('version 2\n');
});

test('a session that went to sleep wakes with its home, and its next task works there', async () => {
  const p = makeProject();
  const first = await startTask('h2', 'sleepy.txt', p.dir);
  expect((await ended(first.taskId)).status).toBe('done');
  const asleep = await until('the session asleep', async () => {
    const s = await rest<{ status: string; home?: { hostId: string } }>('GET', `/sessions/${first.sessionId}`);
    return s.body.status === 'sleeping' ? s.body : undefined;
  });
  expect(asleep.home).toEqual({ hostId: 'h2' });
  const next = await rest<{ taskId: string }>('POST', '/tasks', {
    prompt: 'Write and then edit FILE=woken.txt',
    sessionId: first.sessionId,
  });
  expect(next.status).toBe(201);
  const state = await ended(next.body.taskId);
  expect(state.status).toBe('done');
  expect(state.home).toEqual({ hostId: 'h2' });
  const awake = await rest<{ home?: { hostId: string } }>('GET', `/sessions/${first.sessionId}`);
  expect(awake.body.home).toEqual({ hostId: 'h2' });
  const calls = projectActivities(next.body.taskId).filter((c) => c.activityType === 'callTool');
  expect(calls).toHaveLength(2);
  for (const c of calls) expect(c.host).toBe('h2');
  expect(readFileSync(path.join(p.dir, 'woken.txt'), 'utf8')).toBe('version 2\n');
});

describe('a group of hosts that share a volume of projects', () => {
  /** A project on the shared volume (every host of the group reaches it at the same path). */
  const sharedProject = () => realpathSync(mkdtempSync(path.join(SHARED, 'p-')));
  const other = (h: Host): Host => (h === 'h3' ? 'h4' : 'h3');
  /** The host whose lease on the project is current (the highest epoch's file). */
  const leaseHolder = (projectDir: string) => {
    const root = path.join(GROUP_DIR, 'leases');
    for (const key of readdirSync(root)) {
      const files = readdirSync(path.join(root, key))
        .filter((n) => /^\d+\.json$/.test(n))
        .sort();
      const lease = JSON.parse(readFileSync(path.join(root, key, files.at(-1)!), 'utf8')) as {
        hostId: string;
        projectDir: string;
        epoch: number;
      };
      if (lease.projectDir === projectDir) return lease;
    }
    return undefined;
  };
  /**
   * The calls of the file that could change the project and reached host `h`'s workspace server (one refused for
   * the lease never does; a read runs on any host of the group).
   */
  const reached = (h: Host, file: string) =>
    existsSync(callLog(h))
      ? readFileSync(callLog(h), 'utf8')
          .split('\n')
          .filter((l) => l.includes(file))
          .map((l) => (JSON.parse(l) as { tool: string }).tool)
          .filter((t) => !['read_file', 'list_dir', 'find_files', 'grep'].includes(t))
      : [];

  beforeAll(async () => {
    mkdirSync(SHARED, { recursive: true });
    if (bridge) GROUP_HOSTS.forEach((h, i) => (net[h] = addHost(bridge, h, HOSTS.length + i + 1)));
    await Promise.all(GROUP_HOSTS.map(startHost));
    await until('the group hosts polling', async () => {
      const h = await rest<Health>('GET', '/healthz');
      return h.body.hosts?.filter((x) => x.group === 'g1' && x.status === 'ok').length === 2;
    });
  }, 120_000);

  test("a group's project is changed by one host at a time; when it is gone, another host of the group takes the project, its checkpoints and its rewinds", async () => {
    const projectDir = sharedProject();
    // A host of the group cannot be named alone; the group can.
    const pinned = await rest<{ error: { message: string } }>('POST', '/sessions', { projectDir, host: 'h3' });
    expect([pinned.status, pinned.body.error.message]).toEqual([400, expect.stringMatching(/in group "g1"/)]);
    const session = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir, group: 'g1' });
    expect(session.status).toBe(201);
    const { sessionId } = session.body;
    expect((await rest<{ home?: unknown }>('GET', `/sessions/${sessionId}`)).body.home).toEqual({ groupId: 'g1' });
    const post = async (file: string) => {
      const r = await rest<{ taskId: string }>('POST', '/tasks', {
        prompt: `Write and then edit FILE=${file}`,
        sessionId,
      });
      expect(r.status).toBe(201);
      return r.body.taskId;
    };
    const finished = async (taskId: string) => {
      const state = await ended(taskId);
      expect(state.status).toBe('done');
      expect(state.home).toEqual({ groupId: 'g1' });
      return taskId;
    };
    const task = async (file: string) => finished(await post(file));

    // The first task: every change runs on one host, the one that took the project's lease.
    const first = await task('one.txt');
    expect(readFileSync(path.join(projectDir, 'one.txt'), 'utf8')).toBe('version 2\n');
    const holder = leaseHolder(projectDir)!.hostId as Host;
    expect(GROUP_HOSTS).toContain(holder);
    expect(applied(holder, 'one.txt')).toEqual({ writes: 1, edits: 1 });
    expect(reached(other(holder), 'one.txt')).toEqual([]);
    // Its checkpoints are in the group's directory, not in the host's own.
    expect(readdirSync(path.join(GROUP_DIR, 'checkpoints')).length).toBeGreaterThan(0);
    expect(existsSync(path.join(hostDataDir(holder), 'checkpoints'))).toBe(false);

    // The API lists the group, its hosts and its project; each host says its group.
    type Groups = {
      groups?: Array<{ groupId: string; taskQueue: string; hosts: string[]; projects: Array<{ projectDir: string }> }>;
    };
    const listed = await until('the group project listed', async () => {
      const r = await rest<Groups>('GET', '/hosts');
      const g1 = r.body.groups?.find((g) => g.groupId === 'g1');
      return g1?.projects.some((p) => p.projectDir === projectDir) ? g1 : undefined;
    });
    expect([listed.taskQueue, listed.hosts]).toEqual(['klea-group-g1', ['h3', 'h4']]);
    const ofGroup = await rest<{ sessions: Array<{ id: string; host: string | null }> }>('GET', '/sessions?group=g1');
    expect(ofGroup.body.sessions.find((x) => x.id === sessionId)?.host).toBe('group:g1');
    expect((await rest('GET', '/sessions?group=g1&host=h3')).status).toBe(400);
    const health = (await rest<Health>('GET', '/healthz')).body.hosts ?? [];
    expect(health.filter((h) => h.group === 'g1').map((h) => h.hostId)).toEqual(['h3', 'h4']);

    // Both hosts poll the group's queue: a second task's changes still all run on the holder (the other host,
    // handed one, names the holder, and the call goes there).
    await task('two.txt');
    expect(applied(holder, 'two.txt')).toEqual({ writes: 1, edits: 1 });
    expect(reached(other(holder), 'two.txt')).toEqual([]);

    // The holder is killed while it holds the third task's write: the call is lost with it, the task waits for it,
    // and once its lease has run out the other host takes the project and the step's change is made there, once.
    let held: (() => void) | undefined;
    const writeHeld = new Promise<GateCall>((resolve) => {
      onActivity = (call) =>
        new Promise<void>((release) => {
          if (call.activityType === 'callTool' && call.host === holder && ![first].includes(call.workflowId) && !held) {
            held = release;
            resolve(call);
          } else release();
        });
    });
    const third = await post('three.txt');
    expect((await writeHeld).workflowId).toBe(third);
    await killHost(holder);
    onActivity = async () => undefined;
    const taker = other(holder);
    const heldCall = await writeHeld;
    await finished(third);
    // Held on the holder's own queue, its retry waits there, and the task says so; one the holder took from the
    // group's queue is retried there, where the other host takes it once the lease has run out.
    if (heldCall.taskQueue === `klea-host-${holder}`)
      expect((await taskEvents(third)).find((e) => e.type === 'waiting_for_host')?.hostId).toBe(holder);
    expect(readFileSync(path.join(projectDir, 'three.txt'), 'utf8')).toBe('version 2\n');
    expect(applied(taker, 'three.txt')).toEqual({ writes: 1, edits: 1 });
    expect(reached(holder, 'three.txt')).toEqual([]);
    expect(leaseHolder(projectDir)).toMatchObject({ hostId: taker, epoch: 2 });

    // A rewind of the first task, whose checkpoints the killed host wrote, is carried out by the host that holds
    // the project now: every file the task made is gone again, and the later tasks' files are left as they are.
    const rewound = await rest<{ status: string }>('POST', `/tasks/${first}/rewind`, { toStep: 'w', rerun: false });
    expect([rewound.status, rewound.body.status]).toEqual([200, 'rewound']);
    expect(existsSync(path.join(projectDir, 'one.txt'))).toBe(false);
    expect(readFileSync(path.join(projectDir, 'two.txt'), 'utf8')).toBe('version 2\n');
    expect(readFileSync(path.join(projectDir, 'three.txt'), 'utf8')).toBe('version 2\n');
    const restores = projectActivities(first).filter((c) => c.activityType === 'restoreFiles');
    expect(restores.length).toBeGreaterThan(0);
    expect(restores.at(-1)!.host).toBe(taker);

    // The killed host comes back: the project stays with the host that holds it.
    await startHost(holder);
    await task('four.txt');
    expect(applied(taker, 'four.txt')).toEqual({ writes: 1, edits: 1 });
    expect(reached(holder, 'four.txt')).toEqual([]);
    expect(leaseHolder(projectDir)).toMatchObject({ hostId: taker, epoch: 2 });
  });

  test('a host of the group cut off while it holds a write: the other host takes the project, and the cut-off host, back, changes nothing', async () => {
    const projectDir = sharedProject();
    const session = await rest<{ sessionId: string }>('POST', '/sessions', { projectDir, group: 'g1' });
    const post = async (file: string) =>
      (
        await rest<{ taskId: string }>('POST', '/tasks', {
          prompt: `Write and then edit FILE=${file}`,
          sessionId: session.body.sessionId,
        })
      ).body.taskId;
    expect((await ended(await post('a.txt'))).status).toBe('done');
    const holder = leaseHolder(projectDir)!.hostId as Host;
    const taker = other(holder);

    let release: (() => void) | undefined;
    const writeHeld = new Promise<GateCall>((resolve) => {
      onActivity = (call) =>
        new Promise<void>((go) => {
          if (call.activityType === 'callTool' && call.host === holder && !release) {
            release = go;
            resolve(call);
          } else go();
        });
    });
    const taskId = await post('b.txt');
    const call = await writeHeld;
    expect(call.workflowId).toBe(taskId);
    // Cut off with the write about to run: its worker runs on, but reaches neither Temporal nor, for its lease's
    // renewal, knows it does; its lease runs out, and it gives the project up.
    const back = cut(holder);
    onActivity = async () => undefined;
    const state = await ended(taskId);
    expect(state.status).toBe('done');
    expect(readFileSync(path.join(projectDir, 'b.txt'), 'utf8')).toBe('version 2\n');
    expect(applied(taker, 'b.txt')).toEqual({ writes: 1, edits: 1 });
    expect(leaseHolder(projectDir)).toMatchObject({ hostId: taker, epoch: 2 });

    // Back: the held write is let go at last, finds the project held by the other host, and changes nothing. (It is
    // let go once the link is up: an answer sent while it was down would come only at TCP's next retransmission.)
    back();
    release!();
    const refused = await until('the cut-off attempt over', () =>
      failed.find((f) => f.activityId === call.activityId && f.attempt === call.attempt)
    );
    expect(refused.failure).toBe('ProjectHeldElsewhere');
    expect(reached(holder, 'b.txt')).toEqual([]);
    expect(readFileSync(path.join(projectDir, 'b.txt'), 'utf8')).toBe('version 2\n');
  });
});
