/**
 * The eval's tasks: what a user would ask a coding agent on a small project, each with its fixture files, the
 * prompt as a user types it, and a checker that judges the real outcome (the files on disk afterwards, commands
 * run by the checker itself, the value in the answer). Each runs in a fresh project directory.
 *
 * Two halves: `dev` (./tasks-dev.ts), to tune on, and `holdout` (./tasks-holdout.ts), the same kinds of work with
 * other content and wording, never tuned on. Every category of ./task-kit.ts is in both.
 */
import type { EvalTask, SplitChoice } from './task-kit';
import { DEV_TASKS } from './tasks-dev';
import { HOLDOUT_TASKS } from './tasks-holdout';

export {
  CATEGORIES,
  CATEGORY_NAMES,
  DEFAULT_ANSWER,
  type Category,
  type EvalTask,
  type Outcome,
  type Split,
  type SplitChoice,
} from './task-kit';

export const TASKS: readonly EvalTask[] = [...DEV_TASKS, ...HOLDOUT_TASKS];

export function parseSplit(value: string | undefined): SplitChoice {
  const v = (value ?? '').trim() || 'all';
  if (v === 'dev' || v === 'holdout' || v === 'all') return v;
  throw new Error(`unknown eval split "${v}" (known: dev, holdout, all)`);
}

/**
 * The tasks named in `list` (comma-separated ids; empty: all) of the half `split`, or an error naming the unknown
 * ids (or the ids of the other half).
 */
export function selectTasks(
  list: string | undefined,
  all: readonly EvalTask[] = TASKS,
  split: SplitChoice = 'all'
): readonly EvalTask[] {
  const ids = (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const inSplit = all.filter((t) => split === 'all' || t.split === split);
  if (!ids.length) return inSplit;
  const unknown = ids.filter((id) => !all.some((t) => t.id === id));
  if (unknown.length)
    throw new Error(`unknown eval task(s): ${unknown.join(', ')} (known: ${all.map((t) => t.id).join(', ')})`);
  const outside = ids.filter((id) => !inSplit.some((t) => t.id === id));
  if (outside.length) throw new Error(`eval task(s) ${outside.join(', ')} are not in the ${split} half`);
  return inSplit.filter((t) => ids.includes(t.id));
}
