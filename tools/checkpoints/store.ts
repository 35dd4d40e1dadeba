/**
 * The checkpoint store on disk: where a project's blobs, stat index and task journals live, and how they are read
 * and written. Everything here is outside the project (Klea's data directory, `checkpoints/`).
 *
 * ```
 * <storeDir>/p-<sha256(project real path)[:24]>/
 *   project.json                 {projectDir}
 *   blobs/<h[:2]>/<h>            file contents by sha256, written once, atomically (temp file + rename)
 *   tmp/                         temp files of blob writes
 *   index.json, index.log        the stat index (stat-index.ts): a snapshot, then one changed entry a line
 *   restored.jsonl               paths a rewind wrote, for the server to take into its index
 *   barrier/tick-<pid>-<random>  touched by a server's index to know every file event before it has been delivered
 *   tasks/<sha256(task)[:32]>/
 *     task.json                  {task, created, prunedAt?}: the task is known (prunedAt: its journal was pruned)
 *     journal.jsonl              one line per call that changed something (JournalLine)
 *     rewinds/<sha256(id)[:32]>.json      a rewind's plan, then its result (RewindRecord)
 *     rewinds/<sha256(id)[:32]>.progress  the paths that rewind has applied, one a line
 * ```
 *
 * A journal is read as untrusted input: every line is parsed with a schema, and a line that does not parse is
 * skipped; paths are checked again where they are used (project-paths.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  promises as fs,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

const HASH = z.string().regex(/^[0-9a-f]{64}$/);
const MODE = z.number().int().min(0).max(0o7777);

/** What a path held at one moment: nothing, a file (its content by hash), a symlink (its target) or a directory. */
export const StateSchema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('absent') }),
  z.object({
    t: z.literal('file'),
    /** Null: too large to hash. */
    hash: HASH.nullable(),
    mode: MODE,
    /** Its content is in the store (a before-state without it cannot be restored: the step is `tooLarge`). */
    kept: z.boolean().optional(),
  }),
  z.object({ t: z.literal('link'), target: z.string().min(1).max(4096) }),
  z.object({ t: z.literal('dir'), mode: MODE }),
]);
export type State = z.infer<typeof StateSchema>;

export type Change = 'created' | 'changed' | 'deleted';

const PATH = z.string().min(1).max(4096);

/** One call's changes: every path it created, changed or deleted, with what it held before and after. */
export const JournalLineSchema = z.object({
  v: z.literal(1),
  /** The call's idempotency key: a retry that ran again replaces its earlier line (see readJournal). */
  key: z.string().min(1).max(512),
  step: z.string().min(1).max(512),
  tool: z.string().max(64),
  at: z.number(),
  files: z.array(z.object({ p: PATH, b: StateSchema, a: StateSchema })).max(1_000_000),
  /** Sensitive paths the call changed: never read, never stored; a rewind leaves them as they are. */
  sensitive: z
    .array(z.object({ p: PATH, c: z.enum(['created', 'changed', 'deleted']) }))
    .max(1_000_000)
    .optional(),
  /** Some content the rewind would need could not be kept (over the store's size, or unreadable). */
  tooLarge: z.boolean().optional(),
});
export type JournalLine = z.infer<typeof JournalLineSchema>;
export type JournalFile = JournalLine['files'][number];

export const TaskMetaSchema = z.object({
  task: z.string(),
  created: z.number(),
  prunedAt: z.number().optional(),
});
export type TaskMeta = z.infer<typeof TaskMetaSchema>;

/** One action of a rewind, with the state it leaves the path in. */
export const PlannedActionSchema = z.object({
  path: PATH,
  action: z.enum(['restore', 'delete', 'recreate']),
  step: z.string(),
  target: StateSchema,
});
export type PlannedAction = z.infer<typeof PlannedActionSchema>;

/** A rewind as recorded before it changes anything, and its result once it is done. */
export const RewindRecordSchema = z.object({
  rewindId: z.string(),
  /** The journal lines it undoes (their keys): once it is done, no later rewind undoes them again. */
  lines: z.array(z.string()),
  actions: z.array(PlannedActionSchema),
  /** Directories to create (target `dir`, missing now), outer first, with their modes. */
  makeDirs: z.array(z.object({ path: PATH, mode: MODE })),
  /** Directories the undone changes created: removed if empty, inner first. */
  removeDirs: z.array(PATH),
  sensitive: z.array(z.string()),
  state: z.enum(['planned', 'done']),
  result: z
    .object({
      restored: z.array(
        z.object({ path: z.string(), action: z.enum(['restore', 'delete', 'recreate']), step: z.string() })
      ),
      sensitive: z.array(z.string()),
    })
    .optional(),
});
export type RewindRecord = z.infer<typeof RewindRecordSchema>;

export interface StoreLayout {
  /** The project's directory in the store. */
  dir: string;
  blobs: string;
  tmp: string;
  tasks: string;
  index: string;
  indexLog: string;
  restored: string;
  barrier: string;
}

/** The store's directory for one project (its real path), shared by every task on it. */
export function projectLayout(storeDir: string, projectReal: string): StoreLayout {
  const dir = path.join(path.resolve(storeDir), `p-${sha256(projectReal).slice(0, 24)}`);
  return {
    dir,
    blobs: path.join(dir, 'blobs'),
    tmp: path.join(dir, 'tmp'),
    tasks: path.join(dir, 'tasks'),
    index: path.join(dir, 'index.json'),
    indexLog: path.join(dir, 'index.log'),
    restored: path.join(dir, 'restored.jsonl'),
    barrier: path.join(dir, 'barrier'),
  };
}

