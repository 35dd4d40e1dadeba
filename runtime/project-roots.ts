/**
 * The project-root rule, enforced by the API (400 for a client's projectDir) and again by the worker (for every
 * session and task, however it was started): a project directory must resolve, symlinks included, under one of
 * `project.allowed_roots` (empty: the configured project directory).
 */
import { realpathSync as realpathSyncJs, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../common/config';

// One realpath(3) call rather than an lstat per path component: the worker runs this before every activity.
const realpathSync = realpathSyncJs.native;

export type ProjectDirCheck =
  { ok: true; real: string } | { ok: false; problem: 'outside' | 'missing' | 'not_a_directory'; message: string };

export function allowedRoots(config: Pick<Config, 'project'>): string[] {
  return config.project.allowed_roots.length ? config.project.allowed_roots : [config.project.dir];
}

/** Where `dir` (relative to the project directory) really is, and whether it may be a project directory. */
export function checkProjectDir(config: Pick<Config, 'project'>, dir: string): ProjectDirCheck {
  const roots = allowedRoots(config);
  const realRoots = roots.flatMap((root) => {
    try {
      return [realpathSync(root)];
    } catch {
      return [];
    }
  });
  const under = (p: string, list: string[]) => list.some((r) => p === r || p.startsWith(r + path.sep));
  const outside = {
    ok: false as const,
    problem: 'outside' as const,
    message: `must lie under an allowed project root (${roots.join(', ')})`,
  };
  const resolved = path.resolve(config.project.dir, dir);
  let real: string;
  try {
    real = realpathSync(resolved);
  } catch {
    // Security: outside the roots, "missing" and "outside" read the same, so the check cannot probe the disk.
    // A missing path has no real path, so it is compared as written (with the roots as written, too).
    if (!under(resolved, [...realRoots, ...roots.map((r) => path.resolve(r))])) return outside;
    return { ok: false, problem: 'missing', message: `no such directory: ${dir}` };
  }
  if (!under(real, realRoots)) return outside;
  if (!statSync(real).isDirectory())
    return { ok: false, problem: 'not_a_directory', message: `not a directory: ${dir}` };
  return { ok: true, real };
}
