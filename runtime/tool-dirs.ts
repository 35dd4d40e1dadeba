/**
 * Where the worker's toolchain directories (`tools.sandbox.tool_dirs`) are, for the workspace server that binds them
 * into the command sandbox (tools/workspace/tool-dirs.ts) and for the worker that starts it.
 */
import path from 'node:path';
import { isWithin } from '../common/posix-path';

/** `~` and `~/…` as the home directory; anything else as it is. */
export function expandHome(dir: string, home: string): string {
  return dir === '~' ? home : dir.startsWith('~/') ? path.join(home, dir.slice(2)) : dir;
}

/**
 * The worker's environment variables that point into a tool directory (`PYENV_ROOT=/home/ada/.pyenv`,
 * `NVM_DIR`, `CARGO_HOME`): a toolchain finds itself by them, and inside the sandbox, whose HOME is another, it would
 * look in the wrong place. `~` is `home`.
 */
export function toolDirEnv(env: NodeJS.ProcessEnv, toolDirs: readonly string[], home: string): Record<string, string> {
  // Asked for at every tool call (the server's spec is its pool key): nothing to look through without tool dirs.
  if (!toolDirs.length) return {};
  const dirs = toolDirs.map((d) => path.resolve(expandHome(d, home)));
  return Object.fromEntries(
    Object.entries(env).filter(
      (e): e is [string, string] =>
        e[0] !== 'PATH' &&
        typeof e[1] === 'string' &&
        path.isAbsolute(e[1]) &&
        dirs.some((d) => isWithin(d, path.resolve(e[1] as string)))
    )
  );
}
