/**
 * grep's matching, in a worker thread: a pattern that backtracks catastrophically (`(a+)+$` on a long line) blocks
 * the thread it runs on, and only a thread can be stopped from outside (`terminate()`), so the server stays
 * responsive and the call ends with a clear error at its time limit. Files are read as every tool reads them
 * (through a descriptor pinned to the checked path); unreadable, binary and hard-linked files are skipped.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PathClass } from '../../common/path-guard';
import { readText } from './fs-ops';

export interface GrepJob {
  pattern: string;
  flags: string;
  /** Files to search: real path and the name shown for it. */
  files: Array<{ real: string; shown: string; class: PathClass }>;
  maxResults: number;
  maxLineChars: number;
}

export interface GrepOutcome {
  hits: string[];
  more: boolean;
}

export async function grepFiles(job: GrepJob): Promise<GrepOutcome> {
  const re = new RegExp(job.pattern, job.flags);
  const hits: string[] = [];
  const shownAs = async () => '';
  for (const file of job.files) {
    const read = await readText(file, shownAs).catch(() => null);
    if (!read || read.buf.subarray(0, 8192).includes(0)) continue;
    const lines = read.buf.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!re.test(lines[i])) continue;
      if (hits.length >= job.maxResults) return { hits, more: true };
      const line = lines[i].length > job.maxLineChars ? `${lines[i].slice(0, job.maxLineChars)}…` : lines[i];
      hits.push(`${file.shown}:${i + 1}: ${line}`);
    }
  }
  return { hits, more: false };
}

if (parentPort && workerData) {
  const port = parentPort;
  // The time limit counts from here: starting a thread on a loaded machine is not the pattern's time.
  port.postMessage({ started: true });
  grepFiles(workerData as GrepJob).then(
    (outcome) => port.postMessage({ ok: true, outcome }),
    (err: unknown) => port.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) })
  );
}
