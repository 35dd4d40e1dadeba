/**
 * The stat index on disk: a snapshot (`index.json`) and a log of the entries changed since (`index.log`, one
 * `[path, entry | null]` a line), so a restarted server stats the project rather than hashing it again. What is read
 * back is checked by a walk before it is trusted (stat-index.ts); a line cut by a crash is skipped, and the walk puts
 * it right.
 *
 * Also here: the paths a rewind wrote from another process (`restored.jsonl`), handed to the index to look at again.
 */
import { appendFileSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { relProblem } from './project-paths';
import { writeAtomicSync, type StoreLayout } from './store';

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

const isEntry = (e: unknown): e is IndexEntry =>
  !!e &&
  typeof e === 'object' &&
  ['f', 'l', 'd', 's'].includes((e as IndexEntry).k) &&
  typeof (e as IndexEntry).ino === 'number' &&
  typeof (e as IndexEntry).mtime === 'number';

export class StatIndexFile {
  /** Lines in the log since the last snapshot. */
  private logLines = 0;

  constructor(
    private readonly layout: StoreLayout,
    /** The project's real path: a snapshot of another project's is not read. */
    private readonly root: string
  ) {}

  /** Reads the snapshot, then the log, into `entries`. */
  load(entries: Map<string, IndexEntry>): void {
    try {
      const snap = JSON.parse(readFileSync(this.layout.index, 'utf8')) as {
        v?: number;
        root?: string;
        entries?: Array<[string, unknown]>;
      };
      if (snap.v === 1 && snap.root === this.root && Array.isArray(snap.entries))
        for (const [rel, e] of snap.entries) if (typeof rel === 'string' && isEntry(e)) entries.set(rel, e);
    } catch {
      // No snapshot yet (a small project's index may be all in the log).
    }
    try {
      for (const raw of readFileSync(this.layout.indexLog, 'utf8').split('\n')) {
        if (!raw) continue;
        this.logLines++;
        try {
          const [rel, e] = JSON.parse(raw) as [string, unknown];
          if (typeof rel !== 'string') continue;
          if (e === null) entries.delete(rel);
          else if (isEntry(e)) entries.set(rel, e);
        } catch {
          // A line cut by a crash: the walk that follows puts it right.
        }
      }
    } catch {
      // No log yet.
    }
  }

  /** Writes the `touched` paths' entries to the log, or a new snapshot when the log has grown long. */
  persist(entries: ReadonlyMap<string, IndexEntry>, touched: ReadonlySet<string>): void {
    if (!touched.size) return;
    if (this.logLines + touched.size > Math.max(2000, entries.size / 2)) {
      writeAtomicSync(
        this.layout.index,
        JSON.stringify({ v: 1, root: this.root, entries: [...entries] }),
        this.layout.tmp
      );
      rmSync(this.layout.indexLog, { force: true });
      this.logLines = 0;
      return;
    }
    const lines = [...touched].map((rel) => JSON.stringify([rel, entries.get(rel) ?? null])).join('\n') + '\n';
    appendFileSync(this.layout.indexLog, lines, { mode: 0o600 });
    this.logLines += touched.size;
  }

  /** Takes the paths a rewind wrote (recorded by applyRewind in another process), each once. */
  takeRestored(): string[] {
    const file = this.layout.restored;
    const taken = `${file}.${process.pid}.taken`;
    try {
      renameSync(file, taken);
    } catch {
      return [];
    }
    const out: string[] = [];
    try {
      for (const raw of readFileSync(taken, 'utf8').split('\n')) {
        try {
          const paths = (JSON.parse(raw) as { paths?: unknown }).paths;
          if (Array.isArray(paths)) for (const p of paths) if (typeof p === 'string' && !relProblem(p)) out.push(p);
        } catch {
          // A line cut by a crash.
        }
      }
    } finally {
      rmSync(taken, { force: true });
    }
    return out;
  }
}
