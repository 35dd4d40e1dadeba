/**
 * Paths inside the project as checkpoints see them: which ones they cover, how a journal's path is checked before it
 * is used (a journal is untrusted input), what a path holds now (a file's bytes are read without following a
 * symlink), and the changes a rewind makes, each through a descriptor of the very directory that was checked (never
 * through a symlink put in the way).
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  promises as fs,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { inCheckedDir } from '../workspace/fs-ops';
import { sha256, type State } from './store';

/**
 * Directories checkpoints do not cover, at any depth: git's own (a rewind never rewrites history, refs or the
 * index) and installed dependencies (rebuilt from the manifest a rewind restores).
 */
export const UNTRACKED_NAMES: ReadonlySet<string> = new Set(['.git', 'node_modules']);

/** Temporary files of atomic writes (the workspace server's and a rewind's): never part of the project's state. */
export const TEMP_NAME = /^\..+\.klea-[0-9a-f]{12}\.tmp$/;

/** Files larger than this are not hashed (their content can be neither kept nor compared). */
export const HASH_LIMIT = 256 * 1024 * 1024;

export const fileMode = (st: Stats) => st.mode & 0o7777;

/** Why a journal's path may not be used, or null: it must be relative, plain, and in what checkpoints cover. */
export function relProblem(rel: unknown): string | null {
  if (typeof rel !== 'string' || !rel) return 'an empty path';
  if (rel.includes('\0')) return 'a path with a NUL byte';
  if (path.isAbsolute(rel)) return 'an absolute path';
  const segs = rel.split('/');
  if (segs.some((s) => s === '' || s === '.' || s === '..')) return 'a path that is not plain (.., . or //)';
  const untracked = segs.find((s) => UNTRACKED_NAMES.has(s));
  if (untracked) return `a path in ${untracked}/, which checkpoints do not cover`;
  return null;
}

/**
 * Why `rel`'s directories cannot be walked down without following a symlink, or null. Missing directories are no
 * problem (a rewind creates them).
 */
export function parentProblem(root: string, rel: string): string | null {
  let cur = root;
  const segs = rel.split('/');
  for (let i = 0; i < segs.length - 1; i++) {
    cur = path.join(cur, segs[i]);
    const st = lstatSync(cur, { throwIfNoEntry: false });
    if (!st) return null;
    const shown = segs.slice(0, i + 1).join('/');
    if (st.isSymbolicLink()) return `${shown} is a symlink (a rewind never writes through one)`;
    if (!st.isDirectory()) return `${shown} is not a directory`;
  }
  return null;
}

