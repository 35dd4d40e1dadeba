/**
 * Worker hosts as network namespaces of their own, for the cluster tests: a bridge the test run makes, holding the
 * cluster's address, and one namespace per host joined to it by a veth pair, with an address of its own. A host in
 * its namespace reaches only the addresses on the bridge (it has no other link), so cutting its link cuts it off
 * from the cluster while its processes run on. Needs root and iproute2's `ip`; `netnsProblem()` says why not
 * otherwise (the tests then run the hosts in the machine's own network namespace).
 */
import { spawnSync } from 'node:child_process';

export interface Bridge {
  /** The bridge's link name. */
  name: string;
  /** The bridge's own address: the cluster listens there. */
  ip: string;
  /** The tag every name this run makes carries. */
  tag: string;
  /** The first three octets of the bridge's /24. */
  net: string;
}

export interface NetHost {
  /** The network namespace's name (`ip netns exec <ns> …`). */
  ns: string;
  /** The veth end on the bridge's side: down, the host is cut off. */
  link: string;
  ip: string;
}

function ip(args: string[]): string {
  const res = spawnSync('ip', args, { encoding: 'utf8' });
  if (res.status !== 0)
    throw new Error(`ip ${args.join(' ')} failed: ${(res.error?.message ?? res.stderr ?? '').trim()}`);
  return res.stdout;
}

/** Why hosts cannot have network namespaces here, or null (they can). */
export function netnsProblem(): string | null {
  if (process.getuid?.() !== 0) return 'making network namespaces needs root';
  const probe = `kprobe${process.pid.toString(36).slice(-6)}`;
  try {
    ip(['link', 'add', probe, 'type', 'bridge']);
    ip(['link', 'del', probe]);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** A bridge on a /24 no address of this machine is in (10.213.N.0/24), with the address .1. */
export function makeBridge(): Bridge {
  const tag = process.pid.toString(36).slice(-5);
  const used = ip(['-4', '-o', 'addr', 'show']);
  const free = Array.from({ length: 254 }, (_, i) => `10.213.${i + 1}`).find((n) => !used.includes(` ${n}.`));
  if (!free) throw new Error('no free /24 in 10.213.0.0/16 for the hosts');
  const bridge = { name: `kbr${tag}`, ip: `${free}.1`, tag, net: free };
  ip(['link', 'add', bridge.name, 'type', 'bridge']);
  ip(['addr', 'add', `${bridge.ip}/24`, 'dev', bridge.name]);
  ip(['link', 'set', bridge.name, 'up']);
  return bridge;
}

export function removeBridge(bridge: Bridge): void {
  spawnSync('ip', ['link', 'del', bridge.name]);
}

/** Host `name`'s namespace, joined to the bridge, with the address `.<10 + n>`. */
export function addHost(bridge: Bridge, name: string, n: number): NetHost {
  const host = { ns: `klea-${bridge.tag}-${name}`, link: `kv${bridge.tag}${name}`, ip: `${bridge.net}.${10 + n}` };
  const inner = `${host.link}i`;
  ip(['netns', 'add', host.ns]);
  ip(['link', 'add', host.link, 'type', 'veth', 'peer', 'name', inner]);
  ip(['link', 'set', inner, 'netns', host.ns]);
  ip(['link', 'set', host.link, 'master', bridge.name]);
  ip(['link', 'set', host.link, 'up']);
  ip(['-n', host.ns, 'addr', 'add', `${host.ip}/24`, 'dev', inner]);
  ip(['-n', host.ns, 'link', 'set', inner, 'up']);
  ip(['-n', host.ns, 'link', 'set', 'lo', 'up']);
  return host;
}

/** Its processes run on; nothing they send or wait for gets through. */
export function cutOff(host: NetHost): void {
  ip(['link', 'set', host.link, 'down']);
}

export function reconnect(host: NetHost): void {
  ip(['link', 'set', host.link, 'up']);
}

/** Removes the namespace (its veth pair goes with it). */
export function removeHost(host: NetHost): void {
  spawnSync('ip', ['netns', 'del', host.ns]);
}

/** The command that runs `argv` in the host's namespace. */
export function inHost(host: NetHost, argv: string[]): [string, string[]] {
  return ['ip', ['netns', 'exec', host.ns, ...argv]];
}
