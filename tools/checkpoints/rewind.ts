/**
 * Undoing a task's steps from its journal (the worker's side of checkpoints).
 *
 * The journal lines of the chosen steps that no finished rewind has undone are undone together: per path, the
 * target is the content before the earliest of them that touched it, and the content expected there now is the
 * content after the latest. `planRewind` says what applying would do and where the project differs from what the
 * task left (a conflict: the user changed it since); it changes nothing. `applyRewind` records its plan under its
 * rewind id before it changes anything, records each path once it is done, and its result last, so a retry after a
 * crash at any point finishes the same restore without doing any path twice, and a call with a finished id answers
 * with the same result.
 *
 * The journal is untrusted input: a path that is absolute, climbs out (..), lies in Klea's own state, in what
 * checkpoints do not cover, or under a symlink is refused (a conflict, never touched); sensitive paths are left as
 * they are (and said so); content comes from the store only when it matches its hash.
 */
import { appendFileSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { inOwnState, SensitiveMatcher } from '../../common/path-guard';
import {
  chmodAt,
  currentState,
  makeParents,
  parentProblem,
  placeAt,
  relProblem,
  removeAt,
  removeDirIfEmpty,
  sameContent,
  sameState,
} from './project-paths';
import {
  ensureLayout,
  hasBlob,
  projectLayout,
  readBlob,
  readJournal,
  readRewind,
  readTaskMeta,
  rewindFiles,
  taskDir,
  undoneLines,
  writeAtomicSync,
  type PlannedAction,
  type RewindRecord,
  type State,
  type StoreLayout,
} from './store';

export interface CheckpointPlace {
  /** The store's directory (the workspace server's `--checkpoint-dir`). */
  storeDir: string;
  projectDir: string;
  /** Default: the default sensitive patterns. */
  sensitivePatterns?: string[];
  /** Klea's own state, as real paths: never touched. */
  ownState?: string[];
}

export interface RewindFile {
  /** Relative to the project. */
  path: string;
  action: 'restore' | 'delete' | 'recreate';
  /** The step whose change is undone (the earliest of them, for a path several steps changed). */
  step: string;
}

export interface RewindPlan {
  /** No journal for this task (pruned, or it never changed anything: tell them apart with `known`). */
  expired: boolean;
  /** The store has (or had) this task. */
  known: boolean;
  /** What applying would do, in path order. */
  files: RewindFile[];
  /** Where the current content is not what the task last left (the user changed it since), or a path refused. */
  conflicts: Array<{ path: string; reason: string }>;
  /** Sensitive paths the steps changed: left as they are. */
  sensitive: string[];
  /** Steps that could not be checkpointed (wholly or in part): what they changed is not restored. */
  tooLarge: string[];
}

export interface RewindResult {
  restored: RewindFile[];
  sensitive: string[];
}

/** Fault injection for tests: called after each path is put back, before that is recorded. */
export interface ApplyHooks {
  afterFile?: (file: RewindFile) => void | Promise<void>;
}

interface Place {
  root: string;
  layout: StoreLayout;
  dir: string;
  sensitive: SensitiveMatcher;
  ownState: string[];
}

function placeOf(place: CheckpointPlace, task: string): Place {
  const root = realpathSync(place.projectDir);
  const layout = projectLayout(place.storeDir, root);
  return {
    root,
    layout,
    dir: taskDir(layout, task),
    sensitive: new SensitiveMatcher(place.sensitivePatterns ?? DEFAULT_SENSITIVE_PATTERNS),
    ownState: (place.ownState ?? []).map((p) => path.resolve(p)),
  };
}

/** Why a journal's path may not be touched, or null. */
function refusal(p: Place, rel: string): string | null {
  const bad = relProblem(rel);
  if (bad) return `refused: ${bad}`;
  if (inOwnState(path.join(p.root, rel), p.ownState)) return "refused: Klea's own state";
  const parent = parentProblem(p.root, rel);
  return parent ? `refused: ${parent}` : null;
}

const depth = (rel: string) => rel.split('/').length;
const byPath = (x: { path: string }, y: { path: string }) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0);

