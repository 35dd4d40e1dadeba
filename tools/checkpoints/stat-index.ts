/**
 * A project's stat index: every path checkpoints cover (path → kind, size, mtime, ctime, inode, mode, and for a file
 * its content hash, whose content the store keeps while there is room), so what a command changed is found by
 * comparing the project with it after the command, and its content before is already in the store.
 *
 * Keeping it current is the cost a checkpointed command pays, so it is kept current cheaply:
 *
 * - Every directory it covers is watched (inotify), from before it is read, and stays watched between commands:
 *   a path an event names is marked dirty, and bringing the index up to date looks at those paths only (a stat,
 *   and a hash where the stat changed), not at the whole project.
 * - Before it trusts what it has heard, it makes sure it has heard everything: it touches a file of its own in a
 *   watched directory of the store and waits for that event. One inotify queue delivers events in order, so every
 *   change made before (the command's, a rewind's) has been delivered by then.
 * - It walks the whole project (a stat of each path; a hash only where the stat changed) when it cannot trust the
 *   events: when it starts (the index read from disk may be stale), when a watch could not be set (the system's
 *   inotify limit) or reported an error, when that barrier event does not come, and when so many events came that
 *   the kernel's queue may have overflowed (inotify then drops events silently).
 *
 * The index is kept on disk (a snapshot and a log of changed entries), so a restarted server stats the project
 * rather than hashing it again. Sensitive paths are in it by their stat alone: never read. Klea's own state, git's
 * directory, installed dependencies, temporary files of atomic writes and the command sandbox's placeholders are
 * left out (project-paths.ts).
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  utimesSync,
  watch,
  writeFileSync,
  constants,
  type Dirent,
  type FSWatcher,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { HASH_LIMIT, relProblem, TEMP_NAME, UNTRACKED_NAMES } from './project-paths';
import { sha256, writeAtomicSync, type StoreLayout } from './store';

/** One path as the index knows it: f file, l symlink, d directory, s sensitive (stat only, never read). */
export interface IndexEntry {
  k: 'f' | 'l' | 'd' | 's';
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  /** st_mode, file type bits included. */
  mode: number;
  /** f: the content's sha256 (null: too large to hash, or unreadable). */
  hash?: string | null;
  /** f: the content is in the store. */
  kept?: boolean;
  /** l: the link's target. */
  target?: string;
  /**
   * Racy: changed so shortly before it was looked at that a change right after could leave the same stat (file
   * times tick coarsely), so its stat alone does not say it is unchanged: it is read again when next looked at.
   */
  r?: true;
}

/** A path whose content (or kind) changed since the index last saw it. */
export interface IndexChange {
  rel: string;
  before?: IndexEntry;
  after?: IndexEntry;
}

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

const BARRIER_TIMEOUT_MS = 2000;
/** A file changed this recently (ms) when it was looked at is racy (see IndexEntry.r); covers 1 s and 2 s clocks. */
const RACY_MS = 2500;
/** A walk gives the event loop a turn this often (ms), so the server keeps answering while it hashes a project. */
const SLICE_MS = 25;

/** Events after which the kernel's queue may have overflowed (it then drops events without telling anyone). */
function eventLimit(): number {
  try {
    const queued = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
    if (Number.isInteger(queued) && queued > 0) return Math.max(1, Math.min(8192, Math.floor(queued / 2)));
  } catch {
    // Not Linux, or /proc hidden: the kernel's default.
  }
  return 8192;
}

const isEntry = (e: unknown): e is IndexEntry =>
  !!e &&
  typeof e === 'object' &&
  ['f', 'l', 'd', 's'].includes((e as IndexEntry).k) &&
  typeof (e as IndexEntry).ino === 'number' &&
  typeof (e as IndexEntry).mtime === 'number';

export class StatIndex {
  private readonly entries = new Map<string, IndexEntry>();
  /** Watched directories, by path relative to the root ('' is the root). */
  private readonly watchers = new Map<string, { w: FSWatcher; ino: number }>();
  private dirty = new Set<string>();
  private events = 0;
  private readonly limit = eventLimit();
  private watching: boolean;
  /** The events heard since the last walk cover every change (a walk is needed otherwise). */
  private trusted = false;
  private loaded = false;
  private chain: Promise<unknown> = Promise.resolve();
  private barrierWatcher: FSWatcher | null = null;
  private waiters: Array<() => void> = [];
  /**
   * Content a write of the server's own is about to leave at a path (journalled by that write, not by a command),
   * and when the write was done.
   */
  private readonly expected = new Map<string, { content: string; doneAt: number | null }>();
  private logLines = 0;
  private sliceStart = 0;
  private closed = false;
  /** This index's own file in the store's barrier directory. */
  private readonly tick: string;
  lastMode: RefreshMode | null = null;
  /** Walks of the whole project, and files read to hash them, since it started (tests and the benchmark). */
  walks = 0;
  hashed = 0;