/** What a path holds now; `other` for a device, FIFO or socket. Never follows a symlink. */
export async function currentState(root: string, rel: string): Promise<State | { t: 'other' }> {
  const abs = path.join(root, rel);
  const st = await fs.lstat(abs).catch(() => null);
  if (!st) return { t: 'absent' };
  if (st.isSymbolicLink()) return { t: 'link', target: await fs.readlink(abs) };
  if (st.isDirectory()) return { t: 'dir', mode: fileMode(st) };
  if (!st.isFile()) return { t: 'other' };
  if (st.size > HASH_LIMIT) return { t: 'file', hash: null, mode: fileMode(st) };
  const data = await inCheckedDir(path.dirname(abs), (dir) =>
    fs.open(path.join(dir, path.basename(abs)), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  ).then(async (h) => {
    try {
      return await h.readFile();
    } finally {
      await h.close();
    }
  });
  return { t: 'file', hash: sha256(data), mode: fileMode(st) };
}

/** Whether two states hold the same thing (for files: content and mode). */
export function sameState(x: State | { t: 'other' }, y: State): boolean {
  if (x.t !== y.t) return false;
  if (x.t === 'file' && y.t === 'file') return x.hash !== null && x.hash === y.hash && x.mode === y.mode;
  if (x.t === 'link' && y.t === 'link') return x.target === y.target;
  return true;
}

/** Whether two states hold the same content (files: by hash; modes aside). */
export function sameContent(x: State | { t: 'other' }, y: State): boolean {
  if (x.t === 'file' && y.t === 'file') return x.hash !== null && x.hash === y.hash;
  if (x.t === 'dir' && y.t === 'dir') return true;
  return sameState(x, y);
}

const tempName = (name: string) => `.${name}.klea-${randomBytes(6).toString('hex')}.tmp`;

/** Creates the directories above `rel` that are missing (never through a symlink), with `modes` where given. */
export async function makeParents(root: string, rel: string, modes: ReadonlyMap<string, number>): Promise<void> {
  const segs = rel.split('/');
  let cur = root;
  for (let i = 0; i < segs.length - 1; i++) {
    const name = segs[i];
    const sub = segs.slice(0, i + 1).join('/');
    await inCheckedDir(cur, async (dir) => {
      const at = path.join(dir, name);
      const st = await fs.lstat(at).catch(() => null);
      if (!st) {
        const mode = modes.get(sub) ?? 0o755;
        await fs.mkdir(at, { mode }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
        await fs.chmod(at, mode);
      } else if (!st.isDirectory()) throw new Error(`${sub} is not a directory`);
    });
    cur = path.join(cur, name);
  }
}

/** Puts `target` at `rel` in one step (a temporary sibling, then rename): a file's content and mode, or a symlink. */
export async function placeAt(
  root: string,
  rel: string,
  target: { t: 'file'; data: Buffer; mode: number } | { t: 'link'; target: string }
): Promise<void> {
  const abs = path.join(root, rel);
  const name = path.basename(abs);
  await inCheckedDir(path.dirname(abs), async (dir) => {
    const at = path.join(dir, name);
    const st = await fs.lstat(at).catch(() => null);
    // A directory in the way goes only if it is empty (its contents, if the task made them, went before it).
    if (st?.isDirectory()) await fs.rmdir(at);
    const tmp = path.join(dir, tempName(name));
    try {
      if (target.t === 'file') {
        await fs.writeFile(tmp, target.data, { mode: target.mode, flag: 'wx' });
        // The process's umask may have narrowed the mode.
        await fs.chmod(tmp, target.mode);
      } else await fs.symlink(target.target, tmp);
      await fs.rename(tmp, at);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  });
}

/** Sets a file's mode (its content is already right). */
export async function chmodAt(root: string, rel: string, mode: number): Promise<void> {
  const abs = path.join(root, rel);
  await inCheckedDir(path.dirname(abs), async (dir) => {
    const at = path.join(dir, path.basename(abs));
    const st = await fs.lstat(at);
    if (!st.isFile()) throw new Error(`${rel} is not a file`);
    await fs.chmod(at, mode);
  });
}

/** Removes a file or symlink at `rel` (a directory: only when empty); nothing there is fine. */
export async function removeAt(root: string, rel: string): Promise<void> {
  const abs = path.join(root, rel);
  await inCheckedDir(path.dirname(abs), async (dir) => {
    const at = path.join(dir, path.basename(abs));
    const st = await fs.lstat(at).catch(() => null);
    if (!st) return;
    if (st.isDirectory()) await fs.rmdir(at);
    else await fs.unlink(at);
  });
}

/** Removes the directory at `rel` if it is empty; true when it is gone. */
export async function removeDirIfEmpty(root: string, rel: string): Promise<boolean> {
  const abs = path.join(root, rel);
  return inCheckedDir(path.dirname(abs), async (dir) => {
    const at = path.join(dir, path.basename(abs));
    const st = await fs.lstat(at).catch(() => null);
    if (!st) return true;
    if (!st.isDirectory()) return false;
    return fs.rmdir(at).then(
      () => true,
      () => false
    );
  });
}

/** Linux names an open descriptor's file at /proc/self/fd/N. */
const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');

/**
 * A file's bytes, opened without following a symlink, at any component: a directory above it swapped for a symlink
 * meanwhile (a command can do that) makes what was opened another file than `abs`, and nothing is read (null, as
 * for a file that cannot be read or is no longer a file).
 */
export function readNoFollow(abs: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (PROC_FD && readlinkSync(`/proc/self/fd/${fd}`) !== abs) return null;
    if (!fstatSync(fd).isFile()) return null;
    return readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
