/**
 * `klea ask "…"`: starts a task over the REST API, prints its events as they come, and asks at the prompt when the
 * task waits for a review, answers, or a permission. Files the task changed are listed with their added and removed
 * lines (a diffstat) when it ends; `--diff` prints each change's unified diff under its step as well. `klea rewind
 * --rerun` follows the task it rewound with the same printing (`follow`).
 */
import readline from 'node:readline';
import type { z } from 'zod';
import type { CreateTaskRequestSchema } from '../common/api';
import type { KleaEvent } from '../common/events';
import type { ClarifyAnswers, PermissionDecision, ReviewDecision } from '../common/task';
import { createFrameParser, one, visibleText } from './page-modules';
import { usage } from './usage';

interface Options {
  prompt: string;
  /** Follow this task from after this seq instead of starting one (a re-run after a rewind). */
  follow?: { taskId: string; after: number };
  api: string;
  token?: string;
  review?: 'always';
  readOnly: boolean;
  project?: string;
  /** Print each change's unified diff under its step. */
  diff?: boolean;
}

export function parseArgs(argv: string[]): Options {
  const [command, ...rest] = argv;
  if (command !== 'ask') usage(command ? `unknown command "${command}"` : undefined);
  const opts: Options = {
    prompt: '',
    api: process.env.KLEA_API_URL ?? 'http://127.0.0.1:8080',
    token: process.env.KLEA_API_TOKEN,
    readOnly: false,
  };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--api') opts.api = rest[++i] ?? usage('--api needs a URL');
    else if (a === '--token') opts.token = rest[++i] ?? usage('--token needs a value');
    else if (a === '--project') opts.project = rest[++i] ?? usage('--project needs a directory');
    else if (a === '--review') {
      if (rest[++i] !== 'always') usage('--review takes "always"');
      opts.review = 'always';
    } else if (a === '--read-only') opts.readOnly = true;
    else if (a === '--diff') opts.diff = true;
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else opts.prompt = opts.prompt ? `${opts.prompt} ${a}` : a;
  }
  if (!opts.prompt.trim()) usage('give the request to ask');
  opts.api = opts.api.replace(/\/$/, '');
  return opts;
}

