/**
 * The project-root check: a project directory a client asks for must resolve under an allowed root
 * (`api.allowed_project_roots`, else the configured project directory).
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../common/config';
import { badRequest } from './errors';

export type ProjectDirResolver = (requested: string | undefined) => string;

/** Returns the real path of the requested directory (the configured one when none is asked for), or throws a 400. */
export function projectDirResolver(config: Config): ProjectDirResolver {
  const allowedRoots = () =>
    config.api.allowed_project_roots.length ? config.api.allowed_project_roots : [config.project.dir];
  const realRoots = () =>
    allowedRoots().flatMap((root) => {
      try {
        return [realpathSync(root)];
      } catch {
        return [];
      }
    });
  const under = (p: string, roots: string[]) => roots.some((r) => p === r || p.startsWith(r + path.sep));
  const projectDirError = (message: string, detail: string) =>
    badRequest(`body.projectDir: ${message}`, [{ path: 'body.projectDir', message: detail }]);
  const outsideRoots = () =>
    projectDirError(
      `must lie under an allowed project root (${allowedRoots().join(', ')})`,
      'outside the allowed project roots'
    );

  /** Security: a client-chosen project directory must resolve (symlinks included) under an allowed root. */
  return function resolveProjectDir(requested) {
    const dir = requested ?? config.project.dir;
    const resolved = path.resolve(config.project.dir, dir);
    let real: string;
    try {
      real = realpathSync(resolved);
    } catch {
      // Security: outside the roots, "missing" and "outside" read the same, so the API cannot probe the disk.
      // A missing path has no real path, so it is compared as written (with the roots as written, too).
      if (!under(resolved, [...realRoots(), ...allowedRoots().map((r) => path.resolve(r))])) throw outsideRoots();
      throw projectDirError(`no such directory: ${dir}`, 'no such directory');
    }
    if (!under(real, realRoots())) throw outsideRoots();
    if (!statSync(real).isDirectory()) throw projectDirError(`not a directory: ${dir}`, 'not a directory');
    return real;
  };
}
