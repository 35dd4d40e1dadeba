/**
 * The workspace server's side of checkpoints: a call that carries `_meta["klea/checkpoint"]` `{task, step}` and can
 * change the project journals, in its task's journal, what it changed, before and after, so the task's changes can
 * be undone (rewind-plan.ts, rewind-apply.ts).
 *
 * - write_file / edit_file: the target's content before (kept in the store) and its hash after, and the directories
 *   the write creates; the line is written before the file changes, so a crash between the two leaves a line whose
 *   undo finds the file already as it should be. No walk.
 * - run_command: the project's stat index (stat-index.ts) is brought up to date before the command (what changed
 *   since is the user's own doing, taken in without a line), and after it; what changed in between is the
 *   command's. Commands that overlap share one window: the index is brought up to date when the first starts, and
 *   each one's line holds what changed up to its end that no earlier line holds. What a command says it changed
 *   (`changed`, the evidence its step is judged by) is its line and what the lines of others took while it ran.
 *
 * A call answered from the idempotency store never reaches the tool, so it journals nothing; one that runs again
 * journals under the same key, and its lines are read as one (store.ts).
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CHECKPOINT_META_KEY, IDEMPOTENCY_META_KEY } from '../../common/workspace-protocol';
import { relProblem } from './project-paths';
import { StoreSpace } from './space';
import { StatIndex, type IndexChange, type IndexEntry } from './stat-index';
import {
  ensureLayout,
  hasBlob,
  journalFile,
  projectLayout,
  readTaskMeta,
  taskDir,
  taskMetaFile,
  type JournalLine,
  type State,
  type StoreLayout,
} from './store';

export interface CheckpointRecorderOptions {
  /** The store's directory (Klea's data directory's `checkpoints/`). */
  storeDir: string;
  /** The project's real path (resolved when first needed). */
  root: () => Promise<string>;
  /** The store's bound, in bytes. */
  maxBytes: number;
  /** Whether a path relative to the project is sensitive (never read, never stored). */
  sensitive(rel: string): boolean;
  /** Whether a real path is Klea's own state (never read, never stored). */
  ownState(real: string): boolean;
  /** Paths that belong to the command sandbox, not the project (its placeholders for protected files). */
  transient?(real: string): boolean;
  /** Keep the project watched between commands (default true). */
  watch?: boolean;
  /** See StatIndexOptions.racyMs (tests). */
  racyMs?: number;
  /** Told the time each checkpointed call spent on its checkpoint, in ms (the benchmark). */
  onCost?: (tool: string, ms: number) => void;
}

/** What a call asks to be checkpointed as. */
export interface CallCheckpoint {
  task: string;
  step: string;
  /** The call's idempotency key (a random one when it has none). */
  key: string;
  tool: string;
}

/** A write or edit about to change one file. */
export interface WriteChange {
  real: string;
  before: Buffer | null;
  beforeMode?: number;
  hashBefore: string | null;
  hashAfter: string;
}

export interface CheckpointRecorder {
  /** The checkpoint a call asks for, or null (no `klea/checkpoint`, or a malformed one). */
  forCall(tool: string, meta: unknown): CallCheckpoint | null;
  /** Journals a write's change, then makes it. */
  write<T>(cp: CallCheckpoint, change: WriteChange, apply: () => Promise<T>): Promise<T>;
  /**
   * Runs a command between two looks at the project and journals what changed. A failure to bring the index up to
   * date before the command is thrown (the command does not run); one after it is returned as `problem` (the step
   * is journalled as not checkpointed). `changed` is the project paths the command created, changed or deleted,
   * a folder's with a "/" after it.
   */
  command<T>(
    cp: CallCheckpoint,
    run: () => Promise<T>
  ): Promise<{ value: T; problem: string | null; changed: string[] }>;
  /** The project's stat index (tests and the benchmark). */
  statIndex(): Promise<StatIndex>;

  close(): void;
}

const MAX_ID = 512;

/** The project could not be looked at before a command: the command is not run. */
export class CheckpointUnavailable extends Error {
  override readonly name = 'CheckpointUnavailable';
}

interface Project {
  root: string;
  layout: StoreLayout;
  index: StatIndex;
  space: StoreSpace;
}

