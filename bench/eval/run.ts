/**
 * `make eval`: Klea on real tasks with a real model, beside a peer agent on the same model.
 *
 *   make eval                      every task (dev and holdout) with Qwen2.5-Coder-0.5B-Instruct
 *   make eval MODEL=1.5b           … with Qwen2.5-Coder-1.5B-Instruct (scripts/install-eval-model.sh 1.5b)
 *   make eval SPLIT=dev            one half (dev or holdout; default all)
 *   make eval TASKS=hello,calc     some tasks by id
 *   make eval PEER=1               also mini-swe-agent 2.4.6 on the same tasks, server and model
 *   make eval PEER=only            mini-swe-agent alone (Klea's figures for the model are kept)
 *
 * It starts llama.cpp's server with the model (checked by sha256), a recording proxy in front of it (./proxy.ts:
 * the server's `timings` and `usage` of every call, put down to the task running then), and the whole service as
 * `make start` runs it, pointed at the proxy. Every task of ./tasks.ts runs through the REST API as a user who
 * approves everything (./driver.ts), in a fresh project directory; its checker judges the outcome. With PEER, the
 * stack is stopped and mini-swe-agent (./peer.ts) runs each task in a fresh copy of the same fixtures.
 *
 * The whole suite (no TASKS, SPLIT=all) writes bench/EVAL.json, keyed by model and agent (the other model's and the
 * other agent's figures stay), and bench/EVAL.md from it. A subset writes both to .klea/eval/ instead. Each task's
 * events, final state, files, and the peer's trajectories are in .klea/eval/ (KLEA_EVAL_OUT: another place).
 * KLEA_LLAMA_THREADS sets the server's threads. A full run takes hours on 2 cores: run subsets while working.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../runtime/temporal';
import { LLAMA_DIR, startLlamaServer, type LlamaServer } from '../../test/support/llama-server';
import { diffSnapshots, unsolved, type Verdict } from './checks';
import { driveTask, KleaApi } from './driver';
import { parseModel, parseNPredict, TASK_SECONDS, type EvalModel } from './models';
import { PEER_NAME, peerVersion, runPeer } from './peer';
import { runInProject, snapshot, writeProject } from './project';
import { startRecordingProxy, totals, type RecordingProxy } from './proxy';
import {
  judge,
  mergeRun,
  readEvalFile,
  renderMarkdown,
  summarise,
  targets,
  type AgentName,
  type AgentRun,
  type TaskRecord,
} from './report';
import { startKlea, type KleaStack } from './stack';
import { DEFAULT_ANSWER, parseSplit, selectTasks, TASKS, type EvalTask, type Outcome } from './tasks';

const CTX = 8192;
/** The server's own limit on an answer (KLEA_EVAL_N_PREDICT). Klea sends its own (`model.max_output_tokens`). */
const N_PREDICT = parseNPredict(process.env.KLEA_EVAL_N_PREDICT);
/** Where a run keeps its tasks' records and logs (KLEA_EVAL_OUT: another place, for two runs at once). */
const OUT_DIR = path.resolve(process.env.KLEA_EVAL_OUT || path.join(REPO_ROOT, '.klea', 'eval'));

function sha256(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

function serverName(): string {
  const info = readdirSync(path.join(LLAMA_DIR, 'python')).find((f) => /^xllamacpp-.+\.dist-info$/.test(f));
  const version = info?.replace(/^xllamacpp-(.+)\.dist-info$/, '$1');
  return `llama.cpp's server (xllamacpp${version ? ` ${version}` : ''})`;
}

function machine(loadStart: number): AgentRun['machine'] {
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'cpu',
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    loadStart,
    loadEnd: os.loadavg()[0],
  };
}