export async function ask(
  opts: Options,
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }
): Promise<number> {
  // Security: nothing reaches the terminal as a control sequence, whatever the model chose (a title holding `\r` or
  // `ESC[2K` would rewrite what the user is asked to approve; OSC 52 would write their clipboard).
  const say = (line: string) => io.output.write(`${visibleText(line)}\n`);
  /** Files the task changed so far, with their added and removed lines. */
  const changed = new Map<string, { added: number; removed: number }>();
  const rl = readline.createInterface({ input: io.input, terminal: false });
  const lines: string[] = [];
  const waiting: Array<(l: string) => void> = [];
  rl.on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const question = (q: string) => {
    io.output.write(visibleText(q));
    return new Promise<string>((resolve) => {
      const l = lines.shift();
      if (l !== undefined) resolve(l);
      else waiting.push(resolve);
    });
  };
  const headers = (extra: Record<string, string> = {}) => ({
    ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
    ...extra,
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${opts.api}${path}`, {
      method,
      headers: headers(body ? { 'content-type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = (await res.json().catch(() => ({}))) as { error?: { message: string } } & Record<string, unknown>;
    if (!res.ok) throw new Error(data.error?.message ?? `HTTP ${res.status}`);
    return data;
  };

  try {
    let taskId: string;
    let last = 0;
    if (opts.follow) {
      ({ taskId, after: last } = opts.follow);
    } else {
      const created = await call('POST', '/tasks', {
        prompt: opts.prompt,
        ...(opts.review ? { review: opts.review } : {}),
        ...(opts.readOnly ? { toolAccess: 'read_only' } : {}),
        ...(opts.project ? { projectDir: opts.project } : {}),
      } satisfies z.input<typeof CreateTaskRequestSchema>);
      taskId = String(created.taskId);
      say(`task ${one(taskId)} · ${one(created.temporalUiUrl)}`);
    }
    for (;;) {
      const res = await fetch(`${opts.api}/tasks/${taskId}/events`, {
        headers: headers({ accept: 'text/event-stream', ...(last ? { 'last-event-id': String(last) } : {}) }),
      });
      if (!res.ok || !res.body) throw new Error(`cannot follow the task: HTTP ${res.status}`);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const frames = createFrameParser();
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        for (const frame of frames.push(decoder.decode(chunk.value, { stream: true }))) {
          if (frame.data === undefined) continue;
          const e = JSON.parse(frame.data) as KleaEvent;
          if (e.seq <= last) continue;
          last = e.seq;
          const code = await handle(e, taskId);
          if (code !== null) {
            await reader.cancel();
            return code;
          }
        }
      }
    }
  } catch (err) {
    say(`klea: ${(err as Error).message}`);
    return 1;
  } finally {
    rl.close();
  }

  async function handle(e: KleaEvent, taskId: string): Promise<number | null> {
    switch (e.type) {
      case 'plan':
      case 'replanned':
        say(`${e.type === 'plan' ? 'plan' : `replanned (${one(e.reason)})`}: ${one(e.plan.goal)}`);
        for (const s of e.plan.steps)
          say(
            `  ${one(s.id)}. ${one(s.title)}${s.depends_on.length ? ` (after ${s.depends_on.map(one).join(', ')})` : ''}`
          );
        return null;
      case 'review_requested': {
        if (e.diff) {
          const d = e.diff;
          const parts = [
            ...d.added.map((id) => `+${one(id)}`),
            ...d.removed.map((id) => `-${one(id)}`),
            ...d.changed.map((c) => `~${one(c.stepId)} (${c.fields.map(one).join(', ')})`),
          ];
          say(`  revised after "${one(e.feedback ?? '')}": ${parts.join(' ') || 'no step changed'}`);
        }
        const a = (await question(`review (${e.reason}): [a]pprove or [r]evise? `)).trim().toLowerCase();
        const review: ReviewDecision = a.startsWith('r')
          ? { decision: 'revise', feedback: await question('what should change? '), planHash: e.planHash }
          : { decision: 'approve', planHash: e.planHash };
        await call('POST', `/tasks/${taskId}/review`, review);
        return null;
      }
      case 'questions': {
        const answers: Record<string, string> = {};
        for (const q of e.questions) answers[q] = await question(`${one(q)} `);
        await call('POST', `/tasks/${taskId}/clarify`, { answers } satisfies ClarifyAnswers);
        return null;
      }
      case 'permission_requested': {
        // Security: show the whole call, so nobody approves a path without seeing what the command does with it.
        // A command's lines stay lines, each after a continuation mark, so none reads as a line of the CLI's own.
        const command = e.call?.args.command;
        if (typeof command === 'string') say(`  $ ${command.split('\n').join('\n  > ')}`);
        else if (e.call) say(`  ${one(e.call.tool)} ${one(JSON.stringify(e.call.args))}`);
        // A change to an agent instruction file (AGENTS.md) is shown as its diff, each line marked as the CLI's own.
        if (e.change)
          say(
            `  ${e.change.diff
              .split('\n')
              .map((l) => `| ${one(l)}`)
              .join('\n  ')}`
          );
        const a = (
          await question(
            `${one(e.tool)} wants to ${one(e.op)} ${one(e.path)} (${one(e.reason)}): allow [o]nce, for the [s]ession, or [d]eny? `
          )
        )
          .trim()
          .toLowerCase();
        const decision = a.startsWith('o') ? 'allow_once' : a.startsWith('s') ? 'allow_session' : 'deny';
        const permission: PermissionDecision = { requestId: e.requestId, decision };
        await call('POST', `/tasks/${taskId}/permissions`, permission);
        return null;
      }
      case 'step_started':
        say(`→ ${one(e.stepId)} ${one(e.title)}${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}`);
        return null;
      case 'step_finished':
        say(`  ${one(e.stepId)} ${e.status}: ${one(e.summary.split('\n')[0].slice(0, 120))}`);
        for (const c of e.changes ?? []) {
          const f = changed.get(c.path) ?? { added: 0, removed: 0 };
          changed.set(c.path, { added: f.added + c.added, removed: f.removed + c.removed });
          say(`    ${one(c.path)} +${c.added} -${c.removed}`);
          if (opts.diff && c.diff) for (const line of c.diff.split('\n')) say(`      ${line}`);
        }
        return null;
      case 'answer':
        say(`\n${e.text}\n\n[${one(e.label)}]`);
        return null;
      case 'error':
        say(`error: ${one(e.message)}`);
        return null;
      case 'rewound':
        say(`rewound to before step ${one(e.toStep)} (steps ${e.steps.map(one).join(', ')} undone)`);
        return null;
      case 'status':
        if (changed.size) {
          say(diffstat(changed));
        }
        say(`task ${e.status}${e.detail && e.status !== 'done' ? `: ${one(e.detail)}` : ''}`);
        return e.status === 'done' ? 0 : 1;
      default:
        return null;
    }
  }
}

/** `git diff --stat` style: one line per file, then the totals. */
export function diffstat(files: Map<string, { added: number; removed: number }>): string {
  const width = Math.max(...[...files.keys()].map((p) => one(p).length));
  let added = 0;
  let removed = 0;
  const lines = [...files].map(([p, f]) => {
    added += f.added;
    removed += f.removed;
    return ` ${one(p).padEnd(width)} | +${f.added} -${f.removed}`;
  });
  const n = files.size;
  lines.push(
    ` ${n} file${n === 1 ? '' : 's'} changed, ${added} insertion${added === 1 ? '' : 's'}(+), ${removed} deletion${removed === 1 ? '' : 's'}(-)`
  );
  return lines.join('\n');
}
