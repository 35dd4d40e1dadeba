/**
 * The peer `make eval PEER=1` runs beside Klea: mini-swe-agent (installed by scripts/install-mini-swe-agent.sh into
 * .tools/mini-swe-agent/), with its own text-based config (mini_textbased.yaml) and ./mini-swe-agent.yaml over it
 * (temperature 0, no confirmations, 5 minutes per task, cost tracking off), against the same server and model
 * (through the same recording proxy), on a fresh copy of each task's fixtures. It runs every command it wants:
 * the whole process runs under bubblewrap, the rest of the system read-only, only the project (and its own output
 * folder) writable. It cannot ask the user anything nor be granted a path; it is judged by the same checkers.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../runtime/temporal';

export const PEER_NAME = 'mini-swe-agent';
export const PEER_DIR = path.join(REPO_ROOT, '.tools', 'mini-swe-agent');
export const PEER_CONFIG = path.join(REPO_ROOT, 'bench', 'eval', 'mini-swe-agent.yaml');

export interface PeerResult {
  status: string;
  error: string | null;
  answer: string | null;
  timedOut: boolean;
  seconds: number;
  /** mini-swe-agent's own account: why it stopped (`Submitted`, `TimeExceeded`, `RepeatedFormatError`, …). */
  exitStatus: string;
  steps: number;
}

/** The installed versions, `mini-swe-agent 2.4.6 (litellm 1.110.2)`, or an error naming the installer. */
export function peerVersion(): string {
  const python = path.join(PEER_DIR, 'bin', 'python');
  if (!existsSync(path.join(PEER_DIR, 'bin', 'mini')))
    throw new Error(`${PEER_DIR} has no mini-swe-agent: run scripts/install-mini-swe-agent.sh`);
  const out = execFileSync(
    python,
    ['-c', 'import importlib.metadata as m; print(m.version("mini-swe-agent"), m.version("litellm"))'],
    { encoding: 'utf8' }
  );
  const [mini, litellm] = out.trim().split(/\s+/);
  return `${PEER_NAME} ${mini} (litellm ${litellm})`;
}

/** What mini-swe-agent told the user: its submission, then what it said last. */
export function peerAnswer(trajectory: {
  info?: { submission?: string };
  messages?: Array<{ role?: string; content?: unknown }>;
}): string {
  const submission = (trajectory.info?.submission ?? '').trim();
  const said = [...(trajectory.messages ?? [])].reverse().find((m) => m.role === 'assistant')?.content;
  const last = typeof said === 'string' ? said.trim() : '';
  return [submission, last].filter(Boolean).join('\n\n');
}

export async function runPeer(opts: {
  projectDir: string;
  prompt: string;
  /** The OpenAI-compatible base URL (`…/v1`) and the model's id there. */
  baseUrl: string;
  modelId: string;
  /** Where its trajectory and log go. */
  outDir: string;
  timeoutMs: number;
}): Promise<PeerResult> {
  mkdirSync(opts.outDir, { recursive: true });
  const trajectory = path.join(opts.outDir, 'trajectory.json');
  const bwrap = process.env.KLEA_BWRAP || '/usr/bin/bwrap';
  if (!existsSync(bwrap)) throw new Error(`${bwrap} is missing: the peer runs only under bubblewrap (make bubblewrap)`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: '/tmp/home',
    LANG: process.env.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    PYTHONDONTWRITEBYTECODE: '1',
    MSWEA_CONFIGURED: 'true',
    MSWEA_SILENT_STARTUP: '1',
    MSWEA_GLOBAL_CONFIG_DIR: path.join(opts.outDir, 'config'),
    MSWEA_COST_TRACKING: 'ignore_errors',
    // litellm would fetch its model price list from the network at start; the copy it ships is enough.
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
  };
  // /tmp is empty inside: a clone under /tmp would hide the peer and its config, so both are bound back, read-only.
  const peerDir = realpathSync(PEER_DIR);
  const config = realpathSync(PEER_CONFIG);
  const args = [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    '--dir', '/tmp/home',
    '--ro-bind', peerDir, peerDir,
    '--ro-bind', config, config,
    '--bind', opts.projectDir, opts.projectDir,
    '--bind', opts.outDir, opts.outDir,
    '--chdir', opts.projectDir,
    '--unshare-pid',
    '--die-with-parent',
    '--clearenv',
    ...Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]),
    '--',
    path.join(peerDir, 'bin', 'mini'),
    '-c', 'mini_textbased.yaml',
    '-c', config,
    '-c', `model.model_kwargs.api_base=${opts.baseUrl}`,
    '-m', `openai/${opts.modelId}`,
    '-t', opts.prompt,
    '-y',
    '--exit-immediately',
    '-o', trajectory,
  ]; // prettier-ignore
  const started = Date.now();
  const log: Buffer[] = [];
  const child = spawn(bwrap, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.on('data', (c: Buffer) => log.push(c));
  child.stderr.on('data', (c: Buffer) => log.push(c));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, opts.timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  const seconds = (Date.now() - started) / 1000;
  const output = Buffer.concat(log).toString('utf8');
  writeFileSync(path.join(opts.outDir, 'output.log'), output);

  let traj: { info?: { exit_status?: string; submission?: string; model_stats?: { api_calls?: number } } } = {};
  try {
    traj = JSON.parse(readFileSync(trajectory, 'utf8')) as typeof traj;
  } catch {
    // Killed before it wrote one: a result. Exited without one: it never got going (mini-swe-agent writes its
    // trajectory on every exit of its own), and scoring that against the peer would count the harness's fault.
    if (!timedOut) throw new Error(`${PEER_NAME} did not start (exit ${code}): ${output.trim().slice(-500)}`);
  }
  const exitStatus = traj.info?.exit_status || (timedOut ? 'killed at the time limit' : `exited ${code}`);
  const over = timedOut || exitStatus === 'TimeExceeded';
  const status = over ? 'timeout' : exitStatus === 'Submitted' ? 'done' : 'failed';
  const tail = output.trim().split('\n').slice(-3).join(' ').slice(-300);
  return {
    status,
    error: status === 'done' ? null : `${exitStatus}${status === 'failed' && tail ? `: ${tail}` : ''}`,
    answer: peerAnswer(traj as Parameters<typeof peerAnswer>[0]) || null,
    timedOut: over,
    seconds,
    exitStatus,
    steps: traj.info?.model_stats?.api_calls ?? 0,
  };
}
