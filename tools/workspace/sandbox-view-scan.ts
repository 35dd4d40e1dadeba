/**
 * What one command's sandbox must cover, found as the command starts: the sensitive files of the project and of the
 * directories granted to it (hidden), the unix sockets there (hidden: a read-only mount does not stop a connect),
 * the protected files (read-only) and the repositories (every `.git` at any depth, and the git directory a `.git`
 * file points to: pinned, so they cannot be renamed away, their settings and hooks read-only). The look-through is
 * bounded: a tree too large to look through within `tools.sandbox.scan_limit` entries refuses the command rather
 * than run it with a secret visible or a repository unprotected.
 *
 * Every directory looked through is watched from before it is read until the command ends, so a sensitive file that
 * appears, or is replaced (an editor's save renames a new file over the old one, which would take the place of the
 * mount that hides it), stops the command: `onStop` names it, and the command's output is withheld. A protected
 * file or a repository that appears stops it too (its output is kept).
 */
import { watch, type Dirent, type Stats, promises as fs } from 'node:fs';
import path from 'node:path';
import { inDependencies, isRepositoryEntry } from '../../common/path-guard';
import { resolvePath } from '../../runtime/path-resolve';
import { gitdirOf, isGitDirectory, protectedInGit } from './sandbox-view-git';
import { holdToo, isPlaceholder, isPlaceholderEntry } from './sandbox-view-placeholders';
import { identity, identityOf, isWithin, type ViewState } from './sandbox-view-state';
import { ToolError } from './tool-result';

/**
 * Looks through the project and the directories granted to it outside it, watching each directory as it goes:
 * sensitive files and sockets into `hidden`; protected files, repositories and what was there into `view`. Throws a
 * ToolError if the command must be refused (too many entries, or a directory that cannot be watched).
 */
