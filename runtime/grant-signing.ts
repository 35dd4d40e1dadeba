/**
 * Signing and checking the grants a call carries to the workspace server (the format is in
 * common/workspace-protocol.ts): the worker signs, the server verifies, both with the key the worker handed it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { PathOpSchema, type Grant } from '../common/path-guard';
import { GRANTS_META_KEY, GRANT_TTL_MS, type SignedGrant } from '../common/workspace-protocol';

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
    const op = PathOpSchema.safeParse(g.op);
    if (!op.success) continue;
    if (g.exp < now) continue;
    const expected = Buffer.from(mac(key, { path: g.path, op: op.data }, g.exp), 'hex');
    const given = Buffer.from(g.sig, 'hex');
    // Security: constant-time comparison of the signature.
    if (given.length === expected.length && timingSafeEqual(given, expected)) out.push({ path: g.path, op: op.data });
  }
  return out;
}