  constructor(private readonly opts: StatIndexOptions) {
    this.watching = opts.watch !== false;
    this.tick = path.join(opts.layout.barrier, `tick-${process.pid}-${randomBytes(4).toString('hex')}`);
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
    for (const { w } of this.watchers.values()) w.close();
    this.watchers.clear();
    this.barrierWatcher?.close();
    this.barrierWatcher = null;
    rmSync(this.tick, { force: true });
    for (const w of this.waiters) w();
    this.waiters = [];
  }

  private async refreshNow(): Promise<IndexChange[]> {
    if (this.closed) throw new Error('the checkpoint index is closed');
    if (!this.loaded) this.load();
    const started = performance.now();
    const heard = await this.barrier();
    this.takeRestored();
    const changes: IndexChange[] = [];
    const touched = new Set<string>();
    this.sliceStart = performance.now();
    if (!heard || !this.trusted || this.events >= this.limit || this.dirty.has('')) {
      this.lastMode = 'walk';
      this.walks++;
      await this.walkAll(changes, touched);
    } else {
      this.lastMode = 'events';
      await this.visitDirty(changes, touched);
    }
    this.persist(touched);
    // A write done before this refresh began was seen by it (its events came before the barrier's): an expectation
    // still left is for content that never showed (it was changed again at once), and must not absorb a later change.
    for (const [rel, e] of this.expected) if (e.doneAt !== null && e.doneAt < started) this.expected.delete(rel);
    return changes;
  }

  /** Reads the index kept on disk; it is checked by a walk before it is trusted. */
  private load(): void {
    this.loaded = true;
    this.trusted = false;
    if (this.watching) this.watchBarrier();
    try {
      const snap = JSON.parse(readFileSync(this.opts.layout.index, 'utf8')) as {
        v?: number;
        root?: string;
        entries?: Array<[string, unknown]>;
      };
      if (snap.v === 1 && snap.root === this.opts.root && Array.isArray(snap.entries))
        for (const [rel, e] of snap.entries) if (typeof rel === 'string' && isEntry(e)) this.entries.set(rel, e);
    } catch {
      // No snapshot yet (a small project's index may be all in the log).
    }
    try {
      for (const raw of readFileSync(this.opts.layout.indexLog, 'utf8').split('\n')) {
        if (!raw) continue;
        this.logLines++;
        try {
          const [rel, e] = JSON.parse(raw) as [string, unknown];
          if (typeof rel !== 'string') continue;
          if (e === null) this.entries.delete(rel);
          else if (isEntry(e)) this.entries.set(rel, e);
        } catch {
          // A line cut by a crash: the walk that follows puts it right.
        }
      }
    } catch {
      // No log yet.
    }
  }

  /** Writes what changed to the log, or a new snapshot when the log has grown long. */
  private persist(touched: Set<string>): void {
    if (!touched.size) return;
    if (this.logLines + touched.size > Math.max(2000, this.entries.size / 2)) {
      writeAtomicSync(
        this.opts.layout.index,
        JSON.stringify({ v: 1, root: this.opts.root, entries: [...this.entries] }),
        this.opts.layout.tmp
      );
      rmSync(this.opts.layout.indexLog, { force: true });
      this.logLines = 0;
      return;
    }
    const lines = [...touched].map((rel) => JSON.stringify([rel, this.entries.get(rel) ?? null])).join('\n') + '\n';
    appendFileSync(this.opts.layout.indexLog, lines, { mode: 0o600 });
    this.logLines += touched.size;
  }

  /** Paths a rewind wrote (recorded by applyRewind in another process): looked at again. */
  private takeRestored(): void {
    const file = this.opts.layout.restored;
    const taken = `${file}.${process.pid}.taken`;
    try {
      renameSync(file, taken);
    } catch {
      return;
    }
    try {
      for (const raw of readFileSync(taken, 'utf8').split('\n')) {
        try {
          const paths = (JSON.parse(raw) as { paths?: unknown }).paths;
          if (Array.isArray(paths))
            for (const p of paths) if (typeof p === 'string' && !relProblem(p)) this.dirty.add(p);
        } catch {
          // A line cut by a crash.
        }
      }
    } finally {
      rmSync(taken, { force: true });
    }
  }

