/**
 * Toolchains outside the system's directories (`tools.sandbox.tool_dirs`): a `pytest` from pyenv, a `node` from nvm,
 * a `cargo` in ~/.cargo. The sandbox hides the worker's home, so a command finds none of them ("pytest: not found",
 * exit 127) unless the user names their directories: each is bound read-only at its own path, and the worker's PATH
 * entries inside them come before the system's.
 */
import path from 'node:path';
import { isWithin } from '../../common/posix-path';
import { SANDBOX_PATH } from './bubblewrap-policy';

/** Where credentials live in a home directory: no tool directory may be one of them, or inside one. */
const CREDENTIAL_DIRS = ['.ssh', '.gnupg', '.aws', '.azure', '.config', '.kube', '.docker', '.password-store'];

/**
 * Why `dir` cannot be a tool directory, or null: it must be absolute, not the root, the home directory or a folder
 * above it (which would show every file of the home: keys, tokens, other projects), not a credential folder of the
 * home, and not the project or a folder above or inside it (the project has its own, writable, binding).
 */
export function toolDirProblem(dir: string, home: string, projectDir: string): string | null {
  if (!path.isAbsolute(dir)) return `${dir} is not an absolute path`;
  const d = path.resolve(dir);
  if (d === '/' || isWithin(d, home)) return `${d} holds the home directory ${home}: name the toolchain's own folder`;
  const credentials = CREDENTIAL_DIRS.map((c) => path.join(home, c));
  if (credentials.some((c) => isWithin(c, d))) return `${d} is where credentials live`;
  if (isWithin(d, projectDir) || isWithin(projectDir, d)) return `${d} overlaps the project ${projectDir}`;
  return null;
}

/**
 * The PATH a sandboxed command gets: the entries of the worker's PATH that lie in a tool directory, in the worker's
 * order, then the system's (`SANDBOX_PATH`).
 */
export function sandboxPath(workerPath: string | undefined, toolDirs: readonly string[]): string {
  const own = (workerPath ?? '')
    .split(':')
    .filter((p) => path.isAbsolute(p) && toolDirs.some((d) => isWithin(d, path.resolve(p))));
  return [...new Set([...own, ...SANDBOX_PATH.split(':')])].join(':');
}
