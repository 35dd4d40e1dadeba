/** A task's project directory on disk: written from fixtures, read back as a snapshot, and its code run. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Snapshot } from './checks';

/** Written by Python and other tools as they run; never part of what a task changed. */
const IGNORED = new Set(['__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache']);

export function writeProject(dir: string, files: Readonly<Record<string, string>>): void {
  mkdirSync(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

export function snapshot(dir: string): Snapshot {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      if (IGNORED.has(entry.name) || entry.name.endsWith('.pyc')) continue;
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) out.set(child, readFileSync(path.join(dir, child), 'latin1'));
    }
  };
  walk('');
  return out;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command in the project as the checker: under bubblewrap when it is installed (the project writable, the
 * rest of the system read-only, no network), since the code it runs was written by the model.
 */
export function runInProject(dir: string, argv: readonly string[], timeoutMs = 30_000): Promise<RunResult> {
  const bwrap = process.env.KLEA_BWRAP || '/usr/bin/bwrap';
  const [command, args] = existsSync(bwrap)
    ? [
        bwrap,
        [
          '--ro-bind',
          '/',
          '/',
          '--dev',
          '/dev',
          '--proc',
          '/proc',
          '--tmpfs',
          '/tmp',
          '--bind',
          dir,
          dir,
          '--chdir',
          dir,
          '--unshare-net',
          '--die-with-parent',
          '--setenv',
          'PYTHONDONTWRITEBYTECODE',
          '1',
          '--',
          ...argv,
        ],
      ]
    : [argv[0], argv.slice(1)];
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: dir, timeout: timeoutMs, maxBuffer: 1 << 20, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, stdout, stderr: err && code === null ? `${stderr}${err.message}` : stderr });
      }
    );
  });
}
