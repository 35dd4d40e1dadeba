/**
 * `make eval`: Klea on real tasks with a real model. Starts llama.cpp's server with Qwen2.5-Coder-0.5B-Instruct
 * (installed by scripts/install-eval-model.sh) and the whole service as `make start` runs it, runs every task of
 * ./tasks.ts through the REST API as a user who approves everything, judges each outcome with the task's checker,
 * and writes bench/EVAL.md and bench/EVAL.json. `KLEA_EVAL_TASKS=hello,calc` (`make eval TASKS=hello,calc`) runs
 * some of the tasks and writes its report to .klea/eval/ instead, leaving the committed figures alone.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../runtime/temporal';
import { diffSnapshots, unsolved, type Verdict } from './checks';
import { driveTask, KleaApi } from './driver';
import { LLAMA_DIR, startLlamaServer, type LlamaServer } from '../../test/support/llama-server';
import { runInProject, snapshot, writeProject } from './project';
import { judge, renderMarkdown, summarise, TARGET, type EvalRun, type TaskRecord } from './report';
import { startKlea, type KleaStack } from './stack';
import { DEFAULT_ANSWER, selectTasks, type EvalTask } from './tasks';

const MODEL = {
  name: 'Qwen2.5-Coder-0.5B-Instruct Q4_K_M',
  id: 'qwen2.5-coder-0.5b-instruct',
  file: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  sha256: '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
};
const CTX = 8192;
/** A small model at temperature 0 can repeat itself until the context is full: the server's cap ends any answer. */
const N_PREDICT = 512;
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

async function runOne(api: KleaApi, task: EvalTask, projectsDir: string): Promise<TaskRecord> {
  const dir = path.join(projectsDir, task.id);
  writeProject(dir, task.files);
  const before = snapshot(dir);
  const toolAccess = task.toolAccess ?? 'full';
  const run = await driveTask(
    api,
    { prompt: task.prompt, projectDir: dir, toolAccess, answer: task.answer ?? DEFAULT_ANSWER },
    TARGET.seconds * 1000
  );
  const after = snapshot(dir);
  const changes = diffSnapshots(before, after);
  let verdict: Verdict;
  try {
    verdict = await task.check({
      status: run.status,
      answer: run.answer,
      error: run.error,
      changes,
      read: (rel) => after.get(rel),
      run: (argv) => runInProject(dir, argv),
    });
  } catch (err) {
    verdict = unsolved(`the checker failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const judged = judge(task.expect, run, verdict);
  const record: TaskRecord = {
    id: task.id,
    covers: task.covers,
    prompt: task.prompt,
    toolAccess,
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

async function main() {
  const tasks = selectTasks(process.env.KLEA_EVAL_TASKS);
  const subset = process.env.KLEA_EVAL_TASKS?.trim() ? tasks.map((t) => t.id) : null;
  const modelFile = path.join(LLAMA_DIR, 'models', MODEL.file);
  if (!existsSync(modelFile)) throw new Error(`${modelFile} is missing: run scripts/install-eval-model.sh`);
  const actual = await sha256(modelFile);
  if (actual !== MODEL.sha256)
    throw new Error(`${modelFile} has sha256 ${actual}, not ${MODEL.sha256}: run scripts/install-eval-model.sh`);

  rmSync(path.join(OUT_DIR, 'tasks'), { recursive: true, force: true });
  mkdirSync(path.join(OUT_DIR, 'tasks'), { recursive: true });
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-eval-')));
  const projectsDir = path.join(root, 'projects');
  mkdirSync(projectsDir);
  const date = new Date().toISOString();
  const loadStart = os.loadavg()[0];
  // The tree as it was built just before this run: HEAD may move while the run goes on.
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
  const commit = `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty ? ' with uncommitted changes' : ''}`;

  let llama: LlamaServer | undefined;
  let stack: KleaStack | undefined;
  const stopAll = async () => {
    await stack?.stop();
    await llama?.stop();
    stack = llama = undefined;
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      console.error(`eval: ${sig}, stopping`);
      void stopAll().finally(() => process.exit(130));
    });

  const records: TaskRecord[] = [];
  let threads = 0;
  try {
    console.log(`eval: starting llama.cpp's server with ${MODEL.file}`);
    llama = await startLlamaServer({
      model: modelFile,
      ctx: CTX,
      nPredict: N_PREDICT,
      // KLEA_LLAMA_THREADS, else the server's own choice: all cores but one (Klea's processes need one meanwhile).
      timeoutMs: 300_000,
      logFile: path.join(OUT_DIR, 'llama.log'),
      installer: 'scripts/install-eval-model.sh',
    });
    threads = llama.threads;
    console.log(`eval: starting Klea (node dist/scripts/start.js) against ${llama.baseUrl} (${threads} thread(s))`);
    stack = await startKlea({
      dir: root,
      projectsDir,
      modelBaseUrl: llama.baseUrl,
      modelName: MODEL.id,
      logFile: path.join(OUT_DIR, 'stack.log'),
    });
    const api = new KleaApi(stack.apiUrl);
    for (const [i, task] of tasks.entries()) {
      console.log(`eval: [${i + 1}/${tasks.length}] ${task.id}: ${task.prompt}`);
      const record = await runOne(api, task, projectsDir);
      records.push(record);
      console.log(
        `eval:   ${record.solved ? 'solved' : 'NOT solved'} (${record.status}, ${record.seconds} s, ` +
          `${record.modelCalls} model calls, ${record.inputTokens}+${record.outputTokens} tokens): ${record.reason}`
      );
    }
  } finally {
    await stopAll();
    rmSync(root, { recursive: true, force: true });
  }

  const run: EvalRun = {
    date,
    commit,
    model: { name: MODEL.name, file: MODEL.file, sha256: MODEL.sha256 },
    server: { name: serverName(), threads, ctx: CTX, nPredict: N_PREDICT },
    machine: {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? 'cpu',
      memGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      loadStart,
      loadEnd: os.loadavg()[0],
    },
    subset,
    tasks: records,
  };
  const target = subset ? OUT_DIR : path.join(REPO_ROOT, 'bench');
  writeFileSync(path.join(target, 'EVAL.md'), renderMarkdown(run));
  writeFileSync(
    path.join(target, 'EVAL.json'),
    `${JSON.stringify({ ...run, summary: summarise(records) }, null, 2)}\n`
  );
  const s = summarise(records);
  console.log(
    `eval: solved ${s.solved} of ${s.total} (${s.percent} %), ${s.withinTime} under ${TARGET.seconds / 60} min; ` +
      `target met: ${s.met ? 'yes' : 'no'}. Wrote ${path.relative(REPO_ROOT, target)}/EVAL.md and EVAL.json`
  );
}

main().catch((err: unknown) => {
  console.error(`eval: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
