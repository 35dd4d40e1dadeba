#!/usr/bin/env node
/**
 * `klea ask "…"`: a thin command-line client. Starts a task over the REST API, prints its events as they come,
 * and asks at the prompt when the task waits for a review, answers, or a permission.
 *
 *   klea ask "List the TODOs in src/" [--review always] [--read-only] [--project DIR] [--diff]
 *            [--api http://127.0.0.1:8080] [--token T]     (KLEA_API_URL, KLEA_API_TOKEN)
 *   klea rewind <task> --to s3 [--rerun] [--force] [--dry-run] [--api URL] [--token T]
 *   klea mcp list | approve <server> [--yes] | revoke <server>      (on the worker's machine: KLEA_DATA_DIR)
 *
 * Files the task changed are listed with their added and removed lines (a diffstat) when it ends; `--diff`
 * prints each change's unified diff under its step as well. `rewind` restores the project to what it was before
 * the step (listing each file), then ends the task `rewound` or, with `--rerun`, follows it as it runs again from
 * there; `--dry-run` only lists what it would restore and what conflicts. `mcp` shows the MCP servers of klea.yaml
 * that wait for the user's approval of what they run (runtime/mcp-approvals.ts), and approves or revokes one.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import type { z } from 'zod';
import type { CreateTaskRequestSchema } from '../common/api';
import type { KleaEvent } from '../common/events';
import type { ClarifyAnswers, PermissionDecision, ReviewDecision } from '../common/task';
import { approvalsFile, approve, readApprovals, revoke, type LaunchShown } from '../runtime/mcp-approvals';
import { REPO_ROOT } from '../runtime/repo-root';
import type * as Sse from '../web/sse';
import type * as Visible from '../web/visible';

// The web page's own stream parser, so the two clients read frames alike. The page's scripts are served as they
// are and never copied into dist/, so it is loaded from the installation's web/ folder (an ES module, which
// require() loads from Node 20.19 on).
const webModule = createRequire(__filename);
const { createFrameParser } = webModule(path.join(REPO_ROOT, 'web', 'sse.js')) as typeof Sse;
// The page's rule for showing model-chosen text: control and bidirectional characters are shown, never obeyed.
const { visibleText, visibleLine } = webModule(path.join(REPO_ROOT, 'web', 'visible.js')) as typeof Visible;
/** One value on one line, shown (a title, a path, an id). */
const one = (value: unknown) => visibleLine(String(value));

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

function usage(message?: string): never {
  if (message) process.stderr.write(`klea: ${message}\n`);
  process.stderr.write(
    'usage: klea ask "<request>" [--review always] [--read-only] [--project DIR] [--diff] [--api URL] [--token TOKEN]\n' +
      '       klea rewind <task> --to STEP [--rerun] [--force] [--dry-run] [--api URL] [--token TOKEN]\n' +
      '       klea mcp list | approve <server> [--yes] | revoke <server>\n'
  );
  process.exit(2);
}

export interface RewindOptions {
  taskId: string;
  toStep: string;
  rerun: boolean;
  force: boolean;
  dryRun: boolean;
  api: string;
  token?: string;
}

function parseRewindArgs(rest: string[]): RewindOptions {
  const opts: RewindOptions = {
    taskId: '',
    toStep: '',
    rerun: false,
    force: false,
    dryRun: false,
    api: process.env.KLEA_API_URL ?? 'http://127.0.0.1:8080',
    token: process.env.KLEA_API_TOKEN,
  };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--to') opts.toStep = rest[++i] ?? usage('--to needs a step id');
    else if (a === '--api') opts.api = rest[++i] ?? usage('--api needs a URL');
    else if (a === '--token') opts.token = rest[++i] ?? usage('--token needs a value');
    else if (a === '--rerun') opts.rerun = true;
    else if (a === '--force') opts.force = true;
    else if (a === '--dry-run') opts.dryRun = true;
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else if (!opts.taskId) opts.taskId = a;
    else usage(`unexpected argument ${a}`);
  }
  if (!opts.taskId) usage('give the task to rewind');
  if (!opts.toStep) usage('give the step to go back to: --to STEP');
  opts.api = opts.api.replace(/\/$/, '');
  return opts;
}

