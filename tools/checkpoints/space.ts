/**
 * The store's size bound (`tools.checkpoints.max_mb`): what it holds is counted as it is written, and when a
 * write would pass the bound, room is made: first content nothing needs any more, then the oldest tasks' journals
 * (the task stays known, marked pruned, so a rewind can say its checkpoints have expired) with the content only
 * they needed. The stat index's content is kept while it is the project's current content; it is stored only
 * where there is room, never by pruning a journal.
 */
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  hasBlob,
  journalFile,
  putBlob,
  readJournal,
  readRewinds,
  readTaskMeta,
  taskMetaFile,
  type StoreLayout,
} from './store';

const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

const list = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

/** The content hashes a task's journal and its unfinished rewinds need to restore. */
function neededBy(dir: string): Set<string> {
  const out = new Set<string>();
  for (const line of readJournal(dir))
    for (const f of line.files) if (f.b.t === 'file' && f.b.hash && f.b.kept) out.add(f.b.hash);
  for (const r of readRewinds(dir))
    if (r.state === 'planned')
      for (const a of r.actions) if (a.target.t === 'file' && a.target.hash) out.add(a.target.hash);
  return out;
}

export class StoreSpace {
  private used = 0;

  constructor(
    private readonly layout: StoreLayout,
    readonly maxBytes: number,
    /** The hashes the stat index needs kept. */
    private readonly indexNeeds: () => Set<string>
  ) {
    this.used = this.measure();
  }

  get usedBytes(): number {
    return this.used;
  }

  /** What the store holds now: its blobs and journals. */
  private measure(): number {
    let total = 0;
    for (const sub of list(this.layout.blobs))
      for (const name of list(path.join(this.layout.blobs, sub)))
        total += sizeOf(path.join(this.layout.blobs, sub, name));
    for (const t of list(this.layout.tasks)) total += sizeOf(journalFile(path.join(this.layout.tasks, t)));
    return total;
  }

  /** Keeps content for the stat index if it fits as things are (never by pruning); whether it is kept. */
  keepForIndex(hash: string, data: Buffer): boolean {
    if (hasBlob(this.layout, hash)) return true;
    if (this.used + data.length > this.maxBytes) return false;
    if (putBlob(this.layout, hash, data, true)) this.used += data.length;
    return true;
  }

  /**
   * Keeps content a journal line needs, making room (pruning tasks older than `taskDir`'s if it must); false when
   * it cannot fit even so.
   */
  keepForJournal(hash: string, data: Buffer, taskDir: string): boolean {
    if (hasBlob(this.layout, hash)) return true;
    if (data.length > this.maxBytes || !this.makeRoom(data.length, taskDir)) return false;
    if (putBlob(this.layout, hash, data, true)) this.used += data.length;
    return true;
  }

  /** Counts bytes written to a journal (a line), making room afterwards if the store has passed its bound. */
  wrote(bytes: number, taskDir: string): void {
    this.used += bytes;
    if (this.used > this.maxBytes) this.makeRoom(0, taskDir);
  }

  /**
   * Makes room for `bytes` more: content nothing needs goes first; then, oldest first, every task's journal but
   * `taskDir`'s, with the content only it needed. Whether there is room now.
   */
  makeRoom(bytes: number, taskDir: string): boolean {
    if (this.used + bytes <= this.maxBytes) return true;
    const tasks = list(this.layout.tasks)
      .map((name) => {
        const dir = path.join(this.layout.tasks, name);
        const meta = readTaskMeta(dir);
        return { dir, created: meta?.created ?? 0, pruned: meta?.prunedAt !== undefined, meta };
      })
      .sort((a, b) => a.created - b.created);
    const needs = new Map(tasks.filter((t) => !t.pruned).map((t) => [t.dir, neededBy(t.dir)]));
    this.sweep(needs);
    if (this.used + bytes <= this.maxBytes) return true;
    for (const t of tasks) {
      if (t.pruned || t.dir === taskDir) continue;
      this.prune(t.dir, t.meta);
      needs.delete(t.dir);
      this.sweep(needs);
      if (this.used + bytes <= this.maxBytes) return true;
    }
    return false;
  }

  /** Drops a task's journal and rewinds; the task stays known, marked pruned. */
  private prune(dir: string, meta: ReturnType<typeof readTaskMeta>): void {
    this.used -= sizeOf(journalFile(dir));
    writeFileSync(
      taskMetaFile(dir),
      JSON.stringify({ task: meta?.task ?? '', created: meta?.created ?? 0, prunedAt: Date.now() }) + '\n',
      { mode: 0o600 }
    );
    rmSync(journalFile(dir), { force: true });
    rmSync(path.join(dir, 'rewinds'), { recursive: true, force: true });
  }

  /** Removes every blob that neither the index nor any journal left needs. */
  private sweep(needs: Map<string, Set<string>>): void {
    const keep = this.indexNeeds();
    for (const set of needs.values()) for (const h of set) keep.add(h);
    for (const sub of list(this.layout.blobs))
      for (const name of list(path.join(this.layout.blobs, sub))) {
        if (keep.has(name)) continue;
        const file = path.join(this.layout.blobs, sub, name);
        const size = sizeOf(file);
        rmSync(file, { force: true });
        this.used -= size;
      }
  }
}
