/**
 * The eval's record: how a task is judged from its checker and its end, the summaries per agent and half, the
 * targets, EVAL.json (keyed by model, then agent, so that a run of one model or one agent leaves the others'
 * figures alone) and EVAL.md.
 */
import { oneLine, type Verdict } from './checks';
import { MAX_DEV_GAP, MODEL_KEYS, MODELS, TASK_SECONDS, type EvalModel, type ModelKey } from './models';
import { NO_CALLS, type CallTotals } from './proxy';
import { CATEGORY_NAMES, type Category, type Split, type SplitChoice } from './task-kit';

export const AGENTS = ['klea', 'mini-swe-agent'] as const;
export type AgentName = (typeof AGENTS)[number];
const AGENT_TITLES: Record<AgentName, string> = { klea: 'Klea', 'mini-swe-agent': 'mini-swe-agent' };

export interface TaskRecord {
  id: string;
  split: Split;
  categories: Category[];
  covers: string;
  prompt: string;
  toolAccess: 'full' | 'read_only';
  solved: boolean;
  /** Why not (when unsolved), else what the checker saw. */
  reason: string;
  /** The task's final status (`timeout` when it was stopped at the limit, `error` when it never ran). */
  status: string;
  error: string | null;
  answer: string | null;
  seconds: number;
  /** The agent's own count (Klea's usage ledger; the peer's steps). */
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  /** Questions the task asked (answered through clarify), paths it asked permission for. */
  questions: number;
  permissions: number;
  /** What llama.cpp's server did for this task's calls, as the eval's proxy saw it. */
  server: CallTotals;
}

export interface AgentRun {
  agent: AgentName;
  /** `Klea`, or `mini-swe-agent 2.4.6 (litellm …)`. */
  version: string;
  /** ISO time the run started. */
  date: string;
  commit: string;
  server: { name: string; threads: number; ctx: number; nPredict: number };
  machine: { cores: number; cpu: string; memGiB: number; node: string; loadStart: number; loadEnd: number };
  /** Ids of the tasks run when only some were asked for; null for the whole suite. */
  subset: string[] | null;
  split: SplitChoice;
  tasks: TaskRecord[];
  /** Calls the server got while no task ran. */
  betweenTasks: CallTotals;
}

export interface ModelEntry {
  model: Pick<EvalModel, 'key' | 'name' | 'file' | 'sha256' | 'source'>;
  agents: Partial<Record<AgentName, AgentRun>>;
}

export interface EvalFile {
  models: Partial<Record<ModelKey, ModelEntry>>;
}

/**
 * A task's judgement from how it ended and what its checker found. A task must end `done` unless it is one that
 * must be refused (then done or failed both count, the checker deciding); a timed-out task is never solved. The
 * checker's finding is kept in the reason either way, so a task that did its work but ended failed reads so.
 */
export function judge(
  expect: 'done' | 'refused',
  end: { status: string; error: string | null; timedOut: boolean },
  verdict: Verdict
): Verdict {
  const error = end.error ? `: ${oneLine(end.error, 200)}` : '';
  if (end.timedOut) return { solved: false, reason: `over ${TASK_SECONDS} s, stopped; ${verdict.reason}` };
  const endedWell = expect === 'done' ? end.status === 'done' : end.status === 'done' || end.status === 'failed';
  if (!endedWell) return { solved: false, reason: `ended ${end.status}${error}; ${verdict.reason}` };
  return verdict;
}

export interface Summary {
  total: number;
  solved: number;
  percent: number;
  medianSeconds: number;
  maxSeconds: number;
  overTime: number;
  seconds: number;
  server: CallTotals;
  /** Prompt tokens the server evaluated, and served from its cache, per task (mean). */
  promptEvaluatedPerTask: number;
  promptCachedPerTask: number;
}

export function median(xs: readonly number[]): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
export const overTime = (t: Pick<TaskRecord, 'seconds' | 'status'>) =>
  t.status === 'timeout' || t.seconds > TASK_SECONDS;

