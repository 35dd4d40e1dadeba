/**
 * The task workflow's `patched()` changes (workflow code). Each change a run asks for costs it a marker event and
 * an upsert of Temporal's `TemporalChangeVersion` search attribute, a write to the visibility store. A run started
 * since `CURRENT_CHANGES` asks for that one change alone, at its start, and takes the new path of every change
 * before it; a run started earlier (its history has no such marker) asks for each change where it always did.
 */
import { patched } from '@temporalio/workflow';

/** The change that stands for every change below, and for coalesced search attributes (./search-mirror.ts). */
export const CURRENT_CHANGES = 'task-changes-2026-12';

/** Every earlier change, each still asked for by runs started before `CURRENT_CHANGES`. */
export const EARLIER_CHANGES = [
  'input-grants-from-session-only',
  'usage-search-attributes',
  'waiting-since-attribute',
  'project-context-local-activity',
  'paths-checked-with-pick',
  'grant-reaches-session-when-made',
] as const;

export type EarlierChange = (typeof EARLIER_CHANGES)[number];

export class TaskChanges {
  /** Whether this run started since `CURRENT_CHANGES`. Asked once, when the run starts, as a replay asks too. */
  readonly current = patched(CURRENT_CHANGES);

  /** Whether this run takes the change's new path (asking for it, in runs started before `CURRENT_CHANGES`). */
  has(change: EarlierChange): boolean {
    return this.current || patched(change);
  }
}
