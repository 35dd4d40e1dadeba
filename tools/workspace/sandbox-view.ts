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
 *
 * A protected path of the project's root that does not exist yet (`.vscode/`, `AGENTS.md`) gets an empty
 * placeholder file (a missing `.git`, an empty directory), bound read-only, for as long as a command runs, so no
 * command can create it; the placeholder is removed after the last command that needed it, if nothing was put in it. Deeper down (and in a `.git` directory,
 * where a placeholder would change what git does) no placeholder can stand at every place: once the command is over
 * (and nothing it started is left), the project is looked through again, and every protected file and repository
 * that was not there when it started is removed; the result says so.
 */
import {
  constants,
  lstatSync,
  mkdirSync,
  rmdirSync,
  rmSync,
  watch,
  writeFileSync,
  type Dirent,
  type FSWatcher,
  type Stats,
  promises as fs,
} from 'node:fs';
import path from 'node:path';
import {
  canonicalName,
  inDependencies,
  isRepositoryEntry,
  protectedAnchor,
  protectedWhy,
} from '../../common/path-guard';
import { resolvePath } from '../../runtime/path-resolve';
import type { PathGate } from './path-gate';
import { ToolError } from './tool-result';

export interface ViewOptions {
  root: string;
  /** Real paths granted to the call (read, write or execute), each exactly as granted. */
  grants: ReadonlyArray<{ path: string; op: string }>;
  protectedPatterns: readonly string[];
  /** Most entries looked through in all. */
  scanLimit: number;
}

export interface SandboxView {
  hidden: Array<{ path: string; dir: boolean }>;
  pinned: string[];
  readOnly: string[];
  /** The placeholders this command holds, root-relative: git inside the sandbox is told to ignore them. */
  placeholders: string[];
  /**
   * Registers what to do when the command must be stopped while it runs (at once if it already must): why, and
   * whether its output must be withheld (a secret may be in it).
   */
  onStop(stop: (reason: string, withhold: boolean) => void): void;
  /** The command is over (nothing it started is left): undoes what it must not have done; notes for its result. */
  finish(): Promise<string[]>;
}

/** A name no pattern spells out: a directory where `<dir>/<probe>` is protected is protected as a whole. */
const PROBE = '\u0001probe';

/** Placeholders in use, by path: removed when the last command that needs one ends. */
const placeholders = new Map<string, { users: number; dir: boolean; ino: number }>();

/** Whether a path is one of the placeholders commands running now hold (not the project's own file). */
export const isPlaceholder = (real: string): boolean => placeholders.has(real);

/** What a file system entry is, whatever its path: a protected entry renamed elsewhere is still itself. */
const identity = (st: Stats) => `${st.dev}:${st.ino}:${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'}`;

/**
 * The same, for an entry that may be a symlink: a link can be removed and made again (its inode number reused), so
 * what it points to is part of what it is.
 */
async function identityOf(real: string, st: Stats): Promise<string> {
  return st.isSymbolicLink() ? `${identity(st)}:${await fs.readlink(real).catch(() => '')}` : identity(st);
}

/**
 * Protected files written by write_file and edit_file (the user allowed it), by real path: a command running
 * meanwhile does not take them for its own. Bounded: the oldest go first.
 */
const toolWrites = new Map<string, string>();

/** write_file or edit_file changed a file: not a command's doing, even if a command is running. */
export function noteToolWrite(real: string): void {
  const st = lstatSyncOrNull(real);
  if (!st) return;
  toolWrites.delete(real);
  toolWrites.set(real, identity(st));
  if (toolWrites.size > 1000) toolWrites.delete(toolWrites.keys().next().value!);
}

const isWithin = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** A protected path found when the command ends that was not there when it started. */
interface Created {
  real: string;
  /** The pattern that protects it (`.git` for a repository). */
  pattern: string;
  /** A git directory without a `.git` name: one a `.git` file names, or one git takes for a bare repository. */
  gitdir?: boolean;
}