export function summarise(tasks: readonly TaskRecord[]): Summary {
  const server = tasks.reduce(
    (s, t) => ({
      calls: s.calls + t.server.calls,
      promptEvaluated: s.promptEvaluated + t.server.promptEvaluated,
      promptCached: s.promptCached + t.server.promptCached,
      promptTokens: s.promptTokens + t.server.promptTokens,
      completionTokens: s.completionTokens + t.server.completionTokens,
    }),
    NO_CALLS
  );
  const solved = tasks.filter((t) => t.solved).length;
  const seconds = tasks.map((t) => t.seconds);
  return {
    total: tasks.length,
    solved,
    percent: tasks.length ? round1((100 * solved) / tasks.length) : 0,
    medianSeconds: round1(median(seconds)),
    maxSeconds: round1(Math.max(0, ...seconds)),
    overTime: tasks.filter(overTime).length,
    seconds: Math.round(seconds.reduce((a, b) => a + b, 0)),
    server,
    promptEvaluatedPerTask: tasks.length ? Math.round(server.promptEvaluated / tasks.length) : 0,
    promptCachedPerTask: tasks.length ? Math.round(server.promptCached / tasks.length) : 0,
  };
}

export interface Target {
  /** The target as the issue states it. */
  text: string;
  /** null: not measured by this run (a half or the peer was not run). */
  met: boolean | null;
  seen: string;
}

/** The targets for one model, from Klea's run and the peer's (when there is one). */
export function targets(key: ModelKey, entry: ModelEntry | undefined): Target[] {
  const model = MODELS[key];
  const klea = entry?.agents.klea;
  const peer = entry?.agents['mini-swe-agent'];
  const tasks = klea?.tasks ?? [];
  const dev = summarise(tasks.filter((t) => t.split === 'dev'));
  const holdout = summarise(tasks.filter((t) => t.split === 'holdout'));
  const all = summarise(tasks);
  const size = model.key.toUpperCase();
  const out: Target[] = [
    {
      text: `holdout ≥ ${model.holdoutPercent} % with ${size}`,
      met: holdout.total ? holdout.percent >= model.holdoutPercent : null,
      seen: holdout.total ? `${holdout.solved} / ${holdout.total} (${holdout.percent} %)` : 'holdout not run',
    },
    {
      text: `dev not higher than holdout by more than ${MAX_DEV_GAP} points`,
      met: dev.total && holdout.total ? dev.percent - holdout.percent <= MAX_DEV_GAP : null,
      seen:
        dev.total && holdout.total
          ? `dev ${dev.percent} %, holdout ${holdout.percent} %: ${round1(dev.percent - holdout.percent)} points`
          : 'both halves not run',
    },
    {
      text: `median task ≤ ${model.medianSeconds} s with ${size}`,
      met: all.total ? all.medianSeconds <= model.medianSeconds : null,
      seen: all.total ? `${all.medianSeconds} s` : 'not run',
    },
    {
      text: `none over ${TASK_SECONDS / 60} minutes`,
      met: all.total ? all.overTime === 0 : null,
      seen: all.total ? `${all.overTime} over, the longest ${all.maxSeconds} s` : 'not run',
    },
  ];
  const shared = peer ? tasks.filter((t) => peer.tasks.some((p) => p.id === t.id)) : [];
  const peerShared = peer ? peer.tasks.filter((p) => shared.some((t) => t.id === p.id)) : [];
  const kleaSolved = shared.filter((t) => t.solved).length;
  const peerSolved = peerShared.filter((t) => t.solved).length;
  out.push({
    text: 'Klea ahead of mini-swe-agent with the same model',
    met: shared.length ? kleaSolved > peerSolved : null,
    seen: shared.length
      ? `Klea ${kleaSolved}, mini-swe-agent ${peerSolved} of the same ${shared.length}`
      : 'mini-swe-agent not run (make eval PEER=1)',
  });
  return out;
}

