/**
 * Which addresses a sandboxed command may reach through the egress proxy: public ones only. Loopback, private,
 * shared (CGNAT), link-local (cloud metadata at 169.254.169.254 included), unique-local, multicast, documentation
 * and reserved ranges are refused, as is any address of this machine's own interfaces (a public address bound here
 * reaches the stack's ports as well as loopback does). IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4)
 * are judged by that address.
 */
import net from 'node:net';

interface Range {
  bits: number[];
  prefix: number;
  why: string;
}

/** An address as its bytes (4 for IPv4, 16 for IPv6), or null when it is not an address. */
export function addressBytes(ip: string): number[] | null {
  const v = net.isIP(ip);
  if (v === 4) return ip.split('.').map(Number);
  if (v !== 6) return null;
  let text = ip.toLowerCase().replace(/%.*$/, '');
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail.push(...dotted[1].split('.').map(Number));
    text = text.slice(0, -dotted[1].length) + '0:0';
  }
  const [head, rest] = text.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':').filter((g) => g !== '') : []);
  const left = groups(head);
  const right = groups(rest);
  const words = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right].map((g) => parseInt(g, 16));
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function range(cidr: string, why: string): Range {
  const [ip, prefix] = cidr.split('/');
  return { bits: addressBytes(ip)!, prefix: Number(prefix), why };
}

const V4: Range[] = [
  range('0.0.0.0/8', 'the "this network" range'),
  range('10.0.0.0/8', 'a private address'),
  range('100.64.0.0/10', 'a shared (carrier-grade NAT) address'),
  range('127.0.0.0/8', 'a loopback address'),
  range('169.254.0.0/16', 'a link-local address'),
  range('172.16.0.0/12', 'a private address'),
  range('192.0.0.0/24', 'a protocol-assignment address'),
  range('192.0.2.0/24', 'a documentation address'),
  range('192.88.99.0/24', 'a 6to4 relay address'),
  range('192.168.0.0/16', 'a private address'),
  range('198.18.0.0/15', 'a benchmarking address'),
  range('198.51.100.0/24', 'a documentation address'),
  range('203.0.113.0/24', 'a documentation address'),
  range('224.0.0.0/4', 'a multicast address'),
  range('240.0.0.0/4', 'a reserved address'),
];

const V6: Range[] = [
  range('::/128', 'the unspecified address'),
  range('::1/128', 'a loopback address'),
  range('::/96', 'an IPv4-compatible address'),
  range('64:ff9b:1::/48', 'a local NAT64 address'),
  range('100::/64', 'a discard address'),
  range('2001::/32', 'a Teredo address'),
  range('2001:db8::/32', 'a documentation address'),
  range('fc00::/7', 'a unique-local address'),
  range('fe80::/10', 'a link-local address'),
  range('fec0::/10', 'a site-local address'),
  range('ff00::/8', 'a multicast address'),
];

function inRange(bytes: number[], r: Range): boolean {
  if (bytes.length !== r.bits.length) return false;
  for (let bit = 0; bit < r.prefix; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((bytes[i] & mask) !== (r.bits[i] & mask)) return false;
  }
  return true;
}

/** The IPv4 address an IPv6 one stands for (IPv4-mapped, NAT64 well-known prefix, 6to4), if any. */
function embeddedV4(b: number[]): number[] | null {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12);
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6);
  return null;
}

const sameBytes = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Why a command may not reach `ip` (e.g. "a loopback address"), or null when it may: a public address of another
 * machine. `local` lists this machine's own addresses. Anything that is not an address is refused.
 */
export function forbiddenAddress(ip: string, local: readonly string[] = []): string | null {
  const bytes = addressBytes(ip);
  if (!bytes) return 'not an IP address';
  const v4 = bytes.length === 4 ? bytes : embeddedV4(bytes);
  if (v4) {
    const hit = V4.find((r) => inRange(v4, r));
    if (hit) return hit.why;
  }
  if (bytes.length === 16) {
    const hit = V6.find((r) => inRange(bytes, r));
    if (hit) return hit.why;
  }
  for (const own of local) {
    const o = addressBytes(own);
    if (o && (sameBytes(o, bytes) || (v4 && sameBytes(o, v4)))) return 'an address of this machine';
  }
  return null;
}
