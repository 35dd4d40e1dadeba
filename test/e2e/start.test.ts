/**
 * `make start` keeps the service up: the real `node dist/scripts/start.js` (Temporal dev server on SQLite, worker,
 * API) on free ports, with its own database and the scripted fake model. The worker is killed with SIGKILL while a
 * task waits for its plan review; the supervisor starts it again, and the user's approval over REST is all the
 * task needs to finish. A worker that cannot start at all makes `make start` give up, say why and exit non-zero.
 * Every run ends with no process of the stack left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { isFinalStatus, type TaskStatus } from '../../common/events';
import { findFreePort } from '../../runtime/ports';
import { FakeModel } from '../support/fake-model';
import { makeProject, plan, step } from '../support/task-driver';
import { until } from '../support/until';

const ROOT = path.join(__dirname, '..', '..');
const START_JS = path.join(ROOT, 'dist', 'scripts', 'start.js');

/** The ppid of every process, from /proc (Linux). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after its last ")".
      out.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

function descendants(root: number): number[] {
  const ppids = parents();
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.shift()!;
    for (const [pid, ppid] of ppids) {
      if (ppid === p) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

/** Alive and not a zombie. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Three distinct free ports: Temporal's gRPC port, its Web UI and the API. */
async function freePorts(): Promise<{ temporal: number; ui: number; api: number }> {
  for (;;) {
    const [temporal, ui, api] = [await findFreePort(), await findFreePort(), await findFreePort()];
    if (new Set([temporal, ui, api]).size === 3) return { temporal, ui, api };
  }
}

