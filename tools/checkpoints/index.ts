/**
 * Checkpoints: what each step of a task changed in the project, kept so the task's changes can be undone.
 *
 * The workspace server records (recorder.ts, through `--checkpoint-dir`); the worker plans and applies rewinds and
 * lists a task's changes (rewind.ts). The store's layout is in store.ts, the stat index that finds what a command
 * changed in stat-index.ts (with its file, watcher and walk beside it), the size bound in space.ts.
 */
export {
  applyRewind,
  planRewind,
  taskChanges,
  type ApplyHooks,
  type CheckpointPlace,
  type RewindFile,
  type RewindPlan,
  type RewindResult,
} from './rewind';
export { createCheckpointRecorder, type CallCheckpoint, type CheckpointRecorder } from './recorder';