  // ---- hearing every event ----

  private watchBarrier(): void {
    const tick = this.tick;
    try {
      writeFileSync(tick, '', { flag: 'a', mode: 0o600 });
      this.barrierWatcher = watch(this.opts.layout.barrier, { persistent: false }, (_event, name) => {
        // Another index's tick (a second server on this project) says nothing about this one's events.
        if (name !== path.basename(tick)) return;
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
      });
      this.barrierWatcher.on('error', () => {
        this.trusted = false;
      });
    } catch {
      this.stopWatching();
    }
  }

  /** Resolves true once every file event up to now has been delivered (false: they cannot be trusted). */
  private barrier(): Promise<boolean> {
    if (!this.watching || !this.barrierWatcher) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, BARRIER_TIMEOUT_MS);
      const done = () => {
        clearTimeout(timer);
        resolve(!this.closed);
      };
      this.waiters.push(done);
      const now = new Date();
      try {
        utimesSync(this.tick, now, now);
      } catch {
        done();
        this.trusted = false;
      }
    });
  }

  /** Watches a directory (`ino`: the one now at `rel`; a watch of an earlier one there is replaced). */
  private watchDir(rel: string, ino: number): void {
    if (!this.watching) return;
    const had = this.watchers.get(rel);
    if (had?.ino === ino) return;
    had?.w.close();
    const abs = rel ? path.join(this.opts.root, rel) : this.opts.root;
    try {
      const w = watch(abs, { persistent: false }, (_event, name) => {
        this.events++;
        // No name: something happened to the directory itself, or the kernel said no more: look at it all again.
        if (name === null || name === undefined) this.dirty.add(rel);
        else this.dirty.add(rel ? `${rel}/${name}` : String(name));
      });
      w.on('error', () => {
        this.trusted = false;
      });
      this.watchers.set(rel, { w, ino });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return;
      // The inotify limit (ENOSPC) or descriptors: walk every time, and leave the watches to the command sandbox.
      this.stopWatching();
    }
  }

  private stopWatching(): void {
    this.watching = false;
    this.trusted = false;
    for (const { w } of this.watchers.values()) w.close();
    this.watchers.clear();
    this.barrierWatcher?.close();
    this.barrierWatcher = null;
  }

  private unwatchUnder(rel: string): void {
    for (const [dir, { w }] of this.watchers)
      if (dir === rel || dir.startsWith(`${rel}/`)) {
        w.close();
        this.watchers.delete(dir);
      }
  }

  // ---- looking at paths ----

  private async slice(): Promise<void> {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    await nextTurn();
    this.sliceStart = performance.now();
  }

  /** The whole project, every path stat'ed; a file hashed only where its stat changed. */
  private async walkAll(changes: IndexChange[], touched: Set<string>): Promise<void> {
    // Events from here on belong to the next refresh.
    this.dirty = new Set();
    this.events = 0;
    this.trusted = this.watching;
    const seen = new Set<string>(['']);
    const top = lstatSync(this.opts.root, { throwIfNoEntry: false });
    if (!top?.isDirectory()) throw new Error(`the project ${this.opts.root} is not a directory`);
    this.watchDir('', top.ino);
    await this.walkDir('', seen, changes, touched);
    for (const [rel, e] of this.entries)
      if (!seen.has(rel)) {
        changes.push({ rel, before: e });
        this.entries.delete(rel);
        touched.add(rel);
      }
    for (const dir of [...this.watchers.keys()]) if (dir && this.entries.get(dir)?.k !== 'd') this.unwatchUnder(dir);
  }

  private async walkDir(rel: string, seen: Set<string>, changes: IndexChange[], touched: Set<string>): Promise<void> {
    let names: Dirent[];
    try {
      names = readdirSync(rel ? path.join(this.opts.root, rel) : this.opts.root, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of names) {
      await this.slice();
      const child = rel ? `${rel}/${d.name}` : d.name;
      const e = this.visit(child, changes, touched);
      if (!e) continue;
      seen.add(child);
      if (e.k === 'd') {
        // Watched before it is read, so nothing made in it meanwhile goes unheard.
        this.watchDir(child, e.ino);
        await this.walkDir(child, seen, changes, touched);
      }
    }
  }

  /** The paths events named since the last refresh, parents first. */
  private async visitDirty(changes: IndexChange[], touched: Set<string>): Promise<void> {
    const dirty = [...this.dirty].sort((a, b) => a.length - b.length);
    this.dirty = new Set();
    this.events = 0;
    for (const rel of dirty) {
      await this.slice();
      const parent = path.posix.dirname(rel);
      // Under a directory the index does not cover (or no longer has): that directory's own visit covers it.
      if (parent !== '.' && this.entries.get(parent)?.k !== 'd') continue;
      const prev = this.entries.get(rel);
      const next = this.visit(rel, changes, touched, true);
      if (!next) {
        if (prev) this.removeUnder(rel, changes, touched, true);
        continue;
      }
      if (prev?.k === 'd' && next.k !== 'd') this.removeUnder(rel, changes, touched, false);
      // A directory that is new, or another one under the same name (moved in, or made again): all of it is looked at.
      if (next.k === 'd' && (prev?.k !== 'd' || prev.ino !== next.ino || this.watchers.get(rel)?.ino !== next.ino)) {
        if (prev?.k === 'd') this.unwatchUnder(rel);
        this.watchDir(rel, next.ino);
        const seen = new Set<string>([rel]);
        await this.walkDir(rel, seen, changes, touched);
        for (const [r, e] of this.entries)
          if (r.startsWith(`${rel}/`) && !seen.has(r)) {
            changes.push({ rel: r, before: e });
            this.entries.delete(r);
            touched.add(r);
          }
      }
    }
  }

  /** `rel` (with `self`) and everything under it are gone. */
  private removeUnder(rel: string, changes: IndexChange[], touched: Set<string>, self: boolean): void {
    for (const [r, e] of this.entries)
      if ((self && r === rel) || r.startsWith(`${rel}/`)) {
        changes.push({ rel: r, before: e });
        this.entries.delete(r);
        touched.add(r);
      }
    this.unwatchUnder(rel);
  }

  /**
   * Looks at one path: its entry now (null: absent, or not covered); a change is pushed if its content changed.
   * `named`: an event named it, so a file or link is read again even if its stat is the same (two changes within
   * one tick of the file clock, of the same size, leave the same stat).
   */
  private visit(rel: string, changes: IndexChange[], touched: Set<string>, named = false): IndexEntry | null {
    const abs = path.join(this.opts.root, rel);
    const name = path.basename(rel);
    if (UNTRACKED_NAMES.has(name) || TEMP_NAME.test(name) || this.opts.skip(abs)) return null;
    const st = lstatSync(abs, { throwIfNoEntry: false });
    if (!st) return null;
    let k: IndexEntry['k'] | null = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : st.isFile() ? 'f' : null;
    if (!k) return null;
    if (this.opts.sensitive(rel)) k = 's';
    const prev = this.entries.get(rel);
    const reread = prev?.r || (named && (k === 'f' || k === 'l'));
    if (prev && prev.k === k && sameStat(prev, st) && !reread) return prev;
    const next = this.entryFor(abs, k, st, prev);
    this.entries.set(rel, next);
    touched.add(rel);
    const expected = this.expected.get(rel)?.content;
    if (expected !== undefined && expected === (next.k === 'd' ? 'dir' : next.hash)) {
      this.expected.delete(rel);
      return next;
    }
    if (!prev || contentChanged(prev, next)) changes.push({ rel, before: prev, after: next });
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
      ...((k === 'f' || k === 'l') && Date.now() - Math.max(st.ctimeMs, st.mtimeMs) < (this.opts.racyMs ?? RACY_MS)
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
    return { ...base, hash, kept: this.opts.keep(hash, data) };
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

/** Linux names an open descriptor's file at /proc/self/fd/N. */
const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');

/**
 * A file's bytes, opened without following a symlink, at any component: a directory above it swapped for a symlink
 * meanwhile (a command can do that) makes what was opened another file than `abs`, and nothing is read (null, as
 * for a file that cannot be read or is no longer a file).
 */
function readNoFollow(abs: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (PROC_FD && readlinkSync(`/proc/self/fd/${fd}`) !== abs) return null;
    if (!fstatSync(fd).isFile()) return null;
    return readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
