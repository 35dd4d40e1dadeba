/** The eval's record of a run: how a task is judged from its checker and its end, the summary, and EVAL.md. */
import { oneLine, type Verdict } from './checks';

/** The target: at least this share of the tasks solved, each within this time. */
export const TARGET = { solvedPercent: 80, seconds: 300 } as const;

export interface TaskRecord {
  id: string;
  covers: string;
  prompt: string;
  toolAccess: 'full' | 'read_only';
  solved: boolean;
  /** Why not (when unsolved), else what the checker saw. */
  reason: string;
  /** The task's final status (`timeout` when the eval cancelled it, `error` when it never ran). */
  status: string;
  error: string | null;
  answer: string | null;
  seconds: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  /** Questions the task asked (answered through clarify), paths it asked permission for. */
  questions: number;
  permissions: number;
}

export interface EvalRun {
  /** ISO time the run started. */
  date: string;
  commit: string;
  model: { name: string; file: string; sha256: string };
  server: { name: string; threads: number; ctx: number; nPredict: number };
  machine: { cores: number; cpu: string; memGiB: number; node: string; loadStart: number; loadEnd: number };
  /** Ids of the tasks run when only some were asked for; null for the whole suite. */
  subset: string[] | null;
  tasks: TaskRecord[];
}

export interface Summary {
  total: number;
  solved: number;
  percent: number;
  withinTime: number;
  seconds: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  met: boolean;
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
  if (end.timedOut) return { solved: false, reason: `over ${TARGET.seconds} s, cancelled; ${verdict.reason}` };
  const endedWell = expect === 'done' ? end.status === 'done' : end.status === 'done' || end.status === 'failed';
  if (!endedWell) return { solved: false, reason: `ended ${end.status}${error}; ${verdict.reason}` };
  return verdict;
}

export function summarise(tasks: readonly TaskRecord[]): Summary {
  const sum = (f: (t: TaskRecord) => number) => tasks.reduce((n, t) => n + f(t), 0);
  const solved = tasks.filter((t) => t.solved).length;
  const withinTime = tasks.filter((t) => t.seconds < TARGET.seconds && t.status !== 'timeout').length;
  const percent = tasks.length ? Math.round((1000 * solved) / tasks.length) / 10 : 0;
  return {
    total: tasks.length,
    solved,
    percent,
    withinTime,
    seconds: Math.round(sum((t) => t.seconds)),
    modelCalls: sum((t) => t.modelCalls),
    inputTokens: sum((t) => t.inputTokens),
    outputTokens: sum((t) => t.outputTokens),
    met: tasks.length > 0 && percent >= TARGET.solvedPercent && withinTime === tasks.length,
  };
}

/** A table cell: one line, pipes escaped. */
const cell = (text: string, max = 200) => oneLine(text, max).replace(/\|/g, '\\|');

export function renderMarkdown(run: EvalRun): string {
  const s = summarise(run.tasks);
  const m = run.machine;
  const busy = Math.max(m.loadStart, m.loadEnd) > m.cores;
  const lines = [
    '# Klea eval: real tasks with a real model',
    '',
    `Run ${run.date.slice(0, 16).replace('T', ' ')} UTC by \`make eval\` on commit \`${run.commit}\`.` +
      (run.subset ? ` **A subset** (\`TASKS=${run.subset.join(',')}\`): the target is for the whole suite.` : ''),
    '',
    `- **Model**: ${run.model.name}, \`${run.model.file}\` (sha256 \`${run.model.sha256}\`), served by ${run.server.name}` +
      ` with ${run.server.threads} thread(s), a ${run.server.ctx}-token context and at most ${run.server.nPredict} tokens per answer.` +
      ' Klea is configured with nothing but `OPENAI_BASE_URL` and `KLEA_MODEL` (temperature 0 is its default).',
    `- **Machine**: ${m.cores} cores (${m.cpu}), ${m.memGiB} GiB, Node ${m.node}; load average ${m.loadStart.toFixed(1)} at the start, ${m.loadEnd.toFixed(1)} at the end.` +
      (busy
        ? ' The cores were shared with other work during the run, so the timings are slower than on an idle machine.'
        : ''),
    '- **User**: every task in a fresh project directory through the REST API; it approves every plan, allows every path' +
      " once, and answers every question with the task's answer. A checker judges the files on disk, commands it runs" +
      ' itself and the value in the answer, never what the model says it did. A task over 5 minutes is cancelled.',
    `- **Target**: at least ${TARGET.solvedPercent} % solved, each task under ${TARGET.seconds / 60} minutes.`,
    '',
    '## Result',
    '',
    `**Solved ${s.solved} of ${s.total} (${s.percent} %)**; under ${TARGET.seconds / 60} minutes: ${s.withinTime} of ${s.total}.` +
      ` Target met: **${s.met ? 'yes' : 'no'}**.`,
    '',
    `All tasks: ${s.seconds} s, ${s.modelCalls} model calls, ${s.inputTokens} input and ${s.outputTokens} output tokens.`,
    '',
    '| task | covers | solved | why not / what was seen | status | seconds | model calls | tokens in / out |',
    '| --- | --- | --- | --- | --- | ---: | ---: | ---: |',
    ...run.tasks.map(
      (t) =>
        `| ${t.id} | ${cell(t.covers)} | ${t.solved ? 'yes' : 'no'} | ${cell(t.reason, 300)} | ${t.status} | ${t.seconds.toFixed(0)} | ${t.modelCalls} | ${t.inputTokens} / ${t.outputTokens} |`
    ),
    '',
    '## Tasks',
    '',
    '| task | prompt | tool access | questions asked | permissions asked |',
    '| --- | --- | --- | ---: | ---: |',
    ...run.tasks.map((t) => `| ${t.id} | ${cell(t.prompt)} | ${t.toolAccess} | ${t.questions} | ${t.permissions} |`),
    '',
    "Each task's events, final state and the stack's logs of the latest run are in `.klea/eval/`.",
    '',
  ];
  return lines.join('\n');
}
