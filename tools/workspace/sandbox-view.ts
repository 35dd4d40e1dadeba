/**
 * What one command's sandbox must cover, found as the command starts: the sensitive files of the project and of the
 * directories granted to it (hidden), the unix sockets there (hidden: a read-only mount does not stop a connect),
 * and the protected files (read-only). The look-through is bounded: a tree too large to look through within
 * `tools.sandbox.scan_limit` entries refuses the command rather than run it with a secret visible.
 *
 * Every directory looked through is watched from before it is read until the command ends, so a sensitive file that
 * appears, or is replaced (an editor's save renames a new file over the old one, which would take the place of the
 * mount that hides it), stops the command: `onStop` names it, and the command's output is withheld.
 *
 * A protected path that does not exist yet (`.vscode/`, `.envrc`) gets an empty placeholder, bound read-only, for
 * as long as a command runs, so no command can create it; the placeholder is removed after the last command that
 * needed it, if nothing was put in it. Inside `.git/` a placeholder would change what git does, so a protected path
 * there that a command created is removed when it ends, and the result says so.
 */
import { lstatSync, mkdirSync, rmdirSync, rmSync, watch, writeFileSync, type FSWatcher, promises as fs } from 'node:fs';
import path from 'node:path';
import { protectedAnchor } from '../../common/path-guard';
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
  /** Registers what to do when a sensitive file appears while the command runs (at once if one already has). */
  onStop(stop: (reason: string) => void): void;
  /** The command is over: stops watching, removes placeholders; notes for the command's result. */
  finish(): Promise<string[]>;
}

/** A name no pattern spells out: a directory where `<dir>/<probe>` is protected is protected as a whole. */
const PROBE = '\u0001probe';

/** Placeholders in use, by path: removed when the last command that needs one ends. */
const placeholders = new Map<string, { users: number; dir: boolean; ino: number }>();

/** Whether a path is one of the placeholders commands running now hold (not the project's own file). */
export const isPlaceholder = (real: string): boolean => placeholders.has(real);

const isWithin = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

export async function buildSandboxView(gate: PathGate, opts: ViewOptions): Promise<SandboxView> {
  const { root, scanLimit } = opts;
  const hidden: SandboxView['hidden'] = [];
  const readOnly = new Set<string>();
  const pinned: string[] = [];
  const granted = new Set(opts.grants.map((g) => g.path));
  const watchers: FSWatcher[] = [];
  let stopReason: string | null = null;
  let stop: ((reason: string) => void) | null = null;
  let seen = 0;

  /** How the sensitive patterns see a path: relative to the project inside it, its absolute path elsewhere. */
  const shown = (real: string) => (isWithin(root, real) ? path.relative(root, real) : real.slice(1));
  const breach = (reason: string) => {
    if (stopReason) return;
    stopReason = reason;
    stop?.(reason);
  };

  const tooMany = () =>
    new ToolError(
      `run_command refused: more than ${scanLimit} files and directories to look through for sensitive files ` +
        `(in the project and the directories granted to it), so not every secret could be hidden. Raise ` +
        `tools.sandbox.scan_limit in klea.yaml, or grant a smaller directory; the command was not run`
    );

  /** Watches a directory for sensitive names appearing in it, then lists it. */
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
    if (!st.isDirectory()) return;
    // A directory moved in may hold secrets: look through it as the command started would have.
    const found: SandboxView['hidden'] = [];
    await visit(real, found, true, false).catch(() => undefined);
    if (found.length) breach(`${shown(found[0].path)} (a sensitive file) appeared while the command ran`);
  }

  /**
   * Looks through `dir`: sensitive files (and, as the command starts, sockets: later ones are its own) into `out`,
   * protected ones into `readOnly`.
   */
  async function visit(dir: string, out: SandboxView['hidden'], inProject: boolean, sockets = true): Promise<void> {
    const entries = await watchAndList(dir);
    if (!entries) return;
    for (const d of entries) {
      if (++seen > scanLimit) throw tooMany();
      const real = path.join(dir, d.name);
      if (gate.ownState(real) || granted.has(real) || placeholders.has(real)) continue;
      const rel = shown(real);
      if (gate.sensitive(rel)) {
        out.push({ path: real, dir: d.isDirectory() });
        continue;
      }
      // Security: a read-only mount does not stop a connect(); a socket (an ssh or gpg agent) is covered instead.
      if (sockets && d.isSocket()) {
        out.push({ path: real, dir: false });
        continue;
      }
      // Another command's placeholder (a `.git` this command pins, say): this command holds it too, so it stays
      // until both are over.
      const held = inProject ? placeholders.get(real) : undefined;
      if (held && !mine.includes(real)) {
        held.users++;
        mine.push(real);
      }
      if (inProject && (gate.protectedBy(rel) || (d.isDirectory() && gate.protectedBy(`${rel}/${PROBE}`))))
        readOnly.add(real);
      if (!d.isDirectory()) continue;
      if (d.name === '.git' && inProject) await visitGit(real);
      // Symlinks are not followed: the sandbox shows a link's target only if that target is bound anyway.
      else await visit(real, out, inProject, sockets);
    }
  }

  /** A repository's own directory: pinned (it cannot be renamed away), its protected entries read-only. */
  async function visitGit(gitDir: string): Promise<void> {
    pinned.push(gitDir);
    const walkProtected = async (dir: string, depth: number): Promise<void> => {
      const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const d of entries) {
        if (++seen > scanLimit) throw tooMany();
        const real = path.join(dir, d.name);
        const rel = shown(real);
        if (gate.protectedBy(rel) || (d.isDirectory() && gate.protectedBy(`${rel}/${PROBE}`))) readOnly.add(real);
        // Objects, refs and logs hold nothing that runs; submodules' repositories have configs and hooks.
        else if (d.isDirectory() && depth > 0 && (dir !== gitDir || d.name === 'modules'))
          await walkProtected(real, depth - 1);
      }
    };
    await walkProtected(gitDir, 8);
  }

  // Protected paths that do not exist yet: a placeholder where one is harmless, a sweep afterwards in .git/.
  const mine: string[] = [];
  const swept: string[] = [];
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
    if (mine.includes(top) || swept.includes(top)) continue;
    const held = placeholders.get(top);
    if (held) held.users++;
    else if (lstatSyncOrNull(top)) continue;
    else if (gitExists && isWithin(gitDir, top) && !placeholders.has(gitDir)) {
      swept.push(top);
      continue;
    } else {
      const asDir = anchor.dir || top !== target;
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

  const release = async () => {
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
    onStop(fn) {
      stop = fn;
      if (stopReason) fn(stopReason);
    },
    async finish() {
      await release();
      const notes: string[] = [];
      for (const p of swept) {
        if (!(await exists(p))) continue;
        await fs.rm(p, { recursive: true, force: true });
        notes.push(
          `removed ${path.relative(root, p)}: the command created it, and it is protected (git would run or load it later)`
        );
      }
      return notes;
    },
  };
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