function conflictReason(now: State | { t: 'other' }, expected: State): string {
  if (expected.t === 'file' && expected.hash === null) return 'too large to compare with what the task left';
  if (now.t === 'absent') return 'deleted since the task changed it';
  if (expected.t === 'absent') return 'created since the task deleted it';
  if (now.t !== expected.t) return `now a ${now.t === 'other' ? 'special file' : now.t}, not what the task left`;
  return 'changed since the task changed it';
}

interface Computed {
  plan: RewindPlan;
  lines: string[];
  actions: PlannedAction[];
  makeDirs: Array<{ path: string; mode: number }>;
  removeDirs: string[];
}

async function compute(p: Place, task: string, steps: readonly string[]): Promise<Computed> {
  const meta = readTaskMeta(p.dir);
  const journal = meta?.prunedAt === undefined ? readJournal(p.dir) : [];
  const empty: Computed = {
    plan: { expired: true, known: meta !== null, files: [], conflicts: [], sensitive: [], tooLarge: [] },
    lines: [],
    actions: [],
    makeDirs: [],
    removeDirs: [],
  };
  if (!journal.length) return empty;
  const undone = undoneLines(p.dir);
  const chosen = new Set(steps);
  const selected = journal.filter((l) => chosen.has(l.step) && !undone.has(l.key));
  const tooLarge: string[] = [];
  const sensitive = new Set<string>();
  const perPath = new Map<string, { step: string; target: State; expected: State }>();
  for (const line of selected) {
    if (line.tooLarge && !tooLarge.includes(line.step)) tooLarge.push(line.step);
    for (const s of line.sensitive ?? []) sensitive.add(s.p);
    for (const f of line.files) {
      const had = perPath.get(f.p);
      if (had) had.expected = f.a;
      else perPath.set(f.p, { step: line.step, target: f.b, expected: f.a });
    }
  }
  const actions: PlannedAction[] = [];
  const conflicts: RewindPlan['conflicts'] = [];
  const makeDirs: Computed['makeDirs'] = [];
  const removeDirs: string[] = [];
  for (const [rel, { step, target, expected }] of [...perPath].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const refused = refusal(p, rel);
    if (refused) {
      conflicts.push({ path: rel, reason: refused });
      continue;
    }
    // Security: a sensitive file is never read or written here, whatever the journal says.
    if (p.sensitive.match(rel)) {
      sensitive.add(rel);
      continue;
    }
    // Content the store could not keep (or no longer has) cannot be put back; the step is named instead.
    if (target.t === 'file' && (!target.kept || !target.hash || !hasBlob(p.layout, target.hash))) {
      if (!tooLarge.includes(step)) tooLarge.push(step);
      continue;
    }
    const now = await currentState(p.root, rel);
    const differs = !sameContent(now, expected) || (expected.t === 'file' && expected.hash === null);
    if (target.t === 'dir') {
      if (now.t === 'dir') continue;
      if (now.t !== 'absent') actions.push({ path: rel, action: 'delete', step, target: { t: 'absent' } });
      makeDirs.push({ path: rel, mode: target.mode });
      if (differs) conflicts.push({ path: rel, reason: conflictReason(now, expected) });
      continue;
    }
    if (target.t === 'absent' && now.t === 'dir') {
      // A directory the task made: removed once what is in it has gone, if nothing else is.
      removeDirs.push(rel);
      if (differs) conflicts.push({ path: rel, reason: conflictReason(now, expected) });
      continue;
    }
    if (sameState(now, target)) continue;
    const action = target.t === 'absent' ? 'delete' : now.t === 'absent' ? 'recreate' : 'restore';
    actions.push({ path: rel, action, step, target });
    if (differs) conflicts.push({ path: rel, reason: conflictReason(now, expected) });
  }
  actions.sort(byPath);
  return {
    plan: {
      expired: false,
      known: true,
      files: actions.map(({ path: p2, action, step }) => ({ path: p2, action, step })),
      conflicts,
      sensitive: [...sensitive].sort(),
      tooLarge,
    },
    lines: selected.map((l) => l.key),
    actions,
    makeDirs: makeDirs.sort((a, b) => depth(a.path) - depth(b.path)),
    removeDirs: removeDirs.sort((a, b) => depth(b) - depth(a)),
  };
}

