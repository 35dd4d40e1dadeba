/**
 * Placeholders: a protected path of the project's root that does not exist yet (`.vscode/`, `AGENTS.md`) gets an
 * empty placeholder file (a missing `.git`, an empty directory), bound read-only, for as long as a command runs, so
 * no command can create it; the placeholder is removed after the last command that needed it, if nothing was put in
 * it. Deeper down (and in a `.git` directory, where a placeholder would change what git does) no placeholder can
 * stand at every place: the sweep (sandbox-view-sweep.ts) removes what a command made there. The commands of one
 * server share the placeholders.
 */
import { mkdirSync, rmdirSync, rmSync, writeFileSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { isRepositoryEntry, protectedAnchor } from '../../common/path-guard';
import { exists, identity, isWithin, lstatSyncOrNull, type ViewState } from './sandbox-view-state';

/** Placeholders in use, by path: removed when the last command that needs one ends. */
const placeholders = new Map<string, { users: number; dir: boolean; ino: number }>();

/** Whether a path is one of the placeholders commands running now hold (not the project's own file). */
export const isPlaceholder = (real: string): boolean => placeholders.has(real);

/** Whether the entry at a placeholder's path is the placeholder itself (by inode), not something put there since. */
export const isPlaceholderEntry = (real: string, ino: number): boolean => placeholders.get(real)?.ino === ino;

/**
 * Another command's placeholder (a `.git` this command pins, say): this command holds it too, so it stays until both
 * are over.
 */
export function holdToo(real: string, mine: string[]): void {
  const held = placeholders.get(real);
  if (held && !mine.includes(real)) {
    held.users++;
    mine.push(real);
  }
}

/**
 * Protected paths of the root that do not exist yet: a placeholder where one is harmless (into `view.mine` and
 * `view.readOnly`, as there when the command started); in .git/, none.
 */
export async function makePlaceholders(view: ViewState, protectedPatterns: readonly string[]): Promise<void> {
  const { root, mine, readOnly, before } = view;
  const gitDir = path.join(root, '.git');
  const gitExists = await fs
    .lstat(gitDir)
    .then((s) => s.isDirectory())
    .catch(() => false);
  for (const pattern of protectedPatterns) {
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
}

/** The command is over: the placeholders it held that no other command holds go, if nothing was put in them. */
export function releasePlaceholders(mine: readonly string[]): void {
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
}