export async function lookThrough(
  view: ViewState,
  hidden: Array<{ path: string; dir: boolean }>,
  grants: ReadonlyArray<{ path: string; op: string }>,
  scanLimit: number
): Promise<void> {
  const { gate, root, readOnly, pinned, watchers, before, links, gitDirs, pendingGitdirs, mine } = view;
  const { shown, breach, mounted, protectedAt, inGit, isNew } = view;
  const granted = new Set(grants.map((g) => g.path));
  let seen = 0;

  const tooMany = () =>
    new ToolError(
      `run_command refused: more than ${scanLimit} files and directories to look through for sensitive files and ` +
        `repositories (in the project and the directories granted to it), so not every secret could be hidden nor ` +
        `every repository protected. Raise tools.sandbox.scan_limit in klea.yaml, or grant a smaller directory; ` +
        `the command was not run`
    );

  /** Watches a directory for sensitive and protected names appearing in it, then lists it. */
  async function watchAndList(dir: string) {
    try {
      const w = watch(dir, { persistent: false }, (event, name) => {
        if (event !== 'rename' || !name) return;
        void onRename(path.join(dir, name.toString()));
      });
      w.on('error', () => undefined);
      watchers.push(w);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return null;
      throw new ToolError(
        `run_command refused: cannot watch ${shown(dir)} for sensitive files that appear while the command runs ` +
          `(${code ?? String(err)}; the system's inotify limit, fs.inotify.max_user_watches, may be reached)`
      );
    }
    return fs.readdir(dir, { withFileTypes: true }).catch(() => null);
  }

  /** A name appeared, went or was replaced in a watched directory while the command runs. */
  async function onRename(real: string) {
    if (gate.ownState(real)) return;
    // A name that went exposes nothing; one of the placeholders (this command's or another's) is no secret.
    const st = await fs.lstat(real).catch(() => null);
    if (!st || isPlaceholderEntry(real, st.ino)) return;
    if (gate.sensitive(shown(real))) {
      breach(`${shown(real)} (a sensitive file) appeared or was replaced while the command ran`);
      return;
    }
    if (isWithin(root, real) && (await madeByCommand(real, st))) return;
    if (!st.isDirectory()) return;
    // A directory moved in may hold secrets (or repositories): look through it as the command started would have.
    const found: Array<{ path: string; dir: boolean }> = [];
    await visit(real, found, isWithin(root, real), true).catch(() => undefined);
    if (found.length) breach(`${shown(found[0].path)} (a sensitive file) appeared while the command ran`);
  }

  /** While the command runs: a protected entry or a repository that was not there stops it (it is removed after). */
  async function madeByCommand(real: string, st: Stats, as?: string): Promise<boolean> {
    const rel = shown(real);
    if (inDependencies(rel)) return false;
    const pattern = as ?? (isRepositoryEntry(path.basename(real)) ? '.git' : protectedAt(rel, st.isDirectory()));
    if (!pattern || !(await isNew(real, st))) return false;
    breach(
      `${rel} appeared while the command ran, and a command may not make it (it is protected: see the note)`,
      false
    );
    return true;
  }

  /**
   * Looks through `dir`: sensitive files (and, as the command starts, sockets: later ones are its own) into `out`,
   * protected ones into `readOnly`, repositories pinned. `live`: a directory that appeared while the command runs.
   */
  async function visit(
    dir: string,
    out: Array<{ path: string; dir: boolean }>,
    inProject: boolean,
    live = false,
    listed: Dirent[] | null = null
  ): Promise<void> {
    const entries = listed ?? (await watchAndList(dir));
    if (!entries) return;
    for (const d of entries) {
      if (++seen > scanLimit) throw tooMany();
      const real = path.join(dir, d.name);
      if (gate.ownState(real) || granted.has(real) || isPlaceholder(real)) continue;
      const rel = shown(real);
      if (gate.sensitive(rel)) {
        out.push({ path: real, dir: d.isDirectory() });
        // Hidden, so it cannot be written either; if protected too (`.npmrc`), it is no command's doing.
        if (!live && inProject && !inDependencies(rel) && protectedAt(rel, d.isDirectory())) {
          const st = await fs.lstat(real).catch(() => null);
          if (st) before.add(await identityOf(real, st));
          mounted(real);
        }
        continue;
      }
      // Security: a read-only mount does not stop a connect(); a socket (an ssh or gpg agent) is covered instead.
      if (!live && d.isSocket()) {
        out.push({ path: real, dir: false });
        continue;
      }
      if (live) {
        const st = inProject ? await fs.lstat(real).catch(() => null) : null;
        if (st && (await madeByCommand(real, st))) continue;
      } else {
        // Another command's placeholder: this command holds it too (see holdToo).
        if (inProject) holdToo(real, mine);
        if (inProject && !inDependencies(rel)) {
          if (isRepositoryEntry(d.name)) {
            await repository(real);
            continue;
          }
          if (protectedAt(rel, d.isDirectory())) await keep(real);
        }
      }
      // Symlinks are not followed: the sandbox shows a link's target only if that target is bound anyway.
      if (!d.isDirectory()) continue;
      const sub = await watchAndList(real);
      // A directory git takes for a git directory (a bare repository; or one a `.git` file may point to).
      if (sub && inProject && !inDependencies(rel) && isGitDirectory(sub)) {
        const st = await fs.lstat(real).catch(() => null);
        if (!st) continue;
        if (live) await madeByCommand(real, st, '.git');
        else {
          before.add(identity(st));
          mounted(real);
          await visitGit(real);
        }
        continue;
      }
      await visit(real, out, inProject, live, sub);
    }
  }

  /** A protected entry there as the command starts: read-only to it (for a symlink, what it points to). */
  async function keep(real: string): Promise<void> {
    const st = await fs.lstat(real).catch(() => null);
    if (!st) return;
    before.add(await identityOf(real, st));
    if (!st.isSymbolicLink()) {
      readOnly.add(real);
      mounted(real);
      return;
    }
    // A link cannot be bound over: it is put back if the command replaces it, and what it points to in the project
    // is read-only (an AGENTS.md that links to docs/agents.md is as protected as docs/agents.md is).
    links.set(real, await fs.readlink(real));
    const target = resolvePath(real).real;
    if (!target || !isWithin(root, target) || target === root || gate.ownState(target) || gate.sensitive(shown(target)))
      return;
    const t = await fs.lstat(target).catch(() => null);
    if (!t) return;
    before.add(identity(t));
    readOnly.add(target);
    mounted(target);
  }

  /** A repository's `.git`: a directory is pinned, a file (a `gitdir:` pointer) read-only with what it points to. */
  async function repository(real: string): Promise<void> {
    const st = await fs.lstat(real).catch(() => null);
    if (!st) return;
    if (st.isDirectory()) {
      before.add(identity(st));
      mounted(real);
      await visitGit(real);
      return;
    }
    await keep(real);
    const target = st.isFile() ? await gitdirOf(real) : resolvePath(real).real;
    if (!target || !isWithin(root, target) || target === root || gate.ownState(target)) return;
    const t = await fs.lstat(target).catch(() => null);
    if (t?.isDirectory()) {
      before.add(identity(t));
      mounted(target);
      await visitGit(target);
    } else if (!t) pendingGitdirs.push(target);
  }

  /** A git directory: pinned (it cannot be renamed away), its protected entries read-only. */
  async function visitGit(gitDir: string): Promise<void> {
    if (gitDirs.includes(gitDir)) return;
    gitDirs.push(gitDir);
    pinned.push(gitDir);
    for await (const { real, pattern } of protectedInGit(gitDir, inGit, () => {
      if (++seen > scanLimit) throw tooMany();
    }))
      if (pattern) await keep(real);
  }

  await visit(root, hidden, true);
  for (const g of grants) {
    if (isWithin(root, g.path)) continue;
    const st = await fs.lstat(g.path).catch(() => null);
    if (st?.isDirectory()) await visit(g.path, hidden, false);
  }
}
