/**
 * One look at the project by the stat index (`IndexPass`): either a walk of the whole project, or a visit of the
 * paths events named since the last look. Each path is stat'ed, and a file is hashed only where its stat changed
 * (or an event named it); the entry is updated, and a change recorded where the content (not just the times)
 * changed. A new directory is watched before it is read, so nothing made in it meanwhile goes unheard.
 *
 * A walk gives the event loop a turn every few milliseconds, so the server keeps answering while it hashes a project.
 */
import { lstatSync, readdirSync, readlinkSync, type Dirent, type Stats } from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { HASH_LIMIT, readNoFollow, TEMP_NAME, UNTRACKED_NAMES } from './project-paths';
import type { IndexEntry } from './stat-index-file';
import type { StatIndexWatcher } from './stat-index-watcher';
import { sha256 } from './store';

/** A path whose content (or kind) changed since the index last saw it. */
export interface IndexChange {
  rel: string;
  before?: IndexEntry;
  after?: IndexEntry;
}

/** What a pass looks with and updates: the index's entries and watcher, and the project's rules. */
export interface PassContext {
  /** The project's real path. */
  root: string;
  entries: Map<string, IndexEntry>;
  watcher: StatIndexWatcher;
  /** Content a write of the server's own is about to leave at a path: taken in there without calling it a change. */
  expected: Map<string, { content: string }>;
  /** Paths left out besides the untracked names. */
  skip(abs: string): boolean;
  sensitive(rel: string): boolean;
  /** Keeps a file's content in the store if there is room; whether it is kept. */
  keep(hash: string, data: Buffer): boolean;
  /** How recently changed a file is racy (IndexEntry.r), in ms. */
  racyMs?: number;
}

/** A file changed this recently (ms) when it was looked at is racy (see IndexEntry.r); covers 1 s and 2 s clocks. */
const RACY_MS = 2500;
/** A walk gives the event loop a turn this often (ms). */
const SLICE_MS = 25;

export class IndexPass {
  /** What changed, in the order it was found. */
  readonly changes: IndexChange[] = [];
  /** The paths whose entries were set or removed (to be persisted). */
  readonly touched = new Set<string>();
  /** Files read to hash them. */
  hashed = 0;
  private sliceStart = performance.now();

  constructor(private readonly ctx: PassContext) {}

  /** The whole project, every path stat'ed; a file hashed only where its stat changed. */
  async walkAll(): Promise<void> {
    const { ctx } = this;
    // Events from here on belong to the next refresh.
    ctx.watcher.startWalk();
    const seen = new Set<string>(['']);
    const top = lstatSync(ctx.root, { throwIfNoEntry: false });
    if (!top?.isDirectory()) throw new Error(`the project ${ctx.root} is not a directory`);
    ctx.watcher.watchDir('', top.ino);
    await this.walkDir('', seen);
    for (const [rel, e] of ctx.entries) if (!seen.has(rel)) this.drop(rel, e);
    for (const dir of ctx.watcher.watchedDirs())
      if (dir && ctx.entries.get(dir)?.k !== 'd') ctx.watcher.unwatchUnder(dir);
  }

  /** The paths events named since the last refresh, parents first. */
  async visitDirty(): Promise<void> {
    const { entries, watcher } = this.ctx;
    for (const rel of watcher.takeDirty()) {
      await this.slice();
      const parent = path.posix.dirname(rel);
      // Under a directory the index does not cover (or no longer has): that directory's own visit covers it.
      if (parent !== '.' && entries.get(parent)?.k !== 'd') continue;
      const prev = entries.get(rel);
      const next = this.visit(rel, true);
      if (!next) {
        if (prev) this.removeUnder(rel, true);
        continue;
      }
      if (prev?.k === 'd' && next.k !== 'd') this.removeUnder(rel, false);
      // A directory that is new, or another one under the same name (moved in, or made again): all of it is looked at.
      if (next.k === 'd' && (prev?.k !== 'd' || prev.ino !== next.ino || watcher.watchedIno(rel) !== next.ino)) {
        if (prev?.k === 'd') watcher.unwatchUnder(rel);
        watcher.watchDir(rel, next.ino);
        const seen = new Set<string>([rel]);
        await this.walkDir(rel, seen);
        for (const [r, e] of entries) if (r.startsWith(`${rel}/`) && !seen.has(r)) this.drop(r, e);
      }
    }
  }

  private async slice(): Promise<void> {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    await nextTurn();
    this.sliceStart = performance.now();
  }

