/**
 * After a command: deeper down than the placeholders of the project's root (and in a `.git` directory, where a
 * placeholder would change what git does) no placeholder can stand at every place, so once the command is over (and
 * nothing it started is left), the project is looked through again, and every protected file and repository that was
 * not there when it started is removed (a protected symlink it replaced is put back); the result says so.
 */
import { type Dirent, promises as fs } from 'node:fs';
import path from 'node:path';
import { canonicalName, isRepositoryEntry, protectedWhy } from '../../common/path-guard';
import { isGitDirectory, protectedInGit } from './sandbox-view-git';
import { isPlaceholder } from './sandbox-view-placeholders';
import { exists, isWithin, type ViewState } from './sandbox-view-state';

/** A protected path found when the command ends that was not there when it started. */
interface Created {
  real: string;
  /** The pattern that protects it (`.git` for a repository). */
  pattern: string;
  /** A git directory without a `.git` name: one a `.git` file names, or one git takes for a bare repository. */
  gitdir?: boolean;
}

/** Removes what the command made where it may not, and puts back what it replaced: notes for its result. */
export async function sweep(view: ViewState): Promise<string[]> {
  const { gate, root, gitDirs, pendingGitdirs, links, shown, protectedAt, inGit, isNew } = view;

  /**
   * Once the command is over: every protected entry and repository in the project that was not there when it
   * started (a symlink replaced counts). Not bounded: looking through less would leave what it planted in place.
   */
  async function createdByCommand(): Promise<Created[]> {
    const found: Created[] = [];
    async function look(dir: string, listed?: Dirent[]): Promise<void> {
      const entries: Dirent[] = listed ?? (await fs.readdir(dir, { withFileTypes: true }).catch(() => []));
      for (const d of entries) {
        const real = path.join(dir, d.name);
        if (gate.ownState(real) || isPlaceholder(real) || gitDirs.includes(real)) continue;
        const rel = shown(real);
        // Dependency folders hold no project settings.
        if (canonicalName(d.name) === 'node_modules') continue;
        const pattern = isRepositoryEntry(d.name) ? '.git' : protectedAt(rel, d.isDirectory());
        // What was hidden could not be written (a sensitive file a command made itself is no secret of the user's).
        if (!pattern && gate.sensitive(rel)) continue;
        if (pattern) {
          const st = await fs.lstat(real).catch(() => null);
          if (st && (await isNew(real, st))) found.push({ real, pattern });
          // A protected directory that was there was read-only: nothing new can be in it.
          continue;
        }
        if (!d.isDirectory()) continue;
        const sub: Dirent[] = await fs.readdir(real, { withFileTypes: true }).catch(() => []);
        if (isGitDirectory(sub)) found.push({ real, pattern: '.git', gitdir: true });
        else await look(real, sub);
      }
    }
    await look(root);
    for (const g of gitDirs) {
      for await (const { real, pattern } of protectedInGit(g, inGit)) {
        const st = pattern ? await fs.lstat(real).catch(() => null) : null;
        if (pattern && st && (await isNew(real, st))) found.push({ real, pattern });
      }
    }
    for (const g of pendingGitdirs) if (await exists(g)) found.push({ real: g, pattern: '.git', gitdir: true });
    return found;
  }

  /** Removes what the command created where it may not; puts back a protected symlink it replaced. */
  async function undo(created: Created[]): Promise<string[]> {
    const notes: string[] = [];
    const done: string[] = [];
    for (const c of created.sort((a, b) => a.real.length - b.real.length)) {
      if (done.some((d) => isWithin(d, c.real))) continue;
      done.push(c.real);
      await fs.rm(c.real, { recursive: true, force: true });
      const link = links.get(c.real);
      if (link !== undefined) await fs.symlink(link, c.real).catch(() => undefined);
      const rel = shown(c.real);
      notes.push(
        c.pattern === '.git'
          ? `removed ${rel}: a command may not make a repository (${c.gitdir ? 'a git directory' : 'a .git'}): ` +
              `${protectedWhy('.git')}. Run git init or git clone yourself`
          : `${link !== undefined ? 'put back' : 'removed'} ${rel}: a command may not ` +
              `${link !== undefined ? 'replace' : 'create'} it (${protectedWhy(c.pattern)}); write it with write_file, ` +
              'which asks the user first'
      );
    }
    return notes;
  }

  return undo(await createdByCommand());
}
