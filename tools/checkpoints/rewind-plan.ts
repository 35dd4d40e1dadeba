/**
 * What undoing a task's steps from its journal would do (the worker's side of checkpoints).
 *
 * The journal lines of the chosen steps that no finished rewind has undone are undone together: per path, the
 * target is the content before the earliest of them that touched it, and the content expected there now is the
 * content after the latest. `planRewind` says what applying (rewind-apply.ts) would do and where the project differs
 * from what the task left (a conflict: the user changed it since); it changes nothing.
 */
import { currentState, sameContent, sameState } from './project-paths';
import { byPath, depth, placeOf, refusal, type CheckpointPlace, type Place, type RewindFile } from './rewind-place';
import { hasBlob, readJournal, readTaskMeta, undoneLines, type PlannedAction, type State } from './store';

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

function conflictReason(now: State | { t: 'other' }, expected: State): string {
  if (expected.t === 'file' && expected.hash === null) return 'too large to compare with what the task left';
  if (now.t === 'absent') return 'deleted since the task changed it';
  if (expected.t === 'absent') return 'created since the task deleted it';
  if (now.t !== expected.t) return `now a ${now.t === 'other' ? 'special file' : now.t}, not what the task left`;
  return 'changed since the task changed it';
}

/**
 * A plan, with what applying it records first: the journal lines it undoes, the paths it puts back, the directories
 * it makes and removes.
 */
export interface Computed {
  plan: RewindPlan;
  lines: string[];
  actions: PlannedAction[];
  makeDirs: Array<{ path: string; mode: number }>;
  removeDirs: string[];
}

/** The plan for undoing `steps` of `task`, from its journal and the project as they are now. */
export async function compute(p: Place, task: string, steps: readonly string[]): Promise<Computed> {
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