/** Folds a run into the file: the model's entry keeps the other agent's run, and the other models stay. */
export function mergeRun(file: EvalFile | undefined, model: EvalModel, runs: readonly AgentRun[]): EvalFile {
  const models = { ...(file?.models ?? {}) };
  const before = models[model.key];
  const agents = { ...(before?.agents ?? {}) };
  for (const run of runs) agents[run.agent] = run;
  models[model.key] = {
    model: { key: model.key, name: model.name, file: model.file, sha256: model.sha256, source: model.source },
    agents,
  };
  return { models };
}

/** EVAL.json as written, or nothing when it is missing or of an older shape (one run, no models). */
export function readEvalFile(text: string | undefined): EvalFile | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<EvalFile>;
    return value && typeof value.models === 'object' && value.models !== null ? (value as EvalFile) : undefined;
  } catch {
    return undefined;
  }
}

/** A table cell: one line, pipes escaped. */
const cell = (text: string, max = 200) => oneLine(text, max).replace(/\|/g, '\\|');
const yesNo = (met: boolean | null) => (met === null ? 'not measured' : met ? '**yes**' : '**no**');
const kilo = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : String(n));

function runLine(run: AgentRun): string {
  const m = run.machine;
  const busy = Math.max(m.loadStart, m.loadEnd) > m.cores;
  return (
    `${AGENT_TITLES[run.agent]} (${run.version})` +
    `: run ${run.date.slice(0, 16).replace('T', ' ')} UTC` +
    ` on commit \`${run.commit}\`${run.subset ? `, **a subset** (${run.subset.join(', ')})` : run.split !== 'all' ? `, **the ${run.split} half only**` : ''};` +
    ` ${run.server.name}, ${run.server.threads} thread(s), ${run.server.ctx}-token context, ${run.server.nPredict > 0 ? `at most ${run.server.nPredict} tokens per answer` : 'no limit of its own on an answer'};` +
    ` ${m.cores} cores (${m.cpu}), ${m.memGiB} GiB, Node ${m.node}, load ${m.loadStart.toFixed(1)} → ${m.loadEnd.toFixed(1)}` +
    (busy ? ' (the cores were shared with other work: slower than on an idle machine)' : '') +
    `; calls between tasks: ${run.betweenTasks.calls}.`
  );
}

function modelSection(key: ModelKey, entry: ModelEntry | undefined): string[] {
  const model = MODELS[key];
  const lines = [`## ${model.name} (\`make eval MODEL=${key}\`)`, ''];
  if (!entry?.agents.klea && !entry?.agents['mini-swe-agent'])
    return [...lines, `Not run yet on this suite: \`make eval MODEL=${key}\` (and \`PEER=1\` for the peer).`, ''];
  lines.push(
    `\`${model.file}\` (sha256 \`${model.sha256}\`, from the ${model.source}).`,
    '',
    ...AGENTS.flatMap((a) => (entry.agents[a] ? [`- ${runLine(entry.agents[a])}`] : [])),
    '',
    '### Targets',
    '',
    '| target | met | seen |',
    '| --- | --- | --- |',
    ...targets(key, entry).map((t) => `| ${t.text} | ${yesNo(t.met)} | ${cell(t.seen)} |`),
    '',
    '### Results',
    '',
    '| agent | half | solved | % | median s | max s | over 5 min | model calls | tokens in / out | prompt tokens evaluated per task | served from cache per task |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
  );
  for (const agent of AGENTS) {
    const run = entry.agents[agent];
    if (!run) continue;
    const bothHalves = new Set(run.tasks.map((t) => t.split)).size === 2;
    for (const half of ['dev', 'holdout', 'all'] as const) {
      const tasks = run.tasks.filter((t) => half === 'all' || t.split === half);
      // A run of one half has no total of its own to show.
      if (!tasks.length || (half === 'all' && !bothHalves)) continue;
      const s = summarise(tasks);
      lines.push(
        `| ${AGENT_TITLES[agent]} | ${half} | ${s.solved} / ${s.total} | ${s.percent} | ${s.medianSeconds} | ${s.maxSeconds} | ${s.overTime} |` +
          ` ${s.server.calls} | ${kilo(s.server.promptTokens)} / ${kilo(s.server.completionTokens)} | ${s.promptEvaluatedPerTask} | ${s.promptCachedPerTask} |`
      );
    }
  }
  const klea = entry.agents.klea?.tasks ?? [];
  const peer = entry.agents['mini-swe-agent']?.tasks ?? [];
  const ids = [...new Set([...klea.map((t) => t.id), ...peer.map((t) => t.id)])];
  const byId = (tasks: TaskRecord[], id: string) => tasks.find((t) => t.id === id);
  const short = (t: TaskRecord | undefined) =>
    t
      ? [
          t.solved ? 'yes' : 'no',
          cell(t.reason, 220),
          t.seconds.toFixed(0),
          String(t.server.calls),
          `${t.server.promptEvaluated} / ${t.server.promptCached}`,
        ]
      : ['—', '', '', '', ''];
  lines.push(
    '',
    '### Per task',
    '',
    'Prompt tokens: evaluated by the server / served from its KV cache, over all the task’s calls.',
    '',
    '| task | half | Klea | why not / what was seen | s | calls | prompt tokens | asked / allowed |' +
      (peer.length ? ' mini-swe-agent | why not / what was seen | s | calls | prompt tokens |' : ''),
    '| --- | --- | --- | --- | ---: | ---: | ---: | ---: |' + (peer.length ? ' --- | --- | ---: | ---: | ---: |' : '')
  );
  for (const id of ids) {
    const k = byId(klea, id);
    const p = byId(peer, id);
    const half = (k ?? p)!.split;
    lines.push(
      `| ${id} | ${half} | ${short(k).join(' | ')} | ${k ? `${k.questions} / ${k.permissions}` : ''} |` +
        (peer.length ? ` ${short(p).join(' | ')} |` : '')
    );
  }
  lines.push('');
  return lines;
}

