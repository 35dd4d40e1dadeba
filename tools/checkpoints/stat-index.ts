/**
 * A project's stat index: every path checkpoints cover (path → kind, size, mtime, ctime, inode, mode, and for a file
 * its content hash, whose content the store keeps while there is room), so what a command changed is found by
 * comparing the project with it after the command, and its content before is already in the store.
 *
 * Keeping it current is the cost a checkpointed command pays, so it is kept current cheaply, in three parts:
 *
 * - stat-index-watcher.ts: every directory it covers is watched (inotify), from before it is read, and stays watched
 *   between commands: a path an event names is marked dirty, and bringing the index up to date looks at those paths
 *   only (a stat, and a hash where the stat changed), not at the whole project. Before it trusts what it has heard,
 *   it makes sure it has heard everything: it touches a file of its own in a watched directory of the store and
 *   waits for that event. One inotify queue delivers events in order, so every change made before (the command's, a
 *   rewind's) has been delivered by then.
 * - stat-index-walk.ts: the look itself. It walks the whole project (a stat of each path; a hash only where the stat
 *   changed) when it cannot trust the events: when it starts (the index read from disk may be stale), when a watch
 *   could not be set (the system's inotify limit) or reported an error, when that barrier event does not come, and
 *   when so many events came that the kernel's queue may have overflowed (inotify then drops events silently).
 * - stat-index-file.ts: the index is kept on disk (a snapshot and a log of changed entries), so a restarted server
 *   stats the project rather than hashing it again.
 *
 * Sensitive paths are in it by their stat alone: never read. Klea's own state, git's directory, installed
 * dependencies, temporary files of atomic writes and the command sandbox's placeholders are left out
 * (project-paths.ts).
 */
import { StatIndexFile, type IndexEntry } from './stat-index-file';
import { IndexPass, type IndexChange } from './stat-index-walk';
import { StatIndexWatcher } from './stat-index-watcher';
import type { StoreLayout } from './store';

export type { IndexEntry } from './stat-index-file';
export type { IndexChange } from './stat-index-walk';

export interface StatIndexOptions {
  /** The project's real path. */
  root: string;
  layout: StoreLayout;
  /** Paths left out besides the untracked names: Klea's own state, the sandbox's placeholders. */
  skip(abs: string): boolean;
  sensitive(rel: string): boolean;
  /** Keeps a file's content in the store if there is room; whether it is kept. */
  keep(hash: string, data: Buffer): boolean;
  /** Whether the store holds a content. */
  has(hash: string): boolean;
  /** Watch the project between refreshes (default true); off, every refresh walks the whole project. */
  watch?: boolean;
  /** How recently changed a file is racy (IndexEntry.r), in ms; tests shorten it. */
  racyMs?: number;
}

/** How the last refresh found the changes: for tests and the benchmark. */
export type RefreshMode = 'events' | 'walk';

export class StatIndex {
  private readonly entries = new Map<string, IndexEntry>();
  private readonly file: StatIndexFile;
  private readonly watcher: StatIndexWatcher;
  private loaded = false;
  private closed = false;
  private chain: Promise<unknown> = Promise.resolve();
  /**
   * Content a write of the server's own is about to leave at a path (journalled by that write, not by a command),
   * and when the write was done.
   */
  private readonly expected = new Map<string, { content: string; doneAt: number | null }>();
  lastMode: RefreshMode | null = null;
  /** Walks of the whole project, and files read to hash them, since it started (tests and the benchmark). */
  walks = 0;
  hashed = 0;

  constructor(private readonly opts: StatIndexOptions) {
    this.file = new StatIndexFile(opts.layout, opts.root);
    this.watcher = new StatIndexWatcher(opts.root, opts.layout.barrier, opts.watch !== false);
  }

  /** How many paths it holds. */
  get size(): number {
    return this.entries.size;
  }

  /** The content hashes it needs kept (the store's garbage collection keeps them). */
  keptHashes(): Set<string> {
    const out = new Set<string>();
    for (const e of this.entries.values()) if (e.k === 'f' && e.kept && e.hash) out.add(e.hash);
    return out;
  }

  /**
   * Says that a write of the server's own is about to leave `content` (a hash, or 'dir' for a directory it creates)
   * at `rel`: when the index next sees exactly that there, it takes it in without calling it a change.
   */
  expect(rel: string, content: string): void {
    this.expected.set(rel, { content, doneAt: null });
  }

  /** The write is done (`ok`) or failed: a refresh after this one that has not seen it drops the expectation. */
  settle(rel: string, content: string, ok: boolean): void {
    const e = this.expected.get(rel);
    if (e?.content !== content) return;
    if (ok) e.doneAt = performance.now();
    else this.expected.delete(rel);
  }

  /** Brings the index up to date with the project; resolves with what changed since it last was. */
  refresh(): Promise<IndexChange[]> {
    const run = this.chain.then(() => this.refreshNow());
    this.chain = run.catch(() => undefined);
    return run;
  }

  close(): void {
    this.closed = true;
    this.watcher.close();
  }

  private async refreshNow(): Promise<IndexChange[]> {
    if (this.closed) throw new Error('the checkpoint index is closed');
    if (!this.loaded) {
      // What is read from disk is checked by a walk before it is trusted.
      this.loaded = true;
      this.watcher.start();
      this.file.load(this.entries);
    }
    const started = performance.now();
    const heard = await this.watcher.barrier();
    for (const rel of this.file.takeRestored()) this.watcher.markDirty(rel);
    const { root, skip, sensitive, keep, racyMs } = this.opts;
    const { entries, watcher, expected } = this;
    const pass = new IndexPass({ root, entries, watcher, expected, skip, sensitive, keep, racyMs });
    try {
      if (!heard || watcher.needsWalk()) {
        this.lastMode = 'walk';
        this.walks++;
        await pass.walkAll();
      } else {
        this.lastMode = 'events';
        await pass.visitDirty();
      }
    } finally {
      this.hashed += pass.hashed;
    }
    this.file.persist(this.entries, pass.touched);
    // A write done before this refresh began was seen by it (its events came before the barrier's): an expectation
    // still left is for content that never showed (it was changed again at once), and must not absorb a later change.
    for (const [rel, e] of this.expected) if (e.doneAt !== null && e.doneAt < started) this.expected.delete(rel);
    return pass.changes;
  }
}
