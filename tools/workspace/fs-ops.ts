/** File-system operations the tools share: hashing, atomic writes, the directory walk, and errno texts. */
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, type Dirent, type Stats } from 'node:fs';
import path from 'node:path';
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

/** Replaces a file in one step (a temporary sibling, then rename), so no reader ever sees half of it. */
export async function atomicWrite(real: string, content: string, mode?: number): Promise<void> {
  const tmp = path.join(path.dirname(real), `.${path.basename(real)}.klea-${randomBytes(6).toString('hex')}.tmp`);
  try {
    await fs.writeFile(tmp, content, { mode: mode ?? 0o644, flag: 'wx' });
    await fs.rename(tmp, real);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

export const readJson = <T>(file: string): Promise<T | null> =>
  fs.readFile(file, 'utf8').then(
    (t) => JSON.parse(t) as T,
    () => null
  );

/** A file's bytes and stat; a directory is refused with a pointer to list_dir (`rel` names it for the model). */
export async function readText(
  real: string,
  rel: (real: string) => Promise<string>
): Promise<{ buf: Buffer; stat: Stats }> {
  const stat = await fs.stat(real);
  if (stat.isDirectory()) throw new ToolError(`${await rel(real)} is a directory: use list_dir`);
  return { buf: await fs.readFile(real), stat };
}

/** Entries under `dir`, sorted by name, `depth` levels below it; .git and node_modules are not entered. */
export async function* walk(dir: string, depth: number): AsyncGenerator<{ real: string; dirent: Dirent }> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const d of entries) {
    const real = path.join(dir, d.name);
    yield { real, dirent: d };
    // Symlinked directories are not followed: a link must not carry a walk outside the root.
    if (d.isDirectory() && !SKIP_DIRS.has(d.name) && depth > 0) yield* walk(real, depth - 1);
  }
}
