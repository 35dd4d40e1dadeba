/**
 * What the worker and the bundled workspace MCP server agree on, beside MCP itself.
 *
 * The worker's permission gate decides; the MCP client then attaches, per call, signed grants in the request's
 * `_meta["klea/grants"]`: `{path, op, exp, sig}` where `path` is the canonical real path, `op` is read, write or
 * execute, `exp` a Unix-ms expiry and `sig` = HMAC-SHA256(key, op + "\n" + path + "\n" + exp) in hex (signed and
 * checked by runtime/grant-signing.ts). The key is a random secret the worker hands to the server it spawns (env
 * KLEA_WORKSPACE_GRANT_KEY); the server removes it from its environment at start, so commands it runs never see
 * it. A server started without a key accepts no grants at all: used on its own, it stays confined to its root.
 */
import type { Grant } from './path-guard';

export const GRANTS_META_KEY = 'klea/grants';
/** Per-call key, stable across retries of the same call: the server performs a side effect once per key. */
export const IDEMPOTENCY_META_KEY = 'klea/idempotency_key';
export const GRANT_KEY_ENV = 'KLEA_WORKSPACE_GRANT_KEY';
/**
 * Per call that can change the project (write_file, edit_file, run_command): `{task, step}` asks the server to
 * record, in the task's checkpoint journal, what the call changed, so the task's changes can be undone later
 * (tools/checkpoints). Read-only calls ignore it.
 */
export const CHECKPOINT_META_KEY = 'klea/checkpoint';
/**
 * Per `write_file` call: `true` says the write replaces the file on purpose (Klea's own write of AGENTS.md for the
 * user's `/init`), so it is not held to keeping most of the file. Never set on a call a model picked.
 */
export const REPLACE_META_KEY = 'klea/replace';
/** Per call: `"on"` lets a sandboxed command reach the network (the session's setting); anything else is off. */
export const NETWORK_META_KEY = 'klea/network';
/**
 * Crash tests only: "<tool>:<marker dir>" stops the server between a change and its record (see
 * `WorkspaceServerOptions.holdAfterChange`).
 */
export const HOLD_AFTER_CHANGE_ENV = 'KLEA_WORKSPACE_HOLD_AFTER_CHANGE';
export const GRANT_TTL_MS = 10 * 60_000;

/** A grant as it travels in `_meta["klea/grants"]`. */
export interface SignedGrant extends Grant {
  exp: number;
  sig: string;
}
