/**
 * Where Klea keeps its own data: Temporal's database under `make start`, the tool results cut from prompts and the
 * workspace server's call state. It lives in a directory of its own, outside any project Klea works on, so a
 * project's checkout never fills with Klea's files and a command in the sandbox never sees them.
 *
 * `KLEA_DATA_DIR`, else `$XDG_DATA_HOME/klea`, else `~/.local/share/klea`. The data settings
 * (`tools.results_dir`, `mcp.workspace.state_dir`) and `KLEA_TEMPORAL_DB` may be absolute; a relative one is taken
 * under the data directory (or, for `KLEA_TEMPORAL_DB`, the directory it was set in, as a shell user expects).
 */
import os from 'node:os';
import path from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** The data directory, absolute. */
export function dataDir(env: Env = process.env, cwd = process.cwd()): string {
  if (env.KLEA_DATA_DIR) return path.resolve(cwd, expandHome(env.KLEA_DATA_DIR, env));
  // The XDG spec: a relative XDG_DATA_HOME is invalid and is ignored.
  const xdg = env.XDG_DATA_HOME && path.isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : undefined;
  return path.join(xdg ?? path.join(homeDir(env), '.local', 'share'), 'klea');
}

/** A data setting's path, absolute: a relative one is under the data directory. */
export function dataPath(setting: string, env: Env = process.env, cwd = process.cwd()): string {
  const p = expandHome(setting, env);
  return path.isAbsolute(p) ? path.normalize(p) : path.join(dataDir(env, cwd), p);
}

/** Temporal's SQLite database under `make start`: `KLEA_TEMPORAL_DB` (relative to `cwd`), else in the data dir. */
export function temporalDbFile(env: Env = process.env, cwd = process.cwd()): string {
  return env.KLEA_TEMPORAL_DB
    ? path.resolve(cwd, expandHome(env.KLEA_TEMPORAL_DB, env))
    : path.join(dataDir(env, cwd), 'temporal.db');
}

/** `~` and `~/…` as the shell expands them (a value quoted in the shell, or written in a file, arrives unexpanded). */
export function expandHome(p: string, env: Env = process.env): string {
  if (p === '~') return homeDir(env);
  if (p.startsWith('~/')) return path.join(homeDir(env), p.slice(2));
  return p;
}

function homeDir(env: Env): string {
  return env.HOME || os.homedir();
}
