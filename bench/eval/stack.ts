/**
 * The whole service as `make start` runs it (`node dist/scripts/start.js`: Temporal dev server, worker, API), on
 * free ports of its own, with its data (Temporal's database included) in a directory of the eval's, and no
 * configuration but the model's endpoint. Its log goes to a file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreePort } from '../../runtime/ports';
import { REPO_ROOT } from '../../runtime/temporal';

const START_JS = path.join(REPO_ROOT, 'dist', 'scripts', 'start.js');

export interface KleaStack {
  apiUrl: string;
  /** The API's health answer once it was ready (the worker's command sandbox among it). */
  health: Record<string, unknown>;
  stop(): Promise<void>;
}

/** Three distinct free ports: Temporal's gRPC port, its Web UI and the API (start.js opens no others). */
async function freePorts(): Promise<{ temporal: number; ui: number; api: number }> {
  for (;;) {
    const [temporal, ui, api] = [await findFreePort(), await findFreePort(), await findFreePort()];
    if (new Set([temporal, ui, api]).size === 3) return { temporal, ui, api };
  }
}

export async function startKlea(opts: {
  /** The eval's own directory: Klea's data, its (empty) config file. */
  dir: string;
  /** Where the tasks' project directories are made (the allowed project root). */
  projectsDir: string;
  modelBaseUrl: string;
  modelName: string;
  /** KLEA_MODEL_PROFILE for the stack. */
  profile: 'standard' | 'small';
  logFile: string;
}): Promise<KleaStack> {
  if (!existsSync(START_JS)) throw new Error(`${START_JS} is missing: run "npm run build"`);
  const ports = await freePorts();
  const data = path.join(opts.dir, 'data');
  mkdirSync(data, { recursive: true });
  // An empty configuration file of its own, so a klea.yaml in the working directory changes nothing here.
  const config = path.join(opts.dir, 'klea.yaml');
  writeFileSync(config, '# make eval: the defaults, the model endpoint from the environment\n');
  // Settings from the caller's shell that would reach the stack are dropped; the eval sets its own.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(KLEA_|OPENAI_|TEMPORAL_(?!CLI_PATH))/.test(k))
  );
  const env = {
    ...inherited,
    KLEA_CONFIG: config,
    OPENAI_BASE_URL: opts.modelBaseUrl,
    KLEA_MODEL: opts.modelName,
    KLEA_MODEL_PROFILE: opts.profile,
    KLEA_PROJECT_DIR: opts.projectsDir,
    KLEA_DATA_DIR: data,
    KLEA_TEMPORAL_DB: path.join(data, 'temporal.db'),
    KLEA_RESULTS_DIR: path.join(data, 'results'),
    KLEA_WORKSPACE_STATE_DIR: path.join(data, 'workspace-state'),
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`,
    KLEA_TEMPORAL_UI_URL: `http://127.0.0.1:${ports.ui}`,
    KLEA_API_PORT: String(ports.api),
  };
  const log = createWriteStream(opts.logFile);
  const proc: ChildProcess = spawn(process.execPath, [START_JS], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.pipe(log, { end: false });
  proc.stderr!.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const running = () => proc.exitCode === null && proc.signalCode === null;

  const stop = async () => {
    if (running()) {
      proc.kill('SIGTERM');
      // The grace period's timer does not hold the process open once the service has stopped.
      const grace = sleep(60_000, true, { ref: false });
      const killed = await Promise.race([exited.then(() => false), grace]);
      if (killed) {
        proc.kill('SIGKILL');
        await exited;
      }
    }
    log.end();
  };

  const apiUrl = `http://127.0.0.1:${ports.api}`;
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (!running()) {
      await stop();
      throw new Error(`make start ended before the service was ready (see ${opts.logFile})`);
    }
    const health = await fetch(`${apiUrl}/healthz`, { signal: AbortSignal.timeout(10_000) })
      .then(async (r) => (r.ok ? ((await r.json()) as Record<string, unknown>) : undefined))
      .catch(() => undefined);
    if (health) return { apiUrl, health, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the service was not healthy within 5 minutes (see ${opts.logFile})`);
    }
    await sleep(1000);
  }
}