/** The TCP ports the processes `pids` listen on in this machine's network namespace (Linux /proc). */
function listeningPorts(pids: number[]): number[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {
        /* closed meanwhile */
      }
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // Column 4 is the state (0A: listening), column 10 the socket's inode.
      if (cols[3] === '0A' && inodes.has(cols[9])) ports.add(parseInt(cols[1].split(':').pop()!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** What a port answers to a raw HTTP/1.1 request (whatever it speaks), read until it closes the connection. */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
}

/** `make start` as a user runs it, with the environment cleared of settings that would override the test's file. */
class MakeStart {
  output = '';
  /** Every process of the stack seen so far (start.js's descendants, sampled when the test looks). */
  readonly seen = new Set<number>();
  readonly exited: Promise<{ code: number | null; signal: string | null }>;

  private constructor(readonly proc: ChildProcess) {
    const collect = (b: Buffer) => (this.output += b.toString());
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  static launch(env: Record<string, string>, args: string[] = []): MakeStart {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(KLEA_|OPENAI_|TEMPORAL_(?!CLI_PATH))/.test(k))
    );
    const proc = spawn(process.execPath, [START_JS, ...args], {
      cwd: ROOT,
      env: { ...inherited, KLEA_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new MakeStart(proc);
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Notes the stack's processes now, so the end can check that every one of them is gone. */
  sample(): number[] {
    const pids = this.running ? descendants(this.proc.pid!) : [];
    for (const pid of pids) this.seen.add(pid);
    return pids;
  }

  /** Waits for a line of the log matching `re`, after character `from`; fails early if start.js ends first. */
  waitFor(re: RegExp, timeoutMs: number, from = 0): Promise<RegExpExecArray> {
    return until(
      `${re} in the log of make start`,
      () => {
        const m = re.exec(this.output.slice(from));
        if (m) return m;
        if (!this.running) throw new Error(`make start ended before ${re}:\n${this.output}`);
        this.sample();
        return undefined;
      },
      timeoutMs
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- make start log ---\n${this.output}`);
    });
  }

  /** SIGTERM, as Ctrl-C would; then whatever is left of the stack. Returns start.js's exit and the leftovers. */
  async stop(): Promise<{ exit: { code: number | null; signal: string | null }; leftovers: number[] }> {
    this.sample();
    if (this.running) this.proc.kill('SIGTERM');
    const timeout = new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref());
    let exit = await Promise.race([this.exited, timeout]);
    if (!exit) {
      this.proc.kill('SIGKILL');
      exit = await this.exited;
    }
    // The stack's children watch for their parent and stop themselves; give them the time their stop takes.
    const pids = [...this.seen, ...loggedPids(this.output)];
    await until('the stack to be gone', () => (pids.some(isRunning) ? undefined : true), 30_000).catch(() => {});
    const leftovers = pids.filter(isRunning);
    for (const pid of leftovers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    return { exit, leftovers };
  }
}

/** The pids the supervisor reported starting. */
function loggedPids(output: string): number[] {
  return [...output.matchAll(/(?:worker|api) started(?: again)? \(pid (\d+)\)/g)].map((m) => Number(m[1]));
}

interface Task {
  status: TaskStatus;
  answer: string | null;
  planHash?: string;
  pending: Array<{ kind: string; planHash?: string }>;
}

describe('make start keeps the service up', () => {
  let dir: string;
  let fake: FakeModel;
  let stack: MakeStart | undefined;

  beforeAll(async () => {
    if (!existsSync(START_JS)) throw new Error(`${START_JS} is missing: run "npm run build"`);
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-start-')));
    fake = await FakeModel.start();
  });
  afterEach(async () => {
    // A failed test still leaves nothing behind (stop() again after a test's own stop() is harmless).
    await stack?.stop();
    stack = undefined;
    fake.reset();
  });
  afterAll(async () => {
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function writeConfig(name: string, ports: { temporal: number; ui: number; api: number }, projectDir: string) {
    const state = path.join(dir, name);
    mkdirSync(state, { recursive: true });
    const file = path.join(state, 'klea.yaml');
    writeFileSync(
      file,
      stringify({
        model: { name: 'fake', base_url: fake.url, api_key: 'k', timeout_ms: 10_000 },
        temporal: {
          address: `127.0.0.1:${ports.temporal}`,
          task_queue: `start-${name}`,
          ui_url: `http://127.0.0.1:${ports.ui}`,
        },
        // A run's next workflow task waits this long for the killed worker's sticky queue.
        worker: { sticky_queue_timeout_ms: 1000 },
        api: { port: ports.api },
        project: { dir: projectDir },
        // Relative, so they land in the stack's data directory (KLEA_DATA_DIR below), as the defaults do.
        tools: { results_dir: 'results' },
        mcp: { workspace: { state_dir: 'workspace-state' } },
      })
    );
    return { file, state };
  }

  it('the worker is killed with SIGKILL while a task waits for review; it is started again and the task finishes', async () => {
    // Arrange: a plan that waits for review, then one step and an answer.
    fake.on('write_plan', {
      call: plan([step('s1', 'Think it over', { needs_tool: false })], { before_work: true }, 'Think'),
    });
    fake.on('do_step', { content: 'Thought it over.' });
    fake.on('compose_answer', { content: 'Done thinking: all good.' });
    const ports = await freePorts();
    const project = makeProject({ 'notes.md': 'nothing to see\n' });
    // The project comes as `make start PROJECT=<dir>` gives it, over the file's.
    const { file, state } = writeConfig('restart', ports, makeProject().dir);
    const data = path.join(state, 'data');
    stack = MakeStart.launch(
      { KLEA_CONFIG: file, KLEA_DATA_DIR: data, KLEA_WORKFLOW_BUNDLE: process.env.KLEA_TEST_WORKFLOW_BUNDLE! },
      ['--project', project.dir]
    );
    await stack.waitFor(/ready\. Ctrl-C stops everything\./, 120_000);
    expect(stack.output).toContain(`project:       ${project.dir}\n`);
    expect(stack.output).toContain(`Klea's data:   ${data} (KLEA_DATA_DIR)\n`);
    expect(existsSync(path.join(data, 'temporal.db'))).toBe(true);
    const api = `http://127.0.0.1:${ports.api}`;
    const getTask = async (id: string) => {
      const res = await fetch(`${api}/tasks/${id}`);
      return res.ok ? ((await res.json()) as Task) : undefined;
    };

    const created = await fetch(`${api}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Think it over' }),
    });
    expect(created.status).toBe(201);
    const { taskId } = (await created.json()) as { taskId: string };
    const reviewing = await until(
      'the plan review',
      async () => {
        const t = await getTask(taskId);
        return t?.status === 'awaiting_review' ? t : undefined;
      },
      60_000
    );
    const planHash = reviewing.pending.find((p) => p.kind === 'review')?.planHash ?? reviewing.planHash;
    expect(planHash).toBeTruthy();

    // Act: kill the worker the supervisor started (a child of start.js) the way the OOM killer would.
    const worker = Number((await stack.waitFor(/worker started \(pid (\d+)\)/, 1000))[1]);
    expect(parents().get(worker)).toBe(stack.proc.pid);
    // Noted now so the end checks that the killed worker's MCP servers did not outlive it either.
    stack.sample();
    const mark = stack.output.length;
    process.kill(worker, 'SIGKILL');
    const restarted = await stack.waitFor(
      /klea\s+the worker exited \(signal SIGKILL[^\n]*\) after [^;\n]+; starting it again in 1 s\n[\s\S]*?worker started again \(pid (\d+)\)/,
      30_000,
      mark
    );
    const again = Number(restarted[1]);
    expect(again).not.toBe(worker);
    expect(isRunning(worker)).toBe(false);
    await stack.waitFor(/\[worker\] worker polling/, 60_000, mark);

    // What the user does anyway: approve the plan over REST.
    const approved = await fetch(`${api}/tasks/${taskId}/review`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', planHash }),
    });
    expect(approved.status).toBe(200);

    // Assert: the task finishes on the new worker.
    const done = await until(
      'the task to finish',
      async () => {
        const t = await getTask(taskId);
        return t && isFinalStatus(t.status) ? t : undefined;
      },
      60_000
    );
    expect(done).toMatchObject({ status: 'done', answer: 'Done thinking: all good.' });
    expect(loggedPids(stack.output)).toEqual(expect.arrayContaining([worker, again]));
    expect(stack.output.match(/api started again/g)).toBeNull();
    fake.assertDone();

    // And Ctrl-C (SIGTERM) stops all of it, without restarting anything.
    const mark2 = stack.output.length;
    const { exit, leftovers } = await stack.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(leftovers).toEqual([]);
    expect(stack.output.slice(mark2)).not.toMatch(/starting it again|started again/);
    expect(stack.output).toMatch(/klea\s+stopped\n/);
  }, 300_000);

  it('attack: DNS rebinding; every port make start opens refuses a foreign Host, and the Temporal UI still opens', async () => {
    // Arrange: the stack as a user starts it.
    const ports = await freePorts();
    const { file, state } = writeConfig('rebind', ports, makeProject().dir);
    stack = MakeStart.launch({
      KLEA_CONFIG: file,
      KLEA_DATA_DIR: path.join(state, 'data'),
      KLEA_WORKFLOW_BUNDLE: process.env.KLEA_TEST_WORKFLOW_BUNDLE!,
    });
    await stack.waitFor(/ready\. Ctrl-C stops everything\./, 120_000);
    await stack.waitFor(/\[worker\] worker polling/, 60_000);

    // Every listening port of every process of the stack: the API, Temporal's gRPC port and the UI's front, and
    // nothing else (Temporal's HTTP API, metrics and internal services are in a network namespace of their own).
    const open = listeningPorts([stack.proc.pid!, ...stack.sample()]);
    expect(open).toEqual([ports.temporal, ports.ui, ports.api].sort((a, b) => a - b));

    // Act: what a page whose name was rebound to 127.0.0.1 would send, to each port: list the workflows, signal one.
    for (const port of open) {
      const host = `rebind.evil.example:${port}`;
      const answers = [
        await rawRequest(
          port,
          `GET /api/v1/namespaces/default/workflows HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`
        ),
        await rawRequest(
          port,
          `POST /api/v1/namespaces/default/workflows/task-s-1a2b3c4d-1/signal/review HTTP/1.1\r\nHost: ${host}\r\n` +
            `Origin: http://${host}\r\nContent-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\n` +
            '{"decision":"approve"}\r\n'
        ),
      ];

      // Assert: an HTTP port answers 403; the gRPC port speaks no HTTP/1 (no page can talk to it) and says nothing.
      for (const answer of answers) {
        if (port === ports.temporal) expect(answer).not.toMatch(/HTTP\/1/);
        else expect(answer).toMatch(/^HTTP\/1\.1 403 /);
        expect(answer).not.toMatch(/executions|workflowExecution/);
      }
    }

    // The documented URLs still work with their own names.
    const ui = await fetch(`http://127.0.0.1:${ports.ui}/namespaces/default/workflows`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toMatch(/<html/i);
    const viaLocalhost = await fetch(`http://localhost:${ports.ui}/api/v1/namespaces/default/workflows`);
    expect(viaLocalhost.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.api}/healthz`)).status).toBe(200);

    const { exit, leftovers } = await stack.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(leftovers).toEqual([]);
  }, 300_000);

  it('a worker that dies right after every start makes make start give up, say why, and exit non-zero', async () => {
    // Arrange: a worker that cannot start (its workflow bundle is missing), against no Temporal server at all.
    const ports = await freePorts();
    const { file, state } = writeConfig('give-up', ports, makeProject().dir);
    stack = MakeStart.launch({
      KLEA_CONFIG: file,
      KLEA_EXTERNAL_TEMPORAL: '1',
      KLEA_DATA_DIR: path.join(state, 'data'),
      KLEA_TEMPORAL_DB: path.join(state, 'temporal.db'),
      KLEA_WORKFLOW_BUNDLE: path.join(state, 'no-such-bundle.js'),
    });

    // Act: nothing; the supervisor tries 5 times over about 15 s.
    const exit = await Promise.race([
      stack.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`make start did not give up:\n${stack?.output}`)), 120_000).unref()
      ),
    ]);

    // Assert
    const { leftovers } = await stack.stop();
    expect(exit).toEqual({ code: 1, signal: null });
    expect(stack.output.match(/the workflow bundle \S+ is missing/g)).toHaveLength(5);
    expect(stack.output.match(/the worker exited \(code 1\) after [^;]+; starting it again in/g)).toHaveLength(4);
    expect(stack.output).toMatch(
      /klea\s+giving up on the worker: it exited 5 times in a row, each within 10 s of starting \(last exit: code 1\); see its log above; stopping everything\n/
    );
    expect(stack.output).toMatch(/klea\s+stopped\n/);
    expect(existsSync(path.join(state, 'temporal.db'))).toBe(false);
    expect(leftovers).toEqual([]);
  }, 180_000);

  it('a PROJECT that is not a directory makes make start say so and start nothing', async () => {
    // Arrange
    const ports = await freePorts();
    const { file, state } = writeConfig('no-project', ports, makeProject().dir);
    const missing = path.join(state, 'no-such-project');

    // Act
    stack = MakeStart.launch({ KLEA_CONFIG: file, KLEA_DATA_DIR: path.join(state, 'data') }, ['--project', missing]);
    const exit = await stack.exited;

    // Assert
    expect(exit).toEqual({ code: 1, signal: null });
    expect(stack.output).toBe(`klea: PROJECT=${missing}: no such directory (${missing})\n`);
    expect(existsSync(path.join(state, 'data'))).toBe(false);
  }, 30_000);
});
