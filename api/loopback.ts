/**
 * What "loopback" means to the API, in one place: the bind check (no token needed on loopback) and the `Host`
 * check (a DNS name rebound to 127.0.0.1 is not served) must agree, or one lets through what the other refuses.
 */

/** An IPv4-mapped IPv6 address as the URL parser writes it: `[::ffff:7f00:1]` is 127.0.0.1. */
const MAPPED_IPV4 = /^\[::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}\]$/;
const IPV4_LOOPBACK = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/**
 * Whether a host name (no port) is this machine's loopback: `localhost`, 127.0.0.0/8, `::1` (bare or in
 * brackets, in any spelling) and IPv4-mapped 127.x (`::ffff:127.0.0.1`).
 */
export function isLoopbackName(name: string): boolean {
  const raw = name.trim().toLowerCase();
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (!bare) return false;
  let host: string;
  try {
    // The URL parser spells an address the one way a browser sends it (`[0:0::1]` is `[::1]`, `127.1` is 127.0.0.1).
    host = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return false;
  }
  if (host === 'localhost' || host === '[::1]') return true;
  const mapped = MAPPED_IPV4.exec(host);
  if (mapped) return parseInt(mapped[1], 16) >> 8 === 127;
  // Security: a whole dotted address, so a DNS name such as `127.example.com` is not taken for loopback.
  return IPV4_LOOPBACK.test(host);
}
