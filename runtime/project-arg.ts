/**
 * `make start PROJECT=<dir>`: the project Klea works on, given as the user typed it. Resolved once, before anything
 * starts, to the absolute real path that every process then gets as KLEA_PROJECT_DIR.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { expandHome } from './data-dir';

export class ProjectArgError extends Error {
  override readonly name = 'ProjectArgError';
}

/** The directory's absolute real path, or a ProjectArgError that says what is wrong with it. */
export function resolveProjectArg(
  arg: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  cwd = process.cwd()
): string {
  if (!arg.trim())
    throw new ProjectArgError('PROJECT is empty: give the directory of the project, e.g. PROJECT=~/code/app');
  const dir = path.resolve(cwd, expandHome(arg, env));
  let stat;
  try {
    stat = statSync(dir);
  } catch {
    throw new ProjectArgError(`PROJECT=${arg}: no such directory (${dir})`);
  }
  if (!stat.isDirectory()) throw new ProjectArgError(`PROJECT=${arg}: not a directory (${dir})`);
  return realpathSync(dir);
}

/** `--project <dir>` (or `--project=<dir>`) from a command line; undefined when it is not there. */
export function projectFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--project') return argv[i + 1] ?? '';
    if (argv[i].startsWith('--project=')) return argv[i].slice('--project='.length);
  }
  return undefined;
}