export function createCheckpointRecorder(opts: CheckpointRecorderOptions): CheckpointRecorder {
  let opened: Promise<Project> | undefined;
  /** Task directories known to exist, and whether their journal was pruned. */
  const tasks = new Map<string, { pruned: boolean }>();
  /** Commands running now, and the look at the project the first of them took before it started. */
  let running = 0;
  let starting: Promise<unknown> = Promise.resolve();
  /** For each command running now, what other commands' looks took while it ran (`changed` is credited with it). */
  const alongside = new Set<Set<string>>();
  let warming = false;

  /**
   * The first checkpointed write starts the index's first look at the project (hashing and keeping it all), in the
   * background, so a command later in the task does not wait for all of it. Only while no command runs: a look taken
   * while one runs would take its changes for the user's.
   */
  const warmUp = (p: Project) => {
    if (warming || running > 0) return;
    warming = true;
    void p.index.refresh().catch(() => undefined);
  };

  const project = () =>
    (opened ??= (async () => {
      const root = await opts.root();
      const layout = projectLayout(opts.storeDir, root);
      ensureLayout(layout, root);
      // The index's content is kept whatever else is pruned (the closure runs only once the index exists).
      const space: StoreSpace = new StoreSpace(layout, opts.maxBytes, () => index.keptHashes());
      const index: StatIndex = new StatIndex({
        root,
        layout,
        skip: (abs) => opts.ownState(abs) || (opts.transient?.(abs) ?? false),
        sensitive: opts.sensitive,
        keep: (hash, data) => space.keepForIndex(hash, data),
        has: (hash) => hasBlob(layout, hash),
        watch: opts.watch,
        racyMs: opts.racyMs,
      });
      return { root, layout, index, space };
    })());

  /** The task's directory in the store, made (and the task recorded) on its first line. */
  function taskFor(p: Project, task: string): { dir: string; pruned: boolean } {
    const dir = taskDir(p.layout, task);
    let known = tasks.get(dir);
    if (!known) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const meta = readTaskMeta(dir);
      if (!meta)
        writeFileSync(taskMetaFile(dir), JSON.stringify({ task, created: Date.now() }) + '\n', { mode: 0o600 });
      known = { pruned: meta?.prunedAt !== undefined };
      tasks.set(dir, known);
    }
    return { dir, pruned: known.pruned };
  }

  function append(p: Project, cp: CallCheckpoint, line: Omit<JournalLine, 'v' | 'key' | 'step' | 'tool' | 'at'>): void {
    if (!line.files.length && !line.sensitive?.length && !line.tooLarge) return;
    const t = taskFor(p, cp.task);
    // A task whose journal was pruned while it ran: a rewind of it says it has expired, so its later lines are moot.
    if (t.pruned || readTaskMeta(t.dir)?.prunedAt !== undefined) {
      tasks.set(t.dir, { pruned: true });
      return;
    }
    const text = JSON.stringify({ v: 1, key: cp.key, step: cp.step, tool: cp.tool, at: Date.now(), ...line }) + '\n';
    appendFileSync(journalFile(t.dir), text, { mode: 0o600 });
    p.space.wrote(Buffer.byteLength(text), t.dir);
  }

  /** What an index entry held, as a journal states it. */
  function stateOf(p: Project, e: IndexEntry | undefined): State {
    if (!e) return { t: 'absent' };
    if (e.k === 'd') return { t: 'dir', mode: e.mode & 0o7777 };
    if (e.k === 'l' && e.target) return { t: 'link', target: e.target };
    const hash = e.k === 'f' ? (e.hash ?? null) : null;
    return { t: 'file', hash, mode: e.mode & 0o7777, kept: !!hash && !!e.kept && hasBlob(p.layout, hash) };
  }

  /** A command's changes as a journal line. */
  function lineOf(p: Project, changes: IndexChange[]): Omit<JournalLine, 'v' | 'key' | 'step' | 'tool' | 'at'> {
    const files: JournalLine['files'] = [];
    const sensitive: NonNullable<JournalLine['sensitive']> = [];
    let tooLarge = false;
    for (const c of changes) {
      if (c.before?.k === 's' || c.after?.k === 's') {
        sensitive.push({ p: c.rel, c: !c.before ? 'created' : !c.after ? 'deleted' : 'changed' });
        continue;
      }
      const b = stateOf(p, c.before);
      if (b.t === 'file' && !b.kept) tooLarge = true;
      files.push({ p: c.rel, b, a: stateOf(p, c.after) });
    }
    return { files, ...(sensitive.length ? { sensitive } : {}), ...(tooLarge ? { tooLarge } : {}) };
  }

  return {
    forCall(tool, meta) {
      if (!meta || typeof meta !== 'object') return null;
      const m = meta as Record<string, unknown>;
      const cp = m[CHECKPOINT_META_KEY] as { task?: unknown; step?: unknown } | undefined;
      if (!cp || typeof cp !== 'object') return null;
      const { task, step } = cp;
      if (typeof task !== 'string' || typeof step !== 'string' || !task || !step) return null;
      if (task.length > MAX_ID || step.length > MAX_ID) return null;
      const key = m[IDEMPOTENCY_META_KEY];
      return {
        task,
        step,
        tool,
        key: typeof key === 'string' && key && key.length <= MAX_ID ? key : `once-${randomBytes(12).toString('hex')}`,
      };
    },

    async write(cp, change, apply) {
      const t0 = performance.now();
      const p = await project();
      const rel = path.relative(p.root, change.real);
      // Outside the project (a granted path), or where checkpoints do not reach (.git/, node_modules/): no line.
      if (rel.startsWith('..') || path.isAbsolute(rel) || relProblem(rel) || opts.ownState(change.real)) return apply();
      const { dir } = taskFor(p, cp.task);
      warmUp(p);
      if (opts.sensitive(rel)) {
        append(p, cp, { files: [], sensitive: [{ p: rel, c: change.before ? 'changed' : 'created' }] });
        return apply();
      }
      const mode = (change.beforeMode ?? 0o644) & 0o7777;
      let before: State = { t: 'absent' };
      let tooLarge = false;
      if (change.before && change.hashBefore) {
        const kept = p.space.keepForJournal(change.hashBefore, change.before, dir);
        before = { t: 'file', hash: change.hashBefore, mode, kept };
        tooLarge = !kept;
      }
      const made = missingDirs(p.root, rel);
      append(p, cp, {
        files: [
          ...made.map((d) => ({ p: d, b: { t: 'absent' as const }, a: { t: 'dir' as const, mode: 0o755 } })),
          { p: rel, b: before, a: { t: 'file', hash: change.hashAfter, mode } },
        ],
        ...(tooLarge ? { tooLarge } : {}),
      });
      // The index takes this content in as the write's, not as a command's change.
      for (const d of made) p.index.expect(d, 'dir');
      p.index.expect(rel, change.hashAfter);
      opts.onCost?.(cp.tool, performance.now() - t0);
      let ok = false;
      try {
        const out = await apply();
        ok = true;
        return out;
      } finally {
        for (const d of made) p.index.settle(d, 'dir', ok);
        p.index.settle(rel, change.hashAfter, ok);
      }
    },

    async command<T>(cp: CallCheckpoint, run: () => Promise<T>) {
      let t0 = performance.now();
      const p = await project().catch((err: unknown) => {
        throw new CheckpointUnavailable(err instanceof Error ? err.message : String(err));
      });
      warming = true;
      const first = running++ === 0;
      try {
        if (first) starting = p.index.refresh();
        // A command that overlaps the first starts once the first's look is taken, so none of its changes is
        // taken for the user's.
        await starting;
      } catch (err) {
        running--;
        throw new CheckpointUnavailable(err instanceof Error ? err.message : String(err));
      }
      let cost = performance.now() - t0;
      let value: T | undefined;
      let failed = false;
      let thrown: unknown;
      const seen = new Set<string>();
      alongside.add(seen);
      try {
        value = await run();
      } catch (err) {
        failed = true;
        thrown = err;
      }
      running--;
      t0 = performance.now();
      let problem: string | null = null;
      let changed: string[] = [];
      try {
        const changes = await p.index.refresh();
        // A folder made or removed is named with a "/" after it, so it is not taken for a file of that name.
        changed = changes.map((c) => ((c.after ?? c.before)?.k === 'd' ? `${c.rel}/` : c.rel));
        append(p, cp, lineOf(p, changes));
        // The journal holds each change once, in the line of the first command to end after it. Which of the
        // commands that overlapped made it, nothing tells: each is said to have changed what changed while it ran
        // (two steps at once, one removing a folder while the other's search walked it: the search ended first,
        // its look took the folder, and the remove was said to have changed nothing).
        for (const other of alongside) if (other !== seen) for (const c of changed) other.add(c);
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
        try {
          append(p, cp, { files: [], tooLarge: true });
        } catch {
          // The store cannot be written at all: the problem says so.
        }
      }
      // Only once its own look is taken: a look another command took meanwhile is credited to it too.
      alongside.delete(seen);
      cost += performance.now() - t0;
      opts.onCost?.(cp.tool, cost);
      if (failed) throw thrown;
      for (const c of changed) seen.delete(c);
      return { value: value as T, problem, changed: [...changed, ...seen] };
    },

    statIndex: async () => (await project()).index,

    close() {
      void opened?.then((p) => p.index.close()).catch(() => undefined);
    },
  };
}

/** The directories above `rel` that do not exist yet (a write creates them), outer first. */
function missingDirs(root: string, rel: string): string[] {
  const out: string[] = [];
  for (let dir = path.posix.dirname(rel); dir !== '.'; dir = path.posix.dirname(dir)) {
    if (lstatSync(path.join(root, dir), { throwIfNoEntry: false })) break;
    out.unshift(dir);
  }
  return out;
}