  private async walkDir(rel: string, seen: Set<string>): Promise<void> {
    let names: Dirent[];
    try {
      names = readdirSync(rel ? path.join(this.ctx.root, rel) : this.ctx.root, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of names) {
      await this.slice();
      const child = rel ? `${rel}/${d.name}` : d.name;
      const e = this.visit(child);
      if (!e) continue;
      seen.add(child);
      if (e.k === 'd') {
        // Watched before it is read, so nothing made in it meanwhile goes unheard.
        this.ctx.watcher.watchDir(child, e.ino);
        await this.walkDir(child, seen);
      }
    }
  }

  /** `rel` is gone: its entry is removed, and its removal is a change. */
  private drop(rel: string, before: IndexEntry): void {
    this.changes.push({ rel, before });
    this.ctx.entries.delete(rel);
    this.touched.add(rel);
  }

  /** `rel` (with `self`) and everything under it are gone. */
  private removeUnder(rel: string, self: boolean): void {
    for (const [r, e] of this.ctx.entries) if ((self && r === rel) || r.startsWith(`${rel}/`)) this.drop(r, e);
    this.ctx.watcher.unwatchUnder(rel);
  }

  /**
   * Looks at one path: its entry now (null: absent, or not covered); a change is recorded if its content changed.
   * `named`: an event named it, so a file or link is read again even if its stat is the same (two changes within
   * one tick of the file clock, of the same size, leave the same stat).
   */
  private visit(rel: string, named = false): IndexEntry | null {
    const { ctx } = this;
    const abs = path.join(ctx.root, rel);
    const name = path.basename(rel);
    if (UNTRACKED_NAMES.has(name) || TEMP_NAME.test(name) || ctx.skip(abs)) return null;
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (!st) return null;
    let k: IndexEntry['k'] | null = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : st.isFile() ? 'f' : null;
    if (!k) return null;
    if (ctx.sensitive(rel)) k = 's';
    const prev = ctx.entries.get(rel);
    const reread = prev?.r || (named && (k === 'f' || k === 'l'));
    if (prev && prev.k === k && sameStat(prev, st) && !reread) return prev;
    const next = this.entryFor(abs, k, st, prev);
    ctx.entries.set(rel, next);
    this.touched.add(rel);
    const expected = ctx.expected.get(rel)?.content;
    if (expected !== undefined && expected === (next.k === 'd' ? 'dir' : next.hash)) {
      ctx.expected.delete(rel);
      return next;
    }
    if (!prev || contentChanged(prev, next)) this.changes.push({ rel, before: prev, after: next });
    return next;
  }

  private entryFor(abs: string, k: IndexEntry['k'], st: Stats, prev: IndexEntry | undefined): IndexEntry {
    const base = {
      k,
      size: st.size,
      mtime: st.mtimeMs,
      ctime: st.ctimeMs,
      ino: st.ino,
      mode: st.mode,
      ...((k === 'f' || k === 'l') && Date.now() - Math.max(st.ctimeMs, st.mtimeMs) < (this.ctx.racyMs ?? RACY_MS)
        ? { r: true as const }
        : {}),
    };
    if (k === 'l') {
      try {
        return { ...base, target: readlinkSync(abs) };
      } catch {
        return { ...base, target: '' };
      }
    }
    if (k !== 'f') return base;
    if (st.size > HASH_LIMIT) return { ...base, hash: null, kept: false };
    const data = readNoFollow(abs);
    this.hashed++;
    if (!data) return { ...base, hash: null, kept: false };
    const hash = sha256(data);
    // The same content as before (a touch, a chmod): already kept.
    if (prev?.k === 'f' && prev.hash === hash && prev.kept) return { ...base, hash, kept: true };
    return { ...base, hash, kept: this.ctx.keep(hash, data) };
  }
}

function sameStat(prev: IndexEntry, st: Stats): boolean {
  // A directory's times change with its entries, which are looked at on their own.
  if (prev.k === 'd') return prev.ino === st.ino && prev.mode === st.mode;
  return (
    prev.size === st.size &&
    prev.mtime === st.mtimeMs &&
    prev.ctime === st.ctimeMs &&
    prev.ino === st.ino &&
    prev.mode === st.mode
  );
}

/** Whether what a path holds changed (not just its times). */
function contentChanged(prev: IndexEntry, next: IndexEntry): boolean {
  if (prev.k !== next.k) return true;
  switch (next.k) {
    case 'f':
      if (prev.hash === null || next.hash === null) return true;
      return prev.hash !== next.hash || (prev.mode & 0o7777) !== (next.mode & 0o7777);
    case 'l':
      return prev.target !== next.target;
    case 'd':
      return false;
    case 's':
      return true;
  }
}
