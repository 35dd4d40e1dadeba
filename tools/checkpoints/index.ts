/**
 * Checkpoints: what each step of a task changed in the project, kept so the task's changes can be undone.
 *
 * The workspace server records (recorder.ts, through `--checkpoint-dir`); the worker plans rewinds (rewind-plan.ts),
 * applies them (rewind-apply.ts) and lists a task's changes (task-changes.ts), each from the place rewind-place.ts
 * resolves. The store's layout is in store.ts, the stat index that finds what a command changed in stat-index.ts
 * (with its file, watcher and walk beside it), the size bound in space.ts.
 */
export { applyRewind, type ApplyHooks, type RewindResult } from './rewind-apply';
export { type CheckpointPlace, type RewindFile } from './rewind-place';
export { planRewind, type RewindPlan } from './rewind-plan';
export { taskChanges } from './task-changes';
export { createCheckpointRecorder, type CallCheckpoint, type CheckpointRecorder } from './recorder';