/** What undoing `steps` of `task` would do, and where the project differs from what the task left. Changes nothing. */
export async function planRewind(place: CheckpointPlace, req: { task: string; steps: string[] }): Promise<RewindPlan> {
  return (await compute(placeOf(place, req.task), req.task, req.steps)).plan;
}

/**
 * Undoes `steps` of `task` (without checking conflicts: the caller has, or the user forced it). Idempotent by
 * `rewindId`: the plan is recorded first, each path as it is done, the result last; a retry finishes the same plan
 * and a finished one answers with its result.
 */
export async function applyRewind(
  place: CheckpointPlace,
  req: { task: string; steps: string[]; rewindId: string },
  hooks: ApplyHooks = {}
): Promise<RewindResult> {
  const p = placeOf(place, req.task);
  const files = rewindFiles(p.dir, req.rewindId);
  let rec = readRewind(files.record);
  if (rec?.state === 'done' && rec.result) return rec.result;
  if (!rec) {
    const c = await compute(p, req.task, req.steps);
    rec = {
      rewindId: req.rewindId,
      lines: c.lines,
      actions: c.actions,
      makeDirs: c.makeDirs,
      removeDirs: c.removeDirs,
      sensitive: c.plan.sensitive,
      state: 'planned',
    };
    if (c.plan.expired) {
      const result = { restored: [], sensitive: [] };
      return result;
    }
    ensureLayout(p.layout, p.root);
    mkdirSync(path.dirname(files.record), { recursive: true, mode: 0o700 });
    writeAtomicSync(files.record, JSON.stringify(rec));
  }
  const result = await carryOut(p, rec, files.progress, hooks);
  // The server's index takes these paths in as they are now, not as a later command's change.
  appendFileSync(
    p.layout.restored,
    JSON.stringify({
      rewindId: req.rewindId,
      paths: [...rec.actions.map((a) => a.path), ...rec.makeDirs.map((d) => d.path), ...rec.removeDirs],
    }) + '\n',
    { mode: 0o600 }
  );
  writeAtomicSync(files.record, JSON.stringify({ ...rec, state: 'done', result } satisfies RewindRecord));
  return result;
}

/** Paths a rewind has recorded as done (`+path`) or as not possible (`-path`). */
function readProgress(file: string): Map<string, boolean> {
  const out = new Map<string, boolean>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    try {
      const e = JSON.parse(raw) as { p?: unknown; ok?: unknown };
      if (typeof e.p === 'string') out.set(e.p, e.ok === true);
    } catch {
      // A line cut by a crash: that path is looked at again.
    }
  }
  return out;
}

