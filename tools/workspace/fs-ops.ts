/**
 * File-system operations the tools share: hashing, reads and atomic writes through descriptors pinned to the checked
 * path, the directory walk, and errno texts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, existsSync, promises as fs, type Dirent, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { PathClass } from '../../common/path-guard';
import { ToolError } from './tool-result';

const SKIP_DIRS = new Set(['.git', 'node_modules']);

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'already exists',
  ENOTEMPTY: 'directory not empty',
};

export const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** A file-system error as a model reads it: plain words for the common codes, Node's message otherwise. */
export function errnoText(e: NodeJS.ErrnoException): string {
  return (e.code && ERRNO_TEXT[e.code]) ?? e.message;
}

/** Linux names an open descriptor's file at /proc/self/fd/N: a path through it reaches what the descriptor holds. */
const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');

const changedMeanwhile = (p: string) =>
  new ToolError(`${p} changed while it was being checked (something was put in its way); nothing was done`);

/**
 * Runs `fn` on a directory held open. `fn` gets a path that reaches the directory through its descriptor, so what it
 * opens or renames there is in the very directory that was checked, even if a component of the checked path is
 * swapped for a symlink meanwhile (a command running in the project can do that). The directory is opened without
 * following a last-component symlink, and what was opened must be the checked real path.
 */
export async function inCheckedDir<T>(dirReal: string, fn: (dir: string) => Promise<T>): Promise<T> {
  if (!PROC_FD) return fn(dirReal);
  let handle: FileHandle;
  try {
    handle = await fs.open(dirReal, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw changedMeanwhile(dirReal);
    throw err;
  }
  try {
    const held = `/proc/self/fd/${handle.fd}`;
    if ((await fs.readlink(held)) !== dirReal) throw changedMeanwhile(dirReal);
    return await fn(held).catch((err: unknown) => {
      // An error names the path as the caller knows it, not the descriptor's.
      const e = err as NodeJS.ErrnoException;
      if (typeof e?.path === 'string' && e.path.startsWith(held)) e.path = dirReal + e.path.slice(held.length);
      throw err;
    });
  } finally {
    await handle.close();
  }
}

/**
 * Makes the missing directories above a file, each one in its checked parent (never through a symlink a command
 * put in the way: a swapped component fails the call, and nothing is made outside).
 */
export async function mkdirsChecked(dirReal: string): Promise<void> {
  const missing: string[] = [];
  let at = dirReal;
  while ((await fs.lstat(at).catch(() => null)) === null) {
    const up = path.dirname(at);
    if (up === at) break;
    missing.unshift(path.basename(at));
    at = up;
  }
  for (const name of missing) {
    await inCheckedDir(at, (dir) =>
      fs.mkdir(path.join(dir, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      })
    );
    at = path.join(at, name);
  }
}

/** Replaces a file in one step (a temporary sibling, then rename), so no reader ever sees half of it. */
export async function atomicWrite(real: string, content: string, mode?: number): Promise<void> {
  const name = path.basename(real);
  await inCheckedDir(path.dirname(real), async (dir) => {
    const tmp = path.join(dir, `.${name}.klea-${randomBytes(6).toString('hex')}.tmp`);
    try {
      await fs.writeFile(tmp, content, { mode: mode ?? 0o644, flag: 'wx' });
      await fs.rename(tmp, path.join(dir, name));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  });
}

/** A checked path: its real path, and whether the gate let it through as inside the project (no grant needed). */
export interface CheckedPath {
  real: string;
  class: PathClass;
}

/**
 * A file's bytes and stat, read through a descriptor: opened in its checked directory, never through a symlink,
 * never waiting on a FIFO. A directory is refused with a pointer to list_dir, anything but a regular file is
 * refused, and so is a file that gained a second name (hard link) after the gate passed it as inside the project.
 * `rel` names the file for the model.
 */
export async function readText(
  checked: CheckedPath,
  rel: (real: string) => Promise<string>
): Promise<{ buf: Buffer; stat: Stats }> {
  const { real } = checked;
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  return inCheckedDir(path.dirname(real), async (dir) => {
    let handle: FileHandle;
    try {
      handle = await fs.open(path.join(dir, path.basename(real)), flags);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw changedMeanwhile(await rel(real));
      throw err;
    }
    try {
      const stat = await handle.stat();
      if (stat.isDirectory()) throw new ToolError(`${await rel(real)} is a directory: use list_dir`);
      if (!stat.isFile()) throw new ToolError(`${await rel(real)} is not a regular file (a device, FIFO or socket)`);
      // Security: another name of this file may be outside the project; the gate asks for a grant for such files.
      if (stat.nlink > 1 && checked.class === 'inside')
        throw new ToolError(
          `refused: ${await rel(real)} is a file with ${stat.nlink} hard links (another of its names may be outside the project); not allowed without the user's grant`
        );
      return { buf: await handle.readFile(), stat };
    } finally {
      await handle.close();
    }
  });
}

/** Like readText, but null for a file that does not exist. */
export async function readTextIfExists(
  checked: CheckedPath,
  rel: (real: string) => Promise<string>
): Promise<{ buf: Buffer; stat: Stats } | null> {
  try {
    return await readText(checked, rel);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export const readJson = <T>(file: string): Promise<T | null> =>
  fs.readFile(file, 'utf8').then(
    (t) => JSON.parse(t) as T,
    () => null
  );

/**
 * Entries under `dir` (a real path), sorted by name, `depth` levels below it; .git and node_modules are not entered,
 * and what `hidden` names (Klea's own state) is neither shown nor entered. Each directory is read through a
 * descriptor of the very directory reached, so a directory swapped for a symlink while the walk goes (a command can
 * do that) fails the walk instead of leading it outside.
 */
export async function* walk(
  dir: string,
  depth: number,
  hidden: (real: string) => boolean = () => false
): AsyncGenerator<{ real: string; dirent: Dirent }> {
  let entries;
  try {
    entries = await inCheckedDir(dir, (held) => fs.readdir(held, { withFileTypes: true }));
  } catch (err) {
    if (err instanceof ToolError) throw err;
    return;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const d of entries) {
    const real = path.join(dir, d.name);
    // Security: Klea's own state (another task's results, say) lies outside every walk, even under the project.
    if (hidden(real)) continue;
    yield { real, dirent: d };
    // Symlinked directories are not followed: a link must not carry a walk outside the root.
    if (d.isDirectory() && !SKIP_DIRS.has(d.name) && depth > 0) yield* walk(real, depth - 1, hidden);
  }
}
