/**
 * Where a rewind works, and which of the journal's paths it may touch: what planning (rewind-plan.ts), applying
 * (rewind-apply.ts) and listing a task's changes (task-changes.ts) start from.
 *
 * The journal is untrusted input: a path that is absolute, climbs out (..), lies in Klea's own state, in what
 * checkpoints do not cover, or under a symlink is refused (a conflict, never touched); sensitive paths are left as
 * they are (and said so); content comes from the store only when it matches its hash.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { inOwnState, SensitiveMatcher } from '../../common/path-guard';
import { parentProblem, relProblem } from './project-paths';
import { projectLayout, taskDir, type StoreLayout } from './store';

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

/** A task's place, resolved: the project's real path, its layout in the store, the task's directory there. */
export interface Place {
  root: string;
  layout: StoreLayout;
  dir: string;
  sensitive: SensitiveMatcher;
  ownState: string[];
}

export function placeOf(place: CheckpointPlace, task: string): Place {
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
export function refusal(p: Place, rel: string): string | null {
  const bad = relProblem(rel);
  if (bad) return `refused: ${bad}`;
  if (inOwnState(path.join(p.root, rel), p.ownState)) return "refused: Klea's own state";
  const parent = parentProblem(p.root, rel);
  return parent ? `refused: ${parent}` : null;
}

/** How deep a project path is: parents are made before what is in them, and removed after it. */
export const depth = (rel: string) => rel.split('/').length;
/** Path order, for the plan's and the result's lists. */
export const byPath = (x: { path: string }, y: { path: string }) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0);