async function carryOut(p: Place, rec: RewindRecord, progressFile: string, hooks: ApplyHooks): Promise<RewindResult> {
  const progress = readProgress(progressFile);
  const record = (rel: string, ok: boolean) => {
    appendFileSync(progressFile, JSON.stringify({ p: rel, ok }) + '\n', { mode: 0o600 });
    progress.set(rel, ok);
  };
  const modes = new Map(rec.makeDirs.map((d) => [d.path, d.mode]));
  const file = (a: PlannedAction): RewindFile => ({ path: a.path, action: a.action, step: a.step });

  const deletions = rec.actions.filter((a) => a.target.t === 'absent').sort((x, y) => depth(y.path) - depth(x.path));
  const puts = rec.actions.filter((a) => a.target.t !== 'absent').sort((x, y) => depth(x.path) - depth(y.path));

  const one = async (a: PlannedAction, work: () => Promise<void>) => {
    if (progress.has(a.path)) return;
    // Checked again here: the record is on disk, and the tree may have changed since it was planned.
    if (refusal(p, a.path) || p.sensitive.match(a.path)) {
      record(a.path, false);
      return;
    }
    const now = await currentState(p.root, a.path).catch(() => null);
    if (now && sameState(now, a.target)) {
      // Already as it should be (put back just before a crash, say).
      record(a.path, true);
      return;
    }
    try {
      await work();
    } catch {
      record(a.path, false);
      return;
    }
    await hooks.afterFile?.(file(a));
    record(a.path, true);
  };

  for (const a of deletions) await one(a, () => removeAt(p.root, a.path));
  for (const d of rec.removeDirs) if (!refusal(p, d)) await removeDirIfEmpty(p.root, d).catch(() => false);
  for (const d of rec.makeDirs)
    if (!refusal(p, d.path)) await makeParents(p.root, `${d.path}/-`, modes).catch(() => undefined);
  for (const a of puts)
    await one(a, async () => {
      await makeParents(p.root, a.path, modes);
      if (a.target.t === 'link') {
        await placeAt(p.root, a.path, { t: 'link', target: a.target.target });
        return;
      }
      if (a.target.t !== 'file' || !a.target.hash) throw new Error('nothing to put back');
      const now = await currentState(p.root, a.path);
      if (now.t === 'file' && now.hash === a.target.hash) {
        await chmodAt(p.root, a.path, a.target.mode);
        return;
      }
      await placeAt(p.root, a.path, { t: 'file', data: await readBlob(p.layout, a.target.hash), mode: a.target.mode });
    });
  return {
    restored: rec.actions
      .filter((a) => progress.get(a.path) === true)
      .map(file)
      .sort(byPath),
    sensitive: rec.sensitive,
  };
}

/**
 * What each step of a task changed, in the order the steps first changed something (undone steps included, marked
 * `undone`); directories are left out (the files in them say what changed).
 */
export async function taskChanges(
  place: CheckpointPlace,
  task: string
): Promise<
  Array<{
    step: string;
    files: Array<{ path: string; change: 'created' | 'changed' | 'deleted' }>;
    tooLarge?: boolean;
    undone?: boolean;
  }>
> {
  const p = placeOf(place, task);
  if (readTaskMeta(p.dir)?.prunedAt !== undefined) return [];
  const undone = undoneLines(p.dir);
  const steps = new Map<
    string,
    {
      paths: Map<string, { b: State; a: State }>;
      sensitive: Map<string, 'created' | 'changed' | 'deleted'>;
      tooLarge: boolean;
      lines: number;
      undone: number;
    }
  >();
  for (const line of readJournal(p.dir)) {
    let s = steps.get(line.step);
    if (!s)
      steps.set(line.step, (s = { paths: new Map(), sensitive: new Map(), tooLarge: false, lines: 0, undone: 0 }));
    s.lines++;
    if (undone.has(line.key)) s.undone++;
    if (line.tooLarge) s.tooLarge = true;
    for (const f of line.files) {
      const had = s.paths.get(f.p);
      s.paths.set(f.p, { b: had ? had.b : f.b, a: f.a });
    }
    for (const x of line.sensitive ?? []) {
      const had = s.sensitive.get(x.p);
      s.sensitive.set(x.p, had === 'created' && x.c !== 'deleted' ? 'created' : x.c);
    }
  }
  const out = [...steps].map(([step, s]) => {
    const files: Array<{ path: string; change: 'created' | 'changed' | 'deleted' }> = [];
    for (const [rel, { b, a }] of s.paths) {
      // Directories are where files are: the files say what changed.
      if ((b.t === 'dir' || b.t === 'absent') && (a.t === 'dir' || a.t === 'absent')) continue;
      if (b.t === 'absent' && a.t === 'absent') continue;
      files.push({ path: rel, change: b.t === 'absent' ? 'created' : a.t === 'absent' ? 'deleted' : 'changed' });
    }
    for (const [rel, change] of s.sensitive) files.push({ path: rel, change });
    files.sort(byPath);
    return {
      step,
      files,
      ...(s.tooLarge ? { tooLarge: true } : {}),
      ...(s.lines && s.undone === s.lines ? { undone: true } : {}),
    };
  });
  // A step that only made directories (for what it then left out) shows nothing.
  return out.filter((s) => s.files.length || s.tooLarge);
}
