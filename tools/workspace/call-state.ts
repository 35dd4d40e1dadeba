/**
 * The idempotency store: where a side-effecting call that carries an idempotency key
 * (`_meta["klea/idempotency_key"]`) keeps its state, so a retry neither acts twice nor fails a change that already
 * happened (see `WorkspaceServerOptions.stateDir`).
 *
 * Per call, two files named by sha256(tool + "\n" + key): `<hash>.intent.json`, written before a write or edit
 * changes its target (target, hashes before and after, the result it will answer with), and `<hash>.json`, the
 * result once the call is done, after which the intent is removed. A retry that finds the result answers with it;
 * one that finds only an intent judges it by the target's content now.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { IDEMPOTENCY_META_KEY } from '../../common/workspace-protocol';
import { atomicWrite, mkdirsChecked, readJson, readText, sha256 } from './fs-ops';
import { noteToolWrite } from './sandbox-view-state';
import { text } from './tool-result';

/** Where one keyed call keeps its intent while it runs and its result once it is done. */
export interface CallState {
  key: string;
  tool: string;
  done: string;
  intent: string;
}

/** What a write or edit records before it changes its target. */
interface Intent {
  key: string;
  tool: string;
  target: string;
  sha256_before: string | null;
  sha256_after: string;
  result: CallToolResult;
}

/** A file's new content, with the hashes that let a retry tell whether it was written. */
export interface FileChange {
  real: string;
  content: string;
  mode?: number;
  sha256_before: string | null;
  sha256_after: string;
}

export interface CallStateStoreOptions {
  /** Without it no call keeps state: every call is carried out as it comes. */
  stateDir?: string;
  /** Crash tests only: see `WorkspaceServerOptions.holdAfterChange`. */
  holdAfterChange?: { tool: string; markerDir: string };
  /** Names a target for the model (relative to the root). */
  rel: (real: string) => Promise<string>;
}

export interface CallStateStore {
  /** The state files of a side-effecting call that carries an idempotency key (none without a state dir). */
  forCall(tool: string, meta: unknown): CallState | null;
  /**
   * What an earlier attempt of this call left behind: its recorded result, or an open intent judged by the
   * target's content now. Null when the call must (still) be carried out.
   */
  recover(state: CallState): Promise<{ res: CallToolResult; replayed: boolean } | null>;
  /**
   * Changes a file on behalf of a call: for a keyed call the intent first (so a retry can tell whether the change
   * happened), then the atomic write. The call's result is recorded by `settle` when the call returns.
   */
  applyChange(state: CallState | null, change: FileChange, result: CallToolResult): Promise<CallToolResult>;
  /** Records a call's result and closes its intent. */
  settle(state: CallState, res: CallToolResult): Promise<void>;
}

/** Read-only tools change nothing, so there is nothing a retry could repeat. */
const READ_ONLY_TOOLS = new Set(['read_file', 'list_dir', 'find_files', 'grep']);

export function createCallStateStore(opts: CallStateStoreOptions): CallStateStore {
  const { stateDir, holdAfterChange, rel } = opts;

  async function settle(state: CallState, res: CallToolResult): Promise<void> {
    await atomicWrite(state.done, JSON.stringify(res));
    await fs.rm(state.intent, { force: true });
  }

  return {
    forCall(tool, meta) {
      if (!stateDir || READ_ONLY_TOOLS.has(tool) || !meta || typeof meta !== 'object') return null;
      const key = (meta as Record<string, unknown>)[IDEMPOTENCY_META_KEY];
      if (typeof key !== 'string' || !key) return null;
      const base = path.join(stateDir, sha256(`${tool}\n${key}`));
      return { key, tool, done: `${base}.json`, intent: `${base}.intent.json` };
    },

    async recover(state) {
      const done = await readJson<CallToolResult>(state.done);
      if (done) return { res: done, replayed: true };
      const intent = await readJson<Intent>(state.intent);
      if (!intent) return null;
      // Never through a symlink put at the target since.
      const now = await readText({ real: intent.target, class: 'outside' }, async (p) => p).then(
        (r) => sha256(r.buf),
        () => null
      );
      // The change happened; only its record was lost: answer as the first attempt would have.
      if (now === intent.sha256_after) {
        await settle(state, intent.result);
        return { res: intent.result, replayed: true };
      }
      // The change never reached the file: carry it out now.
      if (now === intent.sha256_before) return null;
      // Someone else changed the file in between: repeating the call could undo their change.
      const res = text(
        `${intent.tool} on ${await rel(intent.target)} was interrupted and the file has changed since (neither its old nor its new content); not repeated, nothing changed. Read the file and decide again.`,
        undefined,
        true
      );
      await settle(state, res);
      return { res, replayed: false };
    },

    async applyChange(state, change, result) {
      if (state) {
        const intent: Intent = {
          key: state.key,
          tool: state.tool,
          target: change.real,
          sha256_before: change.sha256_before,
          sha256_after: change.sha256_after,
          result,
        };
        await atomicWrite(state.intent, JSON.stringify(intent));
      }
      await mkdirsChecked(path.dirname(change.real));
      await atomicWrite(change.real, change.content, change.mode);
      // A command running meanwhile must not take this write (a protected file, say) for its own.
      noteToolWrite(change.real);
      if (state && holdAfterChange?.tool === state.tool) {
        await fs.writeFile(path.join(holdAfterChange.markerDir, `${state.tool}.held`), String(process.pid));
        await new Promise<never>(() => {});
      }
      return result;
    },

    settle,
  };
}
