/**
 * Proof under fire: a multi-step task (a write, an edit, a command, a review pause and a permission pause) is run
 * again and again while the worker process is killed with SIGKILL at each activity boundary in turn, and once in
 * the middle of the command; and once the Temporal server itself is stopped and started again mid-run. Every run
 * must finish with the same files, every write and edit must take effect exactly once (the workspace server's
 * audit log proves it), no step may be lost and no task may be stuck.
 *
 * Every kill is deterministic: the worker runs with an activity gate (test/support/gated-worker.ts) that asks this
 * test before each activity starts. To kill "after activity N" the test holds activity N+1 at the gate, checks the
 * history holds exactly N completions, and kills; nothing can slip past the boundary. Each attempt of the command
 * waits for a release file naming its own token, and the test never releases an attempt it killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { stringify } from 'yaml';
import type { TaskInput, TaskResult, TaskState } from '../../common/task';
import { startDevServer, type DevServer } from '../../runtime/dev-server';
import { findFreePort } from '../../runtime/ports';
import { FakeModel, type RecordedRequest } from '../support/fake-model';
import type { rewindWorkflow, taskWorkflow } from '../../workflows';
import { REWIND_HOLD_ENV } from '../../activities/rewind';
import { permissionSignal, reviewSignal, stateQuery } from '../../workflows/task/messages';
import { makeProject, plan, step } from '../support/task-driver';

const ROOT = path.join(__dirname, '..', '..');
const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-crash-')));
const callLog = path.join(dir, 'calls.jsonl');
const taskQueue = `crash-${process.pid}`;

let server: DevServer;
let ports: { port: number; httpPort: number };
let fake: FakeModel;
let client: Client;
let connection: Connection;
let worker: ChildProcess | null = null;
let configFile: string;
let gate: http.Server;
let gateUrl: string;

/** One activity about to start, as the gated worker reports it. */
interface GateCall {
  workflowId: string;
  activityType: string;
  activityId: string;
  attempt: number;
}
/** What the gate does with a call; the gate answers (lets the activity run) when the promise settles. */
let onActivity: (call: GateCall) => Promise<void> = async () => undefined;

const restarts = { worker: 0, server: 0 };

async function startServer(): Promise<void> {
  server = await startDevServer({ ...ports, dbFile: path.join(dir, 'temporal.db') });
}

