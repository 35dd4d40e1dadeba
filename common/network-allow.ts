/**
 * `tools.sandbox.network_allow`: the host names a sandboxed command may reach when the session's network is on.
 * An entry is a name (`registry.npmjs.org`, that name only) or a wildcard (`*.githubusercontent.com`, its
 * subdomains, not the name itself). Without the key any public address may be reached; with it, only the names it
 * lists (and never an address typed as digits). Either way the egress proxy refuses whatever a name resolves to
 * inside: loopback, private, link-local and the rest (tools/workspace/egress-address.ts).
 */
import { z } from 'zod';

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const PATTERN = new RegExp(`^(?:\\*\\.)?(?:${LABEL}\\.)*${LABEL}$`);

/** A name as the proxy compares it: lower case, without the root's trailing dot. */
export function normalizeHostName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

export const NetworkAllowEntrySchema = z
  .string()
  .transform(normalizeHostName)
  .refine((v) => PATTERN.test(v) && v.length <= 253 && !/^[\d.]+$/.test(v.replace(/^\*\./, '')), {
    error: (issue) =>
      `"${String(issue.input)}" is not a host name: write a name such as registry.npmjs.org, or *.example.com for ` +
      'its subdomains (no scheme, port, path or IP address)',
  });

export const NetworkAllowSchema = z.array(NetworkAllowEntrySchema);

/** Whether `name` (already normalized) is one the list allows. */
export function nameAllowed(name: string, allow: readonly string[]): boolean {
  return allow.some((entry) => (entry.startsWith('*.') ? name.endsWith(entry.slice(1)) : name === entry));
}
