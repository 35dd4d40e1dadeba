/**
 * Undoing a task's steps from its journal (the worker's side of checkpoints), as rewind-plan.ts plans it.
 *
 * `applyRewind` records its plan under its rewind id before it changes anything, records each path once it is done,
 * and its result last, so a retry after a crash at any point finishes the same restore without doing any path twice,
 * and a call with a finished id answers with the same result.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chmodAt, currentState, makeParents, placeAt, removeAt, removeDirIfEmpty, sameState } from './project-paths';
import { compute } from './rewind-plan';
import { byPath, depth, placeOf, refusal, type CheckpointPlace, type Place, type RewindFile } from './rewind-place';
import {
  ensureLayout,
  readBlob,
  readRewind,
  rewindFiles,
  writeAtomicSync,
  type PlannedAction,
  type RewindRecord,
} from './store';

export interface RewindResult {
  restored: RewindFile[];
  sensitive: string[];
}

/** Fault injection for tests: called after each path is put back, before that is recorded. */
export interface ApplyHooks {
  afterFile?: (file: RewindFile) => void | Promise<void>;
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
