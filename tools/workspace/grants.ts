/**
 * How a permitted call passes the workspace server's own refusal of outside and sensitive paths.
 *
 * The worker's permission gate decides; the MCP client then attaches, per call, signed grants in the request's
 * `_meta["klea/grants"]`: `{path, op, exp, sig}` where `path` is the canonical real path, `op` is read, write or
 * execute, `exp` a Unix-ms expiry and `sig` = HMAC-SHA256(key, op + "\n" + path + "\n" + exp) in hex. The key is
 * a random secret the worker hands to the server it spawns (env KLEA_WORKSPACE_GRANT_KEY); the server removes it
 * from its environment at start, so commands it runs never see it. A server started without a key accepts no
 * grants at all: used on its own, it stays confined to its root.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { grantCovers, type PathOp } from '../../common/path-guard';

export const GRANTS_META_KEY = 'klea/grants';
/** Per-call key, stable across retries of the same call: the server performs a side effect once per key. */
export const IDEMPOTENCY_META_KEY = 'klea/idempotency_key';
export const GRANT_KEY_ENV = 'KLEA_WORKSPACE_GRANT_KEY';
/** Crash tests only: "<tool>:<marker dir>" stops the server between a change and its record (see create-server). */
export const HOLD_AFTER_CHANGE_ENV = 'KLEA_WORKSPACE_HOLD_AFTER_CHANGE';
export const GRANT_TTL_MS = 10 * 60_000;

export interface Grant {
  path: string;
  op: PathOp;
}

export interface SignedGrant extends Grant {
  exp: number;
  sig: string;
}

const mac = (key: string, g: Grant, exp: number) =>
  createHmac('sha256', key).update(`${g.op}\n${g.path}\n${exp}`).digest('hex');

export function signGrants(key: string, grants: readonly Grant[], now = Date.now()): SignedGrant[] {
  const exp = now + GRANT_TTL_MS;
  return grants.map((g) => ({ path: g.path, op: g.op, exp, sig: mac(key, g, exp) }));
}

/** The grants in a request's `_meta` that carry a valid, unexpired signature. */
export function verifiedGrants(key: string | undefined, meta: unknown, now = Date.now()): Grant[] {
  if (!key || !meta || typeof meta !== 'object') return [];
  const raw = (meta as Record<string, unknown>)[GRANTS_META_KEY];
  if (!Array.isArray(raw)) return [];
  const out: Grant[] = [];
  for (const g of raw as Array<Partial<SignedGrant>>) {
    if (typeof g?.path !== 'string' || typeof g.sig !== 'string' || typeof g.exp !== 'number') continue;
    if (g.op !== 'read' && g.op !== 'write' && g.op !== 'execute') continue;
    if (g.exp < now) continue;
    const expected = Buffer.from(mac(key, { path: g.path, op: g.op }, g.exp), 'hex');
    const given = Buffer.from(g.sig, 'hex');
    // Security: constant-time comparison of the signature.
    if (given.length === expected.length && timingSafeEqual(given, expected)) out.push({ path: g.path, op: g.op });
  }
  return out;
}

export { grantCovers };