/** Starts a worker process (with the activity gate) and waits until it polls. */
async function spawnWorker(extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'test', 'support', 'gated-worker.js')], {
    env: {
      ...process.env,
      KLEA_TEST_GATE_URL: gateUrl,
      KLEA_CONFIG: configFile,
      KLEA_WORKFLOW_BUNDLE: process.env.KLEA_TEST_WORKFLOW_BUNDLE,
      KLEA_LOG_LEVEL: 'info',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + 30_000;
  while (!/worker polling/.test(out)) {
    if (child.exitCode !== null) throw new Error(`worker exited: ${out}`);
    if (Date.now() > deadline) throw new Error(`worker did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

async function startWorker(extraEnv: Record<string, string> = {}): Promise<void> {
  worker = await spawnWorker(extraEnv);
}

function kill(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    /* gone */
  }
}

function killWorker(): void {
  if (!worker?.pid) return;
  kill(worker);
  worker = null;
  restarts.worker++;
}

beforeAll(async () => {
  gate = http.createServer((req, res) => {
    let body = '';
    req.on('data', (b: Buffer) => (body += b.toString()));
    req.on('end', () => {
      const answer = () => {
        if (!res.destroyed) res.end('go');
      };
      onActivity(JSON.parse(body) as GateCall).then(answer, answer);
    });
  });
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
  ports = { port: await findFreePort(), httpPort: await findFreePort() };
  await startServer();
  fake = await FakeModel.start();
  configFile = path.join(dir, 'klea.yaml');
  writeFileSync(
    configFile,
    stringify({
      model: { name: 'fake', base_url: fake.url, api_key: 'k', timeout_ms: 10_000 },
      temporal: { address: server.address, task_queue: taskQueue },
      worker: { sticky_queue_timeout_ms: 1000 },
      // The tasks' projects are made in the temporary directory.
      project: { allowed_roots: [realpathSync(os.tmpdir())] },
      mcp: { workspace: { call_log: callLog, state_dir: path.join(dir, 'workspace-state') } },
    })
  );
  connection = await Connection.connect({ address: server.address });
  client = new Client({ connection });
  scriptModel();
  await startWorker();
}, 120_000);

afterAll(async () => {
  killWorker();
  gate?.closeAllConnections();
  gate?.close();
  await connection?.close();
  await fake?.close();
  await server?.stop();
});

/** The model's part, stable under repeats: the same request always gets the same answer. */
function scriptModel() {
  const fileOf = (req: RecordedRequest) => /FILE=(\S+)/.exec(req.text)?.[1] ?? 'missing';
  fake.always('write_plan', (req) => {
    const f = fileOf(req);
    return {
      call: plan(
        [
          step('w', `Write FILE=${f}`),
          step('e', `Edit FILE=${f}`, { depends_on: ['w'] }),
          step('c', `Run a command for FILE=${f}`, { depends_on: ['e'] }),
          step('r', `Read the outside file for FILE=${f}`, { depends_on: ['c'] }),
          step('s', 'Sum up', { needs_tool: false, depends_on: ['r'] }),
        ],
        { before_work: true }
      ),
    };
  });
  fake.always('pick_tools', (req) => {
    const f = fileOf(req);
    const id = (req.toolSchemas[0]?.parameters as { properties: { step_id: { enum: string[] } } }).properties.step_id
      .enum[0];
    const byStep: Record<string, { name: string; args: Record<string, unknown> }> = {
      w: { name: 'workspace__write_file', args: { path: f, content: 'version 1\n' } },
      e: { name: 'workspace__edit_file', args: { path: f, old_string: 'version 1', new_string: 'version 2' } },
      c: {
        name: 'workspace__run_command',
        // Each attempt records a token of its own, then waits for the test to release that token: a kill
        // mid-command cannot miss it, and an attempt the test killed is never released, so it cannot finish later.
        args: {
          command:
            `t=$(od -An -N8 -tx8 /dev/urandom | tr -d ' '); echo $t >> ./${f}.cmd.started; ` +
            `until [ -e ./${f}.go.$t ]; do sleep 0.05; done; echo ran >> ./${f}.cmd.log`,
        },
      },
      r: { name: 'workspace__read_file', args: { path: '../outside/data.txt' } },
    };
    return { calls: [{ name: byStep[id].name, args: { step_id: id, ...byStep[id].args } }] };
  });
  fake.always('do_step', { content: 'summed up' });
  fake.always('compose_answer', { content: 'all done' });
}

interface Crashes {
  /** Called before each of the task's activities starts, with the completions in history; true = done with it. */
  atActivity?: (completed: number) => Promise<boolean>;
  /** Called once while the command runs (before it is released). */
  midCommand?: () => Promise<void>;
  /** Called on every poll while the task runs; true = done with it. */
  atPoll?: () => Promise<boolean>;
}

/** Runs one task to the end, answering its review and permission pauses; `crashes` may crash things once each. */
async function runTask(
  name: string,
  crashes: Crashes = {}
): Promise<{ result: TaskResult; state: TaskState; project: string; file: string }> {
  const p = makeProject();
  writeFileSync(path.join(p.outside, 'data.txt'), 'outside data');
  const file = `${name}.txt`;
  const taskId = `task-crash-${name}-1`;
  const input: TaskInput = {
    taskId,
    sessionId: `crash-${name}`,
    prompt: `Change FILE=${file}`,
    projectDir: p.dir,
    mode: 'general',
    toolAccess: 'full',
    route: false,
  };
  const handle = await client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
    taskQueue,
    workflowId: taskId,
    args: [input],
  });
  let atActivity = crashes.atActivity;
  onActivity = async (call) => {
    if (call.workflowId !== taskId || !atActivity) return;
    const history = await handle.fetchHistory();
    const completed = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length;
    if (await atActivity(completed)) atActivity = undefined;
  };
  const started = path.join(p.dir, `${file}.cmd.started`);
  const handled = new Set<string>();
  let midCommand = crashes.midCommand;
  let atPoll = crashes.atPoll;
  const deadline = Date.now() + 150_000;
  try {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`task ${taskId} is stuck`);
      const desc = await handle.describe().catch(() => null);
      if (desc && desc.status.name !== 'RUNNING') break;
      if (atPoll && (await atPoll())) atPoll = undefined;
      const newest = existsSync(started) ? readFileSync(started, 'utf8').trim().split('\n').at(-1) : undefined;
      if (newest && !handled.has(newest)) {
        handled.add(newest);
        if (midCommand) {
          await midCommand();
          midCommand = undefined;
        } else writeFileSync(path.join(p.dir, `${file}.go.${newest}`), '');
      }
      const state = await handle.query(stateQuery).catch(() => null);
      for (const p2 of state?.pending ?? []) {
        if (p2.kind === 'review')
          await handle.signal(reviewSignal, { decision: 'approve', planHash: p2.planHash }).catch(() => undefined);
        if (p2.kind === 'permission')
          for (const r of p2.requests)
            await handle
              .signal(permissionSignal, { requestId: r.requestId, decision: 'allow_once' })
              .catch(() => undefined);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    onActivity = async () => undefined;
  }
  const result = await handle.result();
  const state = await handle.query(stateQuery);
  return { result, state, project: p.dir, file };
}

function auditFor(file: string) {
  const lines = existsSync(callLog)
    ? readFileSync(callLog, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
  const mine = lines.filter((l) => JSON.stringify(l.args).includes(file));
  return {
    writesApplied: mine.filter((l) => l.tool === 'write_file' && !l.replayed && l.changed === true).length,
    editsApplied: mine.filter((l) => l.tool === 'edit_file' && !l.replayed && !l.isError).length,
    writesRecovered: mine.filter((l) => l.tool === 'write_file' && l.replayed).length,
    editsRecovered: mine.filter((l) => l.tool === 'edit_file' && l.replayed).length,
    commandsCompleted: mine.filter((l) => l.tool === 'run_command' && !l.replayed && !l.isError).length,
  };
}

function expectClean(
  run: Awaited<ReturnType<typeof runTask>>,
  audit: Partial<ReturnType<typeof auditFor>> = { writesApplied: 1, editsApplied: 1, commandsCompleted: 1 }
) {
  expect(run.result).toMatchObject({ status: 'done', answer: 'all done' });
  expect(run.state.steps.map((s) => [s.id, s.status])).toEqual([
    ['w', 'done'],
    ['e', 'done'],
    ['c', 'done'],
    ['r', 'done'],
    ['s', 'done'],
  ]);
  expect(readFileSync(path.join(run.project, run.file), 'utf8')).toBe('version 2\n');
  expect(readFileSync(path.join(run.project, `${run.file}.cmd.log`), 'utf8')).toBe('ran\n');
  expect(auditFor(run.file)).toMatchObject(audit);
}

describe('crash suite', () => {
  it('a run with no crash sets the baseline', async () => {
    expectClean(await runTask('baseline'));
  }, 180_000);

  // The task's activities: plan, 4 × (pick, which checks the call's paths, call), do_step, answer = 11 (the
  // project context is read by a local activity, before the plan); after the 11th the task is over, so the
  // boundaries are after the 1st to the 10th.
  const boundaries = Array.from({ length: 10 }, (_, i) => i + 1);
  it.each(boundaries)(
    'the worker is SIGKILLed after activity %i completes, then started again',
    async (n) => {
      const before = restarts.worker;
      let killedAt: number | undefined;
      const run = await runTask(`boundary-${n}`, {
        atActivity: async (completed) => {
          if (completed < n) return false;
          killedAt = completed;
          killWorker();
          await startWorker();
          return true;
        },
      });
      expectClean(run);
      expect(killedAt).toBe(n);
      expect(restarts.worker).toBe(before + 1);
    },
    180_000
  );

  it('the worker is SIGKILLed in the middle of the command; the command still takes effect exactly once', async () => {
    const before = restarts.worker;
    const run = await runTask('mid-command', {
      midCommand: async () => {
        killWorker();
        await startWorker();
      },
    });
    expectClean(run);
    expect(restarts.worker).toBe(before + 1);
  }, 180_000);

  it('the Temporal server is stopped mid-run and started again (SQLite kept): the run continues', async () => {
    let stoppedAt: number | undefined;
    const run = await runTask('server-restart', {
      atActivity: async (completed) => {
        if (completed < 5) return false;
        stoppedAt = completed;
        await server.stop();
        restarts.server++;
        await startServer();
        return true;
      },
    });
    expectClean(run);
    expect(stoppedAt).toBe(5);
    expect(restarts.server).toBe(1);
  }, 180_000);

  // Two workers poll one queue. Worker A's workspace server is stopped right after it changes the file and before
  // it records the call (then SIGKILLed with A); the retry goes to worker B, whose server finds the open intent,
  // sees the change in the file and answers with the recorded result instead of applying it again.
  it.each([
    ['write_file', { writesApplied: 0, writesRecovered: 1, editsApplied: 1, commandsCompleted: 1 }],
    ['edit_file', { writesApplied: 1, editsApplied: 0, editsRecovered: 1, commandsCompleted: 1 }],
  ] as const)(
    'two workers: the one executing %s is SIGKILLed between the change and its record; the other does not apply it twice',
    async (tool, audit) => {
      killWorker();
      const markers = mkdtempSync(path.join(dir, 'held-'));
      await startWorker({ KLEA_WORKSPACE_HOLD_AFTER_CHANGE: `${tool}:${markers}` });
      const workerA = worker!;
      let workerB: ChildProcess | undefined;
      const run = await runTask(`two-workers-${tool}`, {
        atPoll: async () => {
          if (!existsSync(path.join(markers, `${tool}.held`))) return false;
          workerB = await spawnWorker();
          kill(workerA);
          return true;
        },
      });
      worker = workerB ?? null;
      expect(workerB).toBeDefined();
      // The change was made once, by A's server (its marker proves it got that far), and recovered on B.
      expectClean(run, audit);
    },
    180_000
  );
  it("the worker is SIGKILLed halfway through a rewind's restore; another worker finishes it, every file once", async () => {
    const run = await runTask('rewind');
    expectClean(run);
    const held = mkdtempSync(path.join(dir, 'held-'));
    killWorker();
    await startWorker({ [REWIND_HOLD_ENV]: `2:${held}` });
    const rewind = await client.workflow.start<typeof rewindWorkflow>('rewindWorkflow', {
      taskQueue,
      workflowId: `rewind-${run.state.taskId}-crash`,
      args: [{ taskId: run.state.taskId, toStep: 'w', rerun: false, force: false }],
    });
    const marker = path.join(held, 'rewind.held');
    for (const deadline = Date.now() + 60_000; !existsSync(marker);) {
      if (Date.now() > deadline) throw new Error('the restore never reached its second file');
      await new Promise((r) => setTimeout(r, 50));
    }
    killWorker();
    await startWorker();
    const result = await rewind.result();
    expect(result).toMatchObject({ status: 'rewound', steps: ['w', 'e', 'c', 'r', 's'] });
    const paths = result.status === 'rewound' ? result.files.map((f) => f.path) : [];
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toContain(run.file);
    // Everything the task made is gone: the project is as it was before its first step.
    expect(readdirSync(run.project)).toEqual([]);
    const task = client.workflow.getHandle<typeof taskWorkflow>(run.state.taskId);
    expect((await task.result()).status).toBe('rewound');
  }, 180_000);
});
