/**
 * Runs grep's matching (grep-worker.ts) in a worker thread with a time limit, so no pattern can hang the server:
 * at the limit (counted from when the thread starts matching), or when the call is cancelled, the thread is
 * terminated and the call ends with a clear error.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { GrepJob, GrepOutcome } from './grep-worker';
import { ToolError } from './tool-result';

/** The compiled worker next to this module, or (when this module runs from source, in tests) the built one. */
function workerScript(): string {
  const candidates = [
    path.join(__dirname, 'grep-worker.js'),
    path.resolve(__dirname, '../../dist/tools/workspace/grep-worker.js'),
  ];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`the grep worker is not built (${candidates[0]}): run "npm run build"`);
  return found;
}

/** How long a grep thread may take to start before the call fails (a loaded machine, never a pattern). */
const START_MS = 30_000;

type WorkerMessage = { started: true } | { ok: true; outcome: GrepOutcome } | { ok: false; message: string };

export function grepWithTimeLimit(job: GrepJob, timeMs: number, signal?: AbortSignal): Promise<GrepOutcome> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerScript(), { workerData: job, resourceLimits: { maxOldGenerationSizeMb: 512 } });
    const end = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      settle();
    };
    const stop = (message: string, ms: number) => setTimeout(() => end(() => reject(new ToolError(message))), ms);
    let timer = stop(`grep could not start within ${START_MS / 1000} s; try again`, START_MS);
    const onAbort = () => end(() => reject(new ToolError('grep was cancelled')));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: WorkerMessage) => {
      if ('started' in m) {
        clearTimeout(timer);
        timer = stop(
          `grep stopped after ${timeMs / 1000} s: the pattern /${job.pattern}/ took too long (nested quantifiers ` +
            'such as (a+)+ can take for ever on some lines); simplify the pattern or search fewer files',
          timeMs
        );
        return;
      }
      end(() => (m.ok ? resolve(m.outcome) : reject(new ToolError(`grep failed: ${m.message}`))));
    });
    worker.once('error', (err) => end(() => reject(err)));
  });
}
