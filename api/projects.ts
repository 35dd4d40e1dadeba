/**
 * The project-root check for clients: a project directory a client asks for must resolve under an allowed root
 * (`project.allowed_roots`, else the configured project directory); the worker checks the same rule again.
 */
import type { Config } from '../common/config';
import { checkProjectDir } from '../runtime/project-roots';
import { badRequest } from './errors';

export type ProjectDirResolver = (requested: string | undefined) => string;

/** Returns the real path of the requested directory (the configured one when none is asked for), or throws a 400. */
export function projectDirResolver(config: Config): ProjectDirResolver {
  /** Security: a client-chosen project directory must resolve (symlinks included) under an allowed root. */
  return function resolveProjectDir(requested) {
    const check = checkProjectDir(config, requested ?? config.project.dir);
    if (check.ok) return check.real;
    const detail = {
      outside: 'outside the allowed project roots',
      missing: 'no such directory',
      not_a_directory: 'not a directory',
    }[check.problem];
    throw badRequest(`body.projectDir: ${check.message}`, [{ path: 'body.projectDir', message: detail }]);
  };
}