/** Runs a task's checker on a finished project directory, and judges the task from it and from how it ended. */
async function checkProject(
  task: EvalTask,
  dir: string,
  before: ReturnType<typeof snapshot>,
  end: { status: string; error: string | null; answer: string | null; timedOut: boolean }
) {
  const after = snapshot(dir);
  const changes = diffSnapshots(before, after);
  let verdict: Verdict;
  try {
    const outcome: Outcome = {
      status: end.status,
      answer: end.answer,
      error: end.error,
      changes,
      read: (rel) => after.get(rel),
      run: (argv) => runInProject(dir, argv),
    };
    verdict = await task.check(outcome);
  } catch (err) {
    verdict = unsolved(`the checker failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { judged: judge(task.expect, end, verdict), changes, after };
}

const baseRecord = (task: EvalTask) => ({
  id: task.id,
  split: task.split,
  categories: [...task.categories],
  covers: task.covers,
  prompt: task.prompt,
  toolAccess: task.toolAccess ?? ('full' as const),
});

async function runKleaTask(
  api: KleaApi,
  task: EvalTask,
  projectsDir: string,
  proxy: RecordingProxy
): Promise<TaskRecord> {
  const dir = path.join(projectsDir, task.id);
  writeProject(dir, task.files);
  const before = snapshot(dir);
  const toolAccess = task.toolAccess ?? 'full';
  proxy.label = `klea:${task.id}`;
  const run = await driveTask(
    api,
    { prompt: task.prompt, projectDir: dir, toolAccess, answer: task.answer ?? DEFAULT_ANSWER },
    TASK_SECONDS * 1000
  );
  proxy.label = null;
  const { judged, changes, after } = await checkProject(task, dir, before, run);
  const record: TaskRecord = {
    ...baseRecord(task),
    solved: judged.solved,
    reason: judged.reason,
    status: run.status,
    error: run.error,
    answer: run.answer,
    seconds: Math.round(run.seconds * 10) / 10,
    modelCalls: run.usage.modelCalls,
    inputTokens: run.usage.inputTokens,
    outputTokens: run.usage.outputTokens,
    toolCalls: run.usage.toolCalls,
    questions: run.questions,
    permissions: run.permissions,
    server: totals(proxy.callsOf(`klea:${task.id}`)),
  };
  // Everything a developer needs to see why: the events, the final state, the files the task touched.
  const touched = [...changes.added, ...changes.modified];
  writeFileSync(
    path.join(OUT_DIR, 'tasks', `${task.id}.json`),
    JSON.stringify(
      {
        record,
        taskId: run.taskId,
        changes,
        files: Object.fromEntries(touched.map((p) => [p, after.get(p)])),
        serverCalls: proxy.callsOf(`klea:${task.id}`),
        refusedDecisions: run.refusedDecisions,
        state: run.state,
        events: run.events,
      },
      null,
      2
    )
  );
  return record;
}

async function runPeerTask(
  task: EvalTask,
  projectsDir: string,
  proxy: RecordingProxy,
  model: EvalModel
): Promise<TaskRecord> {
  const dir = path.join(projectsDir, task.id);
  writeProject(dir, task.files);
  const before = snapshot(dir);
  const outDir = path.join(OUT_DIR, 'peer', task.id);
  proxy.label = `peer:${task.id}`;
  const run = await runPeer({
    projectDir: dir,
    prompt: task.prompt,
    baseUrl: proxy.baseUrl,
    modelId: model.id,
    outDir,
    timeoutMs: TASK_SECONDS * 1000,
  });
  proxy.label = null;
  const { judged, changes, after } = await checkProject(task, dir, before, run);
  const calls = proxy.callsOf(`peer:${task.id}`);
  const server = totals(calls);
  const record: TaskRecord = {
    ...baseRecord(task),
    solved: judged.solved,
    reason: judged.reason,
    status: run.status,
    error: run.error,
    answer: run.answer,
    seconds: Math.round(run.seconds * 10) / 10,
    modelCalls: run.steps,
    inputTokens: server.promptTokens,
    outputTokens: server.completionTokens,
    toolCalls: 0,
    questions: 0,
    permissions: 0,
    server,
  };
  const touched = [...changes.added, ...changes.modified];
  writeFileSync(
    path.join(outDir, 'record.json'),
    JSON.stringify(
      {
        record,
        exitStatus: run.exitStatus,
        changes,
        files: Object.fromEntries(touched.map((p) => [p, after.get(p)])),
        serverCalls: calls,
      },
      null,
      2
    )
  );
  return record;
}

const logRecord = (who: string, r: TaskRecord) =>
  console.log(
    `eval:   ${who} ${r.solved ? 'solved' : 'NOT solved'} (${r.status}, ${r.seconds} s, ${r.server.calls} model calls, ` +
      `prompt tokens ${r.server.promptEvaluated} evaluated / ${r.server.promptCached} cached): ${r.reason}`
  );

async function main() {
  const model = parseModel(process.env.KLEA_EVAL_MODEL, process.env.KLEA_EVAL_PROFILE);
  const split = parseSplit(process.env.KLEA_EVAL_SPLIT);
  const tasks = selectTasks(process.env.KLEA_EVAL_TASKS, TASKS, split);
  const peerMode = (process.env.KLEA_EVAL_PEER ?? '').trim().toLowerCase();
  if (!['', '0', '1', 'only'].includes(peerMode)) throw new Error(`PEER must be 1 or only, not "${peerMode}"`);
  const runKlea = peerMode !== 'only';
  const runThePeer = peerMode === '1' || peerMode === 'only';
  const subset = process.env.KLEA_EVAL_TASKS?.trim() ? tasks.map((t) => t.id) : null;
  const whole = !subset && split === 'all';

  const modelFile = path.join(LLAMA_DIR, 'models', model.file);
  const installer = `scripts/install-eval-model.sh ${model.key}`;
  if (!existsSync(modelFile)) throw new Error(`${modelFile} is missing: run ${installer}`);
  const actual = await sha256(modelFile);
  if (actual !== model.sha256)
    throw new Error(`${modelFile} has sha256 ${actual}, not ${model.sha256}: refused; run ${installer}`);
  const peerAbout = runThePeer ? peerVersion() : '';

  rmSync(path.join(OUT_DIR, 'tasks'), { recursive: true, force: true });
  rmSync(path.join(OUT_DIR, 'peer'), { recursive: true, force: true });
  rmSync(path.join(OUT_DIR, 'exchanges.jsonl'), { force: true });
  mkdirSync(path.join(OUT_DIR, 'tasks'), { recursive: true });
  mkdirSync(path.join(OUT_DIR, 'peer'), { recursive: true });
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-eval-')));
  // The tree as it was built just before this run: HEAD may move while the run goes on.
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
  const commit = `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' with uncommitted changes' : ''}`;

  let llama: LlamaServer | undefined;
  let proxy: RecordingProxy | undefined;
  let stack: KleaStack | undefined;
  const stopAll = async () => {
    await stack?.stop();
    await proxy?.stop();
    await llama?.stop();
    stack = proxy = llama = undefined;
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      console.error(`eval: ${sig}, stopping`);
      void stopAll().finally(() => process.exit(130));
    });

  const runs: AgentRun[] = [];
  try {
    console.log(`eval: starting llama.cpp's server with ${model.file} (${model.name})`);
    llama = await startLlamaServer({
      model: modelFile,
      ctx: CTX,
      nPredict: N_PREDICT,
      // KLEA_LLAMA_THREADS, else the server's own choice: all cores but one (Klea's processes need one meanwhile).
      timeoutMs: 300_000,
      logFile: path.join(OUT_DIR, 'llama.log'),
      installer,
    });
    proxy = await startRecordingProxy(llama.baseUrl, path.join(OUT_DIR, 'exchanges.jsonl'));
    const server = { name: serverName(), threads: llama.threads, ctx: CTX, nPredict: N_PREDICT };
    const agentRun = (agent: AgentName, version: string, date: string, loadStart: number, records: TaskRecord[]) => ({
      agent,
      version,
      date,
      commit,
      server,
      machine: machine(loadStart),
      subset,
      split,
      tasks: records,
      betweenTasks: totals(proxy!.callsOf(null)),
    });

    if (runKlea) {
      const date = new Date().toISOString();
      const loadStart = os.loadavg()[0];
      const projectsDir = path.join(root, 'projects');
      mkdirSync(projectsDir);
      console.log(
        `eval: starting Klea (node dist/scripts/start.js) against ${proxy.baseUrl} (${llama.threads} thread(s))`
      );
      stack = await startKlea({
        dir: root,
        projectsDir,
        modelBaseUrl: proxy.baseUrl,
        modelName: model.id,
        profile: model.profile,
        logFile: path.join(OUT_DIR, 'stack.log'),
      });
      const api = new KleaApi(stack.apiUrl);
      const records: TaskRecord[] = [];
      for (const [i, task] of tasks.entries()) {
        console.log(`eval: [${i + 1}/${tasks.length}] ${task.id} (${task.split}): ${task.prompt}`);
        const record = await runKleaTask(api, task, projectsDir, proxy);
        records.push(record);
        logRecord('Klea', record);
      }
      await stack.stop();
      stack = undefined;
      runs.push(agentRun('klea', `Klea, model.profile ${model.profile}`, date, loadStart, records));
    }

    if (runThePeer) {
      const date = new Date().toISOString();
      const loadStart = os.loadavg()[0];
      const projectsDir = path.join(root, 'peer-projects');
      mkdirSync(projectsDir);
      console.log(`eval: ${peerAbout} against ${proxy.baseUrl}`);
      const records: TaskRecord[] = [];
      for (const [i, task] of tasks.entries()) {
        console.log(`eval: [${i + 1}/${tasks.length}] ${task.id} (${task.split}) with ${PEER_NAME}`);
        const record = await runPeerTask(task, projectsDir, proxy, model);
        records.push(record);
        logRecord(PEER_NAME, record);
      }
      runs.push(agentRun('mini-swe-agent', peerAbout, date, loadStart, records));
    }
  } finally {
    await stopAll();
    rmSync(root, { recursive: true, force: true });
  }

  const target = whole ? path.join(REPO_ROOT, 'bench') : OUT_DIR;
  const jsonFile = path.join(target, 'EVAL.json');
  const previous = whole && existsSync(jsonFile) ? readEvalFile(readFileSync(jsonFile, 'utf8')) : undefined;
  const file = mergeRun(previous, model, runs);
  writeFileSync(jsonFile, `${JSON.stringify(file, null, 2)}\n`);
  writeFileSync(path.join(target, 'EVAL.md'), renderMarkdown(file, whole ? TASKS : tasks));
  for (const run of runs) {
    const s = summarise(run.tasks);
    const half = (h: string) => summarise(run.tasks.filter((t) => t.split === h));
    const [d, h] = [half('dev'), half('holdout')];
    console.log(
      `eval: ${run.agent} with ${model.key}: solved ${s.solved} of ${s.total} (${s.percent} %; dev ${d.solved}/${d.total},` +
        ` holdout ${h.solved}/${h.total}); median ${s.medianSeconds} s, max ${s.maxSeconds} s, ${s.overTime} over ${TASK_SECONDS / 60} min;` +
        ` ${s.server.calls} model calls, ${s.promptEvaluatedPerTask} prompt tokens evaluated per task (${s.promptCachedPerTask} from cache)`
    );
  }
  for (const t of targets(model.key, file.models[model.key]))
    console.log(`eval: target "${t.text}": ${t.met === null ? 'not measured' : t.met ? 'met' : 'NOT met'} (${t.seen})`);
  console.log(`eval: wrote ${path.relative(REPO_ROOT, target) || '.'}/EVAL.md and EVAL.json`);
}

main().catch((err: unknown) => {
  console.error(`eval: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