/** Creates the project's directories in the store (once per process and project). */
export function ensureLayout(layout: StoreLayout, projectReal: string): void {
  for (const d of [layout.blobs, layout.tmp, layout.tasks, layout.barrier])
    mkdirSync(d, { recursive: true, mode: 0o700 });
  const info = path.join(layout.dir, 'project.json');
  try {
    statSync(info);
  } catch {
    writeFileSync(info, JSON.stringify({ projectDir: projectReal }) + '\n', { mode: 0o600 });
  }
}

export const taskDir = (layout: StoreLayout, task: string) =>
  path.join(layout.tasks, sha256(`task\n${task}`).slice(0, 32));
export const journalFile = (dir: string) => path.join(dir, 'journal.jsonl');
export const taskMetaFile = (dir: string) => path.join(dir, 'task.json');
export const rewindFiles = (dir: string, rewindId: string) => {
  const base = path.join(dir, 'rewinds', sha256(`rewind\n${rewindId}`).slice(0, 32));
  return { record: `${base}.json`, progress: `${base}.progress` };
};
export const blobFile = (layout: StoreLayout, hash: string) => path.join(layout.blobs, hash.slice(0, 2), hash);

/** Writes a file in one step (a temporary sibling, then rename). */
export function writeAtomicSync(file: string, data: string | Buffer, tmpDir = path.dirname(file)): void {
  const tmp = path.join(tmpDir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, data, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Stores content under its hash unless it is there already; true when it was written (false: it was there).
 * `checked`: the caller has just seen that it is not there.
 */
export function putBlob(layout: StoreLayout, hash: string, data: Buffer, checked = false): boolean {
  const file = blobFile(layout, hash);
  if (!checked && hasBlob(layout, hash)) return false;
  try {
    writeAtomicSync(file, data, layout.tmp);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // The first content in its fan-out directory.
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeAtomicSync(file, data, layout.tmp);
  }
  return true;
}

export function hasBlob(layout: StoreLayout, hash: string): boolean {
  try {
    return statSync(blobFile(layout, hash)).isFile();
  } catch {
    return false;
  }
}

/** A blob's content, checked against its hash (a blob changed on disk is refused, never restored). */
export async function readBlob(layout: StoreLayout, hash: string): Promise<Buffer> {
  if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error(`not a content hash: ${hash}`);
  const data = await fs.readFile(blobFile(layout, hash));
  if (sha256(data) !== hash) throw new Error(`the stored content ${hash.slice(0, 12)}… does not match its hash`);
  return data;
}

export function readTaskMeta(dir: string): TaskMeta | null {
  try {
    const parsed = TaskMetaSchema.safeParse(JSON.parse(readFileSync(taskMetaFile(dir), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * A task's journal, oldest first. Lines that do not parse are skipped. Lines of one idempotency key (a call retried
 * after it had already run once) become one, at the place of the latest: per path, the state before is the earliest
 * line's and the state after the latest's.
 */
export function readJournal(dir: string): JournalLine[] {
  let text: string;
  try {
    text = readFileSync(journalFile(dir), 'utf8');
  } catch {
    return [];
  }
  const byKey = new Map<string, JournalLine>();
  for (const raw of text.split('\n')) {
    if (!raw.trim()) continue;
    let parsed;
    try {
      parsed = JournalLineSchema.safeParse(JSON.parse(raw));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const line = parsed.data;
    const earlier = byKey.get(line.key);
    byKey.delete(line.key);
    byKey.set(line.key, earlier ? mergeLines(earlier, line) : line);
  }
  return [...byKey.values()];
}

function mergeLines(first: JournalLine, second: JournalLine): JournalLine {
  const files = new Map(first.files.map((f) => [f.p, f]));
  for (const f of second.files) {
    const had = files.get(f.p);
    files.set(f.p, had ? { p: f.p, b: had.b, a: f.a } : f);
  }
  const sensitive = new Map((first.sensitive ?? []).map((s) => [s.p, s]));
  for (const s of second.sensitive ?? []) sensitive.set(s.p, s);
  return {
    ...second,
    files: [...files.values()],
    ...(sensitive.size ? { sensitive: [...sensitive.values()] } : {}),
    ...(first.tooLarge || second.tooLarge ? { tooLarge: true } : {}),
  };
}

/** A rewind's record, or null. */
export function readRewind(file: string): RewindRecord | null {
  try {
    const parsed = RewindRecordSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Every rewind of a task (planned or done). */
export function readRewinds(dir: string): RewindRecord[] {
  const rewinds = path.join(dir, 'rewinds');
  let names: string[];
  try {
    names = readdirSync(rewinds);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.json'))
    .map((n) => readRewind(path.join(rewinds, n)))
    .filter((r): r is RewindRecord => r !== null);
}

/** The keys of the journal lines a finished rewind has undone. */
export function undoneLines(dir: string): Set<string> {
  return new Set(
    readRewinds(dir)
      .filter((r) => r.state === 'done')
      .flatMap((r) => r.lines)
  );
}
