/**
 * `klea rewind <task> --to STEP`: restores the project to what it was before the step (listing each file), then ends
 * the task `rewound` or, with `--rerun`, follows it as it runs again from there; `--dry-run` only lists what it
 * would restore and what conflicts.
 */
import { ask } from './ask';
import { one, visibleText } from './page-modules';
import { usage } from './usage';

export interface RewindOptions {
  taskId: string;
  toStep: string;
  rerun: boolean;
  force: boolean;
  dryRun: boolean;
  api: string;
  token?: string;
}

export function parseRewindArgs(rest: string[]): RewindOptions {
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