export function renderMarkdown(
  file: EvalFile,
  tasks: ReadonlyArray<{
    id: string;
    split: Split;
    categories: readonly Category[];
    prompt: string;
    toolAccess?: string;
  }>
): string {
  const dev = tasks.filter((t) => t.split === 'dev').length;
  const lines = [
    '# Klea eval: real tasks with real models',
    '',
    `\`make eval\` runs ${tasks.length} tasks, ${dev} in the \`dev\` half (tune on these) and ${tasks.length - dev} in the` +
      ' `holdout` half (never tuned on: a change is kept only if holdout does not drop), with a small model on' +
      " llama.cpp's server, and with `PEER=1` the same tasks with mini-swe-agent on the same server and model.",
    '',
    '- **User**: every task in a fresh project directory through the REST API; it approves every plan, allows every' +
      " path once, and answers every question with the task's answer. mini-swe-agent runs each task in a fresh copy" +
      ' of the same files, on its own (it can neither ask nor be granted a path).',
    '- **Judged** by a checker per task: the files on disk, commands it runs itself, the value in the answer; never' +
      ` what the model says it did. A task over ${TASK_SECONDS / 60} minutes is stopped and not solved.`,
    "- **Measured** by a proxy between the agent and the server: model calls, the server's `usage` (tokens in / out)," +
      ' and its `timings`: prompt tokens really evaluated (`prompt_n`) and served from the KV cache (`cache_n`).',
    '',
    'Runs before this report, and what each change did: [EVAL-history.md](EVAL-history.md).',
    '',
    ...MODEL_KEYS.flatMap((key) => modelSection(key, file.models[key])),
    '## Tasks',
    '',
    '| task | half | kinds | prompt | tool access |',
    '| --- | --- | --- | --- | --- |',
    ...tasks.map(
      (t) =>
        `| ${t.id} | ${t.split} | ${t.categories.join(', ')} | ${cell(t.prompt, 240)} | ${t.toolAccess ?? 'full'} |`
    ),
    '',
    `Kinds: ${Object.entries(CATEGORY_NAMES)
      .map(([k, v]) => `\`${k}\` ${v}`)
      .join('; ')}.`,
    '',
    "Each task's events, final state and the logs of the latest run are in `.klea/eval/`.",
    '',
  ];
  return lines.join('\n');
}