export async function buildSandboxView(gate: PathGate, opts: ViewOptions): Promise<SandboxView> {
  const { root, scanLimit } = opts;
  const hidden: SandboxView['hidden'] = [];
  const readOnly = new Set<string>();
  const pinned: string[] = [];
  const granted = new Set(opts.grants.map((g) => g.path));
  const writable = opts.grants.filter((g) => g.op === 'write').map((g) => g.path);
  const watchers: FSWatcher[] = [];
  /** The identities of the protected entries and repositories there when the command started. */
  const before = new Set<string>();
  /** Protected entries that are symlinks (a link cannot be bound over): put back if the command replaced them. */
  const links = new Map<string, string>();
  /**
   * Protected entries bound read-only, by path, with what their directory was: a mount point cannot be removed or
   * replaced, so while that directory is still there, whatever stands at the path now is not the command's doing.
   */
  const mountedAt = new Map<string, string>();
  const mounted = (real: string) => {
    const dir = lstatSyncOrNull(path.dirname(real));
    if (dir) mountedAt.set(real, identity(dir));
  };
  /** Git directories of the project (`.git` directories, and those `.git` files point to). */
  const gitDirs: string[] = [];
  /** Git directories that `.git` files point to and that do not exist yet: a command may not make them. */
  const pendingGitdirs: string[] = [];
  let stopReason: { reason: string; withhold: boolean } | null = null;
  let stop: ((reason: string, withhold: boolean) => void) | null = null;
  let seen = 0;
  let over = false;

  /** How the sensitive patterns see a path: relative to the project inside it, its absolute path elsewhere. */
  const shown = (real: string) => (isWithin(root, real) ? path.relative(root, real) : real.slice(1));
  const breach = (reason: string, withhold = true) => {
    // The first reason stands, unless a later one must withhold the output and it did not.
    if (over || (stopReason && (stopReason.withhold || !withhold))) return;
    stopReason = { reason, withhold };
    stop?.(reason, withhold);
  };
  /** A grant to write a path (or a directory above it) opens it to commands. */
  const writeGranted = (real: string) => writable.some((w) => isWithin(w, real));
  /** The protected pattern a project path matches, a directory's as a whole included, or null. */
  const protectedAt = (rel: string, dir: boolean) =>
    gate.protectedBy(rel) ?? (dir ? gate.protectedBy(`${rel}/${PROBE}`) : null);
  /** The same for a path in a git directory, which is also matched as `.git/<its path in the git directory>`. */
  const inGit = (real: string, virtual: string, dir: boolean) =>
    protectedAt(shown(real), dir) ?? protectedAt(virtual, dir);

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
    if (!st || placeholders.get(real)?.ino === st.ino) return;
    if (gate.sensitive(shown(real))) {
      breach(`${shown(real)} (a sensitive file) appeared or was replaced while the command ran`);
      return;
    }
    if (isWithin(root, real) && (await madeByCommand(real, st))) return;
    if (!st.isDirectory()) return;
    // A directory moved in may hold secrets (or repositories): look through it as the command started would have.
    const found: SandboxView['hidden'] = [];
    await visit(real, found, isWithin(root, real), true).catch(() => undefined);
    if (found.length) breach(`${shown(found[0].path)} (a sensitive file) appeared while the command ran`);
  }

  /**
   * Whether a protected entry (or repository) at `real` is not one that was there when the command started, nor one
   * that write_file or edit_file wrote, nor one a grant lets commands write.
   */
  async function isNew(real: string, st: Stats): Promise<boolean> {
    if (writeGranted(real) || toolWrites.get(real) === identity(st) || before.has(await identityOf(real, st)))
      return false;
    const dir = mountedAt.get(real);
    return !(dir && dir === (await fs.lstat(path.dirname(real)).then(identity, () => null)));
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
    out: SandboxView['hidden'],
    inProject: boolean,
    live = false,
    listed: Dirent[] | null = null
  ): Promise<void> {
    const entries = listed ?? (await watchAndList(dir));
    if (!entries) return;
    for (const d of entries) {
      if (++seen > scanLimit) throw tooMany();
      const real = path.join(dir, d.name);
      if (gate.ownState(real) || granted.has(real) || placeholders.has(real)) continue;
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
        // Another command's placeholder (a `.git` this command pins, say): this command holds it too, so it stays
        // until both are over.
        const held = inProject ? placeholders.get(real) : undefined;
        if (held && !mine.includes(real)) {
          held.users++;
          mine.push(real);
        }
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

  // Protected paths of the root that do not exist yet: a placeholder where one is harmless; in .git/, none.
  const mine: string[] = [];
  const gitDir = path.join(root, '.git');
  const gitExists = await fs
    .lstat(gitDir)
    .then((s) => s.isDirectory())
    .catch(() => false);
  for (const pattern of opts.protectedPatterns) {
    const anchor = protectedAnchor(pattern);
    if (!anchor) continue;
    const target = path.join(root, anchor.path);
    if (!isWithin(root, target) || target === root) continue;
    let top = target;
    while (path.dirname(top) !== root && !(await exists(path.dirname(top)))) top = path.dirname(top);
    // Concurrency: from here to the placeholder's record, nothing awaits (commands of one server share the map), so
    // two commands never both make one, and none takes another's placeholder for a file of the project. A path
    // under another command's placeholder directory (its `.git`, say) is covered by holding that one.
    for (let up = path.dirname(target); up !== root && isWithin(root, up); up = path.dirname(up))
      if (placeholders.has(up)) top = up;
    if (mine.includes(top)) continue;
    const held = placeholders.get(top);
    if (held) held.users++;
    else if (lstatSyncOrNull(top)) continue;
    // Inside an existing .git/ a placeholder would change what git does: what a command creates there is removed.
    else if (gitExists && isWithin(gitDir, top) && !placeholders.has(gitDir)) continue;
    else {
      // An empty file stops a directory being made as well as a directory would, and goes again at a fraction of
      // its cost; only a missing `.git` stands as a directory (git takes an empty one for no repository at all).
      const asDir = (anchor.dir || top !== target) && isRepositoryEntry(path.basename(top));
      try {
        if (asDir) mkdirSync(top, { mode: 0o755 });
        else writeFileSync(top, '', { flag: 'wx', mode: 0o644 });
      } catch {
        continue;
      }
      const st = lstatSyncOrNull(top);
      if (!st) continue;
      placeholders.set(top, { users: 1, dir: asDir, ino: st.ino });
    }
    mine.push(top);
    readOnly.add(top);
  }
  for (const p of mine) {
    const st = lstatSyncOrNull(p);
    if (st) before.add(identity(st));
  }

  const release = async () => {
    over = true;
    for (const w of watchers) w.close();
    // Inner placeholders first (`.git/config` before `.git`), so a placeholder directory is empty when its turn comes.
    for (const p of [...mine].sort((a, b) => b.length - a.length)) {
      const held = placeholders.get(p);
      if (!held || --held.users > 0) continue;
      placeholders.delete(p);
      // Only an untouched placeholder goes: something the user put there since stays. Removed in the same turn as
      // its record, so no command starting meanwhile binds a path that is about to go.
      try {
        if (held.dir) rmdirSync(p);
        else if (lstatSyncOrNull(p)?.isFile() && lstatSyncOrNull(p)?.size === 0) rmSync(p, { force: true });
      } catch {
        // Not empty any more, or gone: left as it is.
      }
    }
  };

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
        if (gate.ownState(real) || placeholders.has(real) || gitDirs.includes(real)) continue;
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

  try {
    await visit(root, hidden, true);
    for (const g of opts.grants) {
      if (isWithin(root, g.path)) continue;
      const st = await fs.lstat(g.path).catch(() => null);
      if (st?.isDirectory()) await visit(g.path, hidden, false);
    }
  } catch (err) {
    await release();
    throw err;
  }

  return {
    hidden,
    pinned,
    // Outer paths first, so a protected file in a protected directory is bound after it.
    readOnly: [...readOnly].sort((a, b) => a.length - b.length),
    placeholders: mine.map((p) => path.relative(root, p)),
    onStop(fn) {
      stop = fn;
      if (stopReason) fn(stopReason.reason, stopReason.withhold);
    },
    async finish() {
      over = true;
      for (const w of watchers) w.close();
      // Security: looked for with the placeholders still in place, so none is taken for something the command made.
      const notes = await undo(await createdByCommand());
      await release();
      return notes;
    },
  };
}

/**
 * The entries of a git directory that may be protected (its top level, and the repositories of its submodules),
 * each with the pattern that protects it (as `.git/<path in it>`), or null. Objects, refs and logs hold nothing
 * that runs, and are not looked through.
 */
async function* protectedInGit(
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
function isGitDirectory(entries: readonly Dirent[]): boolean {
  const has = (name: string, dir: boolean) =>
    entries.some((d) => d.name === name && (dir ? d.isDirectory() : !d.isDirectory()));
  return has('HEAD', false) && ((has('objects', true) && has('refs', true)) || has('commondir', false));
}

const lstatSyncOrNull = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

const exists = (p: string) =>
  fs.lstat(p).then(
    () => true,
    () => false
  );

/** The git directory a `.git` file names (`gitdir: <path>`), as a real path, or null. Never follows a symlink. */
async function gitdirOf(file: string): Promise<string | null> {
  const handle = await fs
    .open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    .catch(() => null);
  if (!handle) return null;
  const buf = Buffer.alloc(4096);
  const { bytesRead } = await handle.read(buf, 0, buf.length, 0).finally(() => handle.close());
  const m = /^gitdir:[ \t]*(.+?)[ \t\r]*$/m.exec(buf.subarray(0, bytesRead).toString('utf8'));
  return m ? resolvePath(path.resolve(path.dirname(file), m[1])).real : null;
}
