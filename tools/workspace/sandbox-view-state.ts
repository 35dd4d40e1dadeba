/**
 * What the parts of one command's sandbox view share: what was there as the command started (by identity: a
 * protected entry renamed elsewhere is still itself), what is bound read-only or pinned, the watchers, and why the
 * command must stop. The look-through (sandbox-view-scan.ts) fills it, the placeholders
 * (sandbox-view-placeholders.ts) add to it, and the sweep (sandbox-view-sweep.ts) reads it once the command is over.
 * `isNew` tells what a command made from what it did not: an entry there when it started, one bound read-only
 * whose directory is still there, one write_file or edit_file wrote (`noteToolWrite`), or one a grant opens to it.
 */
import { lstatSync, type FSWatcher, type Stats, promises as fs } from 'node:fs';
import path from 'node:path';
import type { PathGate } from './path-gate';

/** A name no pattern spells out: a directory where `<dir>/<probe>` is protected is protected as a whole. */
const PROBE = '\u0001probe';

/** What a file system entry is, whatever its path: a protected entry renamed elsewhere is still itself. */
export const identity = (st: Stats) =>
  `${st.dev}:${st.ino}:${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'}`;

/**
 * The same, for an entry that may be a symlink: a link can be removed and made again (its inode number reused), so
 * what it points to is part of what it is.
 */
export async function identityOf(real: string, st: Stats): Promise<string> {
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

/** Whether `p` is `root` or below it. */
export const isWithin = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** An entry's own stat (a symlink's, not its target's), or null if it is not there. */
export const lstatSyncOrNull = (p: string) => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

/** Whether anything stands at a path (a dangling symlink too). */
export const exists = (p: string) =>
  fs.lstat(p).then(
    () => true,
    () => false
  );

/** What one command's view knows, shared by its parts. */
export interface ViewState {
  gate: PathGate;
  root: string;
  /** Paths bound read-only: protected entries there as the command starts, and the placeholders. */
  readOnly: Set<string>;
  /** Git directories, pinned so they cannot be renamed away. */
  pinned: string[];
  /** Every directory looked through, watched until the command ends. */
  watchers: FSWatcher[];
  /** The identities of the protected entries and repositories there when the command started. */
  before: Set<string>;
  /** Protected entries that are symlinks (a link cannot be bound over): put back if the command replaced them. */
  links: Map<string, string>;
  /** Git directories of the project (`.git` directories, and those `.git` files point to). */
  gitDirs: string[];
  /** Git directories that `.git` files point to and that do not exist yet: a command may not make them. */
  pendingGitdirs: string[];
  /** The placeholders this command holds, as real paths. */
  mine: string[];
  /** The command is over: nothing stops it any more. */
  over: boolean;
  /** Why the command must stop, once it must. */
  stopReason: { reason: string; withhold: boolean } | null;
  /** What to do when it must (see `SandboxView.onStop`). */
  stop: ((reason: string, withhold: boolean) => void) | null;
  /** How the sensitive patterns see a path: relative to the project inside it, its absolute path elsewhere. */
  shown: (real: string) => string;
  /** The command must stop: why, and whether its output must be withheld. */
  breach: (reason: string, withhold?: boolean) => void;
  /** A protected entry is bound read-only: what its directory is now is noted (see `isNew`). */
  mounted: (real: string) => void;
  /** The protected pattern a project path matches, a directory's as a whole included, or null. */
  protectedAt: (rel: string, dir: boolean) => string | null;
  /** The same for a path in a git directory, which is also matched as `.git/<its path in the git directory>`. */
  inGit: (real: string, virtual: string, dir: boolean) => string | null;
  /**
   * Whether a protected entry (or repository) at `real` is not one that was there when the command started, nor one
   * that write_file or edit_file wrote, nor one a grant lets commands write.
   */
  isNew: (real: string, st: Stats) => Promise<boolean>;
}

/** A command's view as it starts: nothing found yet. `grants`: the call's, as `ViewOptions` has them. */
export function createViewState(
  gate: PathGate,
  root: string,
  grants: ReadonlyArray<{ path: string; op: string }>
): ViewState {
  const writable = grants.filter((g) => g.op === 'write').map((g) => g.path);
  const before = new Set<string>();
  /**
   * Protected entries bound read-only, by path, with what their directory was: a mount point cannot be removed or
   * replaced, so while that directory is still there, whatever stands at the path now is not the command's doing.
   */
  const mountedAt = new Map<string, string>();
  const mounted = (real: string) => {
    const dir = lstatSyncOrNull(path.dirname(real));
    if (dir) mountedAt.set(real, identity(dir));
  };
  const shown = (real: string) => (isWithin(root, real) ? path.relative(root, real) : real.slice(1));
  /** A grant to write a path (or a directory above it) opens it to commands. */
  const writeGranted = (real: string) => writable.some((w) => isWithin(w, real));
  const protectedAt = (rel: string, dir: boolean) =>
    gate.protectedBy(rel) ?? (dir ? gate.protectedBy(`${rel}/${PROBE}`) : null);
  const inGit = (real: string, virtual: string, dir: boolean) =>
    protectedAt(shown(real), dir) ?? protectedAt(virtual, dir);

  const state: ViewState = {
    gate,
    root,
    readOnly: new Set<string>(),
    pinned: [],
    watchers: [],
    before,
    links: new Map<string, string>(),
    gitDirs: [],
    pendingGitdirs: [],
    mine: [],
    over: false,
    stopReason: null,
    stop: null,
    shown,
    breach: (reason, withhold = true) => {
      // The first reason stands, unless a later one must withhold the output and it did not.
      if (state.over || (state.stopReason && (state.stopReason.withhold || !withhold))) return;
      state.stopReason = { reason, withhold };
      state.stop?.(reason, withhold);
    },
    mounted,
    protectedAt,
    inGit,
    isNew: async (real, st) => {
      if (writeGranted(real) || toolWrites.get(real) === identity(st) || before.has(await identityOf(real, st)))
        return false;
      const dir = mountedAt.get(real);
      return !(dir && dir === (await fs.lstat(path.dirname(real)).then(identity, () => null)));
    },
  };
  return state;
}