function parseArgs(argv: string[]): Options {
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

/**
 * `klea rewind`: restores the files (or, with `--dry-run`, lists them), says what conflicts, and with `--rerun`
 * follows the task as it runs again. Exit code 0 when it rewound (or would rewind cleanly), 1 otherwise.
 */
export async function rewind(
  opts: RewindOptions,
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }
): Promise<number> {
  const say = (line: string) => io.output.write(`${visibleText(line)}\n`);
  const headers = {
    ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
    'content-type': 'application/json',
  };
  const task = encodeURIComponent(opts.taskId);
  try {
    const res = opts.dryRun
      ? await fetch(`${opts.api}/tasks/${task}/rewind?toStep=${encodeURIComponent(opts.toStep)}`, { headers })
      : await fetch(`${opts.api}/tasks/${task}/rewind`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ toStep: opts.toStep, rerun: opts.rerun, force: opts.force }),
        });
    type Outline = {
      steps: string[];
      files: Array<{ path: string; action: string; step: string }>;
      conflicts: Array<{ path: string; reason: string }>;
      sensitive: string[];
      tooLarge: string[];
      temporalUiUrl?: string;
      lastSeq?: number;
    };
    const data = (await res.json().catch(() => ({}))) as Partial<Outline> & {
      error?: { message: string; details?: Partial<Outline> };
    };
    if (!res.ok) {
      say(`klea: ${data.error?.message ?? `HTTP ${res.status}`}`);
      for (const c of data.error?.details?.conflicts ?? []) say(`  conflict: ${one(c.path)} (${one(c.reason)})`);
      return 1;
    }
    const verb = opts.dryRun ? 'would restore' : 'restored';
    say(
      `${opts.dryRun ? 'rewind' : 'rewound'} ${one(opts.taskId)} to before step ${one(opts.toStep)} (steps ${(data.steps ?? []).map(one).join(', ')})`
    );
    for (const f of data.files ?? []) say(`  ${verb} ${one(f.path)}: ${one(f.action)} (step ${one(f.step)})`);
    if (!data.files?.length) say('  no file to restore');
    for (const c of data.conflicts ?? []) say(`  conflict: ${one(c.path)} (${one(c.reason)})`);
    for (const p of data.sensitive ?? []) say(`  left as it is (sensitive, never kept): ${one(p)}`);
    for (const s of data.tooLarge ?? []) say(`  step ${one(s)} was too large to keep: its files are left as they are`);
    if (opts.dryRun) return data.conflicts?.length ? 1 : 0;
    if (!opts.rerun) {
      say(`task ${one(opts.taskId)} rewound`);
      return 0;
    }
    say(`running again from step ${one(opts.toStep)} · ${one(data.temporalUiUrl ?? '')}`);
    // The re-run's events come after the last one the reset run held: the `rewound` event first.
    return ask(
      {
        prompt: '',
        api: opts.api,
        token: opts.token,
        readOnly: false,
        follow: { taskId: opts.taskId, after: data.lastSeq ?? 0 },
      },
      io
    );
  } catch (err) {
    say(`klea: ${(err as Error).message}`);
    return 1;
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

/** What a configured MCP server runs, as the person approving it reads it. */
function describeLaunch(name: string, l: LaunchShown): string {
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);
  const lines = [
    `  ${one(name)} runs:`,
    `    command line: ${one([l.command, ...l.args].map(quote).join(' '))}`,
    `    working directory: ${one(l.cwd)}`,
    `    environment: ${Object.keys(l.env).length ? '' : '(nothing set)'}`,
    ...Object.entries(l.env).map(([k, v]) => `      ${one(k)}=${one(v)}`),
    `    files: ${l.files.length ? '' : '(none found)'}`,
    ...l.files.map((f) => `      ${one(f.path)} (sha256 ${f.sha256 ?? 'unreadable'})`),
  ];
  return lines.join('\n');
}

/**
 * `klea mcp list|approve|revoke`: the configured MCP servers that wait for the user's approval (a server that runs a
 * program starts only once what it runs was approved, and asks again when it changes), and the decision.
 */
export async function mcp(
  args: string[],
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream },
  env: NodeJS.ProcessEnv = process.env
): Promise<number> {
  const say = (s: string) => io.output.write(`${s}\n`);
  const [what, name, ...rest] = args;
  const doc = readApprovals(env);
  if (what === 'list' || what === undefined) {
    const pending = Object.entries(doc.pending);
    say(`${approvalsFile(env)}:`);
    if (!pending.length) say('no MCP server waits for approval');
    for (const [n, p] of pending) {
      say(`waiting${p.changed ? ' (what it runs changed since it was approved)' : ''}, since ${p.at}:`);
      say(describeLaunch(n, p.launch));
    }
    for (const [n, a] of Object.entries(doc.approved)) say(`approved: ${one(n)} (${a.at})`);
    return 0;
  }
  if (what === 'revoke' && name) {
    say(
      revoke(name, env) ? `revoked ${one(name)}: it asks again before it next starts` : `${one(name)} was not approved`
    );
    return 0;
  }
  if (what !== 'approve' || !name) usage('mcp takes list, approve <server> or revoke <server>');
  const pending = doc.pending[name];
  if (!pending) {
    say(
      doc.approved[name]
        ? `${one(name)} is approved as it runs now`
        : `no MCP server named ${one(name)} waits for approval (a server is listed once the worker has tried to start it)`
    );
    return doc.approved[name] ? 0 : 1;
  }
  say(describeLaunch(name, pending.launch));
  const yes =
    rest.includes('--yes') ||
    (await new Promise<boolean>((resolve) => {
      const rl = readline.createInterface({ input: io.input, output: io.output });
      rl.question(`start ${one(name)} as shown above, now and until it changes? [y/N] `, (a) => {
        rl.close();
        resolve(/^y(es)?$/i.test(a.trim()));
      });
    }));
  if (!yes) {
    say('not approved');
    return 1;
  }
  approve(name, pending.fingerprint, env);
  say(`approved ${one(name)}: the worker starts it at its next use`);
  return 0;
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  const io = { input: process.stdin, output: process.stdout };
  (argv[0] === 'rewind'
    ? rewind(parseRewindArgs(argv.slice(1)), io)
    : argv[0] === 'mcp'
      ? mcp(argv.slice(1), io)
      : ask(parseArgs(argv), io)
  ).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`klea: ${(err as Error).message}\n`);
      process.exit(1);
    }
  );
}
