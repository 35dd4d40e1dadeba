/** What each step of a task changed, from its journal: the list a rewind is chosen from (the worker's side). */
import { byPath, placeOf, type CheckpointPlace } from './rewind-place';
import { readJournal, readTaskMeta, undoneLines, type State } from './store';

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
