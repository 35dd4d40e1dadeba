/**
 * What a command's sandbox view needs to know of git: what git takes for a git directory, which entries of one may
 * be protected, and where a `.git` file points.
 */
import { constants, type Dirent, promises as fs } from 'node:fs';
import path from 'node:path';
import { resolvePath } from '../../runtime/path-resolve';

/**
 * The entries of a git directory that may be protected (its top level, and the repositories of its submodules),
 * each with the pattern that protects it (as `.git/<path in it>`), or null. Objects, refs and logs hold nothing
 * that runs, and are not looked through.
 */
export async function* protectedInGit(
  gitDir: string,
  protectedAt: (real: string, virtual: string, dir: boolean) => string | null,
  count: () => void = () => undefined
): AsyncGenerator<{ real: string; pattern: string | null }> {
  async function* walk(dir: string, depth: number): AsyncGenerator<{ real: string; pattern: string | null }> {
    const entries: Dirent[] = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of entries) {
      count();
      const real = path.join(dir, d.name);
      const virtual = ['.git', ...path.relative(gitDir, real).split(path.sep)].join('/');
      const pattern = protectedAt(real, virtual, d.isDirectory());
      yield { real, pattern };
      if (!pattern && d.isDirectory() && depth > 0 && (dir !== gitDir || d.name === 'modules'))
        yield* walk(real, depth - 1);
    }
  }
  yield* walk(gitDir, 8);
}

/**
 * Whether a directory's entries make it a git directory, as git decides when it looks for a repository: `HEAD`, and
 * `objects/` and `refs/` (or a `commondir` naming where they are). git takes such a directory for a repository of
 * its own, a bare one, and runs its settings.
 */
export function isGitDirectory(entries: readonly Dirent[]): boolean {
  const has = (name: string, dir: boolean) =>
    entries.some((d) => d.name === name && (dir ? d.isDirectory() : !d.isDirectory()));
  return has('HEAD', false) && ((has('objects', true) && has('refs', true)) || has('commondir', false));
}

/** The git directory a `.git` file names (`gitdir: <path>`), as a real path, or null. Never follows a symlink. */
export async function gitdirOf(file: string): Promise<string | null> {
  const handle = await fs
    .open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    .catch(() => null);
  if (!handle) return null;
  const buf = Buffer.alloc(4096);
  const { bytesRead } = await handle.read(buf, 0, buf.length, 0).finally(() => handle.close());
  const m = /^gitdir:[ \t]*(.+?)[ \t\r]*$/m.exec(buf.subarray(0, bytesRead).toString('utf8'));
  return m ? resolvePath(path.resolve(path.dirname(file), m[1])).real : null;
}
