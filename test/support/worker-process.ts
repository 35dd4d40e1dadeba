/**
 * A Klea worker in a process of its own (dist/worker/index.js, the test run's workflow bundle), for tests that must
 * kill a worker the way a machine loses one: SIGKILL, with no word to Temporal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';

const ROOT = path.join(__dirname, '..', '..');

export interface WorkerProcess {
  child: ChildProcess;
  /** SIGKILL to the worker and everything it started; resolves once it is gone. */
  kill(): Promise<void>;
}

/** Writes `config` as the worker's klea.yaml in `dir`, and returns its path. */
export function workerConfigFile(dir: string, name: string, config: Record<string, unknown>): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(config));
  return file;
}

/** Starts a worker with the configuration file and waits until it polls. */
export async function startWorkerProcess(configFile: string, timeoutMs = 60_000): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'worker', 'index.js')], {
    env: {
      ...process.env,
      KLEA_CONFIG: configFile,
      KLEA_WORKFLOW_BUNDLE: process.env.KLEA_TEST_WORKFLOW_BUNDLE,
      KLEA_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + timeoutMs;
  while (!/worker polling/.test(out)) {
    if (child.exitCode !== null) throw new Error(`the worker exited: ${out}`);
    if (Date.now() > deadline) throw new Error(`the worker did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      await exited;
    },
  };
}
