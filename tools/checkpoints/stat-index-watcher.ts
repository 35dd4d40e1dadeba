/**
 * What the stat index hears between refreshes: every directory it covers is watched (inotify), from before it is
 * read, and a path an event names is marked dirty, so a refresh looks at those paths only.
 *
 * Before the index trusts what it has heard, it makes sure it has heard everything (`barrier`): it touches a file of
 * its own in a watched directory of the store and waits for that event. One inotify queue delivers events in order,
 * so every change made before (a command's, a rewind's) has been delivered by then.
 *
 * The events cannot be trusted (`needsWalk`: the index walks the whole project instead) until a walk, after a watch
 * reported an error, when so many events came that the kernel's queue may have overflowed (inotify then drops events
 * silently), or once a watch could not be set (the system's inotify limit): from then on nothing is watched.
 */
import { readFileSync, rmSync, utimesSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

const BARRIER_TIMEOUT_MS = 2000;

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

export class StatIndexWatcher {
  /** Watched directories, by path relative to the root ('' is the root). */
  private readonly watchers = new Map<string, { w: FSWatcher; ino: number }>();
  private dirty = new Set<string>();
  private events = 0;
  private readonly limit = eventLimit();
  private watching: boolean;
  /** The events heard since the last walk cover every change (a walk is needed otherwise). */
  private trusted = false;
  private barrierWatcher: FSWatcher | null = null;
  private waiters: Array<() => void> = [];
  private closed = false;
  /** This index's own file in the store's barrier directory. */
  private readonly tick: string;

  constructor(
    /** The project's real path. */
    private readonly root: string,
    /** The store's barrier directory. */
    private readonly barrierDir: string,
    enabled: boolean
  ) {
    this.watching = enabled;
    this.tick = path.join(barrierDir, `tick-${process.pid}-${randomBytes(4).toString('hex')}`);
  }

  /** Starts listening for the barrier; nothing is trusted until the first walk. */
  start(): void {
    this.trusted = false;
    if (!this.watching) return;
    const tick = this.tick;
    try {
      writeFileSync(tick, '', { flag: 'a', mode: 0o600 });
      this.barrierWatcher = watch(this.barrierDir, { persistent: false }, (_event, name) => {
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
  barrier(): Promise<boolean> {
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

  /** Marks a path to be looked at again at the next refresh. */
  markDirty(rel: string): void {
    this.dirty.add(rel);
  }

  /** Whether the next refresh must walk the whole project rather than look at the dirty paths. */
  needsWalk(): boolean {
    return !this.trusted || this.events >= this.limit || this.dirty.has('');
  }

  /** A walk begins: it looks at everything, so what was heard so far is done with, and events count from here. */
  startWalk(): void {
    this.dirty = new Set();
    this.events = 0;
    this.trusted = this.watching;
  }

  /** The paths events named since the last refresh, parents first; events count from here. */
  takeDirty(): string[] {
    const dirty = [...this.dirty].sort((a, b) => a.length - b.length);
    this.dirty = new Set();
    this.events = 0;
    return dirty;
  }

  /** The inode of the directory watched at `rel`, if one is. */
  watchedIno(rel: string): number | undefined {
    return this.watchers.get(rel)?.ino;
  }

  /** The directories watched, by path relative to the root. */
  watchedDirs(): string[] {
    return [...this.watchers.keys()];
  }

  /** Watches a directory (`ino`: the one now at `rel`; a watch of an earlier one there is replaced). */
  watchDir(rel: string, ino: number): void {
    if (!this.watching) return;
    const had = this.watchers.get(rel);
    if (had?.ino === ino) return;
    had?.w.close();
    const abs = rel ? path.join(this.root, rel) : this.root;
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

  /** Stops watching `rel` and every directory under it. */
  unwatchUnder(rel: string): void {
    for (const [dir, { w }] of this.watchers)
      if (dir === rel || dir.startsWith(`${rel}/`)) {
        w.close();
        this.watchers.delete(dir);
      }
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

  private stopWatching(): void {
    this.watching = false;
    this.trusted = false;
    for (const { w } of this.watchers.values()) w.close();
    this.watchers.clear();
    this.barrierWatcher?.close();
    this.barrierWatcher = null;
  }
}
