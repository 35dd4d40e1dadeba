/** What the tool registrations share: the caps they work within and the server's gate, store and call pipeline. */
import type { CheckpointRecorder } from '../checkpoints';
import type { Handle } from './call-handler';
import type { CallStateStore } from './call-state';
import type { CommandSandbox } from './command-sandbox';
import type { PathGate } from './path-gate';

export const DEFAULT_LIMITS = {
  readBytes: 256 * 1024,
  listEntries: 1000,
  findResults: 500,
  grepResults: 200,
  grepFileBytes: 2 * 1024 * 1024,
  /** A grep call's matching is stopped after this long (a pattern can backtrack for ever). */
  grepTimeMs: 10_000,
  commandTimeoutMs: 60_000,
  commandMaxTimeoutMs: 10 * 60_000,
  commandOutputBytes: 64 * 1024,
  /** The largest file write_file or edit_file may leave, and a command may write (tools.max_file_mb). */
  writeBytes: 1024 * 1024 * 1024,
};

export type WorkspaceLimits = typeof DEFAULT_LIMITS;

export interface ToolContext {
  limits: WorkspaceLimits;
  gate: PathGate;
  store: CallStateStore;
  handle: Handle;
  sandbox: CommandSandbox;
  /** Journals what checkpointed calls change (null: the server keeps no checkpoints). */
  checkpoints: CheckpointRecorder | null;
}
