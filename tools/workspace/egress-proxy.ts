/**
 * The one way out of a sandbox whose session has the network on: an HTTP proxy (CONNECT for HTTPS and any other
 * TCP, absolute-form requests for plain HTTP) that the workspace server runs on a unix socket. The sandbox keeps a
 * network namespace of its own with nothing but loopback; the socket is bound into it and a bridge inside
 * (egress-bridge.ts) offers it on a loopback port, named by HTTP_PROXY / HTTPS_PROXY / ALL_PROXY.
 *
 * The proxy resolves every name itself, refuses a name whose addresses are not all public (egress-address.ts) or
 * that `tools.sandbox.network_allow` does not list, and connects to the very address it checked, never to the name
 * again: a DNS answer that changes between the check and the connection (rebinding) changes nothing.
 */
import { promises as dns } from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { nameAllowed, normalizeHostName } from '../../common/network-allow';
import { forbiddenAddress } from './egress-address';

export interface EgressProxyOptions {
  /** Host names commands may reach (`tools.sandbox.network_allow`); undefined: any public address. */
  allow?: readonly string[];
  /** Resolves a name to its addresses (tests pass their own). */
  lookup?: (name: string) => Promise<string[]>;
  /** Opens a TCP connection to a checked address (tests pass their own). */
  connect?: (address: string, port: number) => net.Socket;
  /** This machine's own addresses, refused like loopback (tests pass their own). */
  localAddresses?: () => string[];
}

export interface EgressProxy {
  /** Serves on a unix socket at `socketPath`. */
  listen(socketPath: string): Promise<void>;
  close(): Promise<void>;
}

/** Where a request may go: a checked address, or why not. */
export type EgressDecision = { address: string } | { refused: string };

const systemLookup = async (name: string) =>
  (await dns.lookup(name, { all: true, verbatim: true })).map((a) => a.address);

const ownAddresses = () =>
  Object.values(os.networkInterfaces())
    .flat()
    .map((i) => i?.address)
    .filter((a): a is string => !!a);

/** Hop-by-hop headers, which a proxy does not pass on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * A host as the proxy judges it: an address in its one canonical form, however it was spelt (IPv4 in decimal,
 * octal, hex or short forms, with a trailing dot; IPv6 in any form, an IPv4-mapped one included), or a name in
 * lower case without the root's trailing dot; null when it is neither. WHATWG's URL host parser is the one browsers,
 * curl-like clients and Node's own http follow, so what it calls an address is what a client would connect to.
 */
export function canonicalHost(raw: string): string | null {
  const bare = raw.trim().replace(/^\[(.*)\]$/, '$1');
  if (!bare || /[\s/?#@\\]/.test(bare)) return null;
  let host: string;
  try {
    host = new URL(`http://${net.isIPv6(bare) ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return null;
  }
  return normalizeHostName(host.replace(/^\[(.*)\]$/, '$1'));
}

/** `host:port` of a CONNECT line, IPv6 in brackets. */
function splitAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(authority);
  const port = m ? Number(m[3]) : 0;
  return m && port >= 1 && port <= 65_535 ? { host: m[1] ?? m[2], port } : null;
}

/**
 * Why a request's `Host` header is refused: it names another host (or port) than the request line the proxy
 * checks. Null when it names the same one, however spelt, or is absent (the proxy then sends the checked one).
 */
function otherHost(header: string | undefined, host: string, port: number): string | null {
  if (header === undefined) return null;
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(header.trim());
  const same = !!m && canonicalHost(m[1]) === canonicalHost(host) && (m[2] === undefined || Number(m[2]) === port);
  return same ? null : `the Host header (${header}) names another host than the request (${host}:${port})`;
}

export function createEgressProxy(opts: EgressProxyOptions = {}): EgressProxy & {
  decide(host: string): Promise<EgressDecision>;
} {
  const lookup = opts.lookup ?? systemLookup;
  const connect = opts.connect ?? ((address: string, port: number) => net.connect({ host: address, port }));
  const local = opts.localAddresses ?? ownAddresses;

  async function decide(rawHost: string): Promise<EgressDecision> {
    const host = canonicalHost(rawHost);
    if (!host) return { refused: `${rawHost} is not a host name or an address` };
    if (net.isIP(host)) {
      // Security: every spelling of an address (2130706433, 0x7f.1, 0177.0.0.1, ::ffff:7f00:1) is judged as the one
      // address it is, before anything is looked up.
      const shown = host === normalizeHostName(rawHost.replace(/^\[|\]$/g, '')) ? host : `${rawHost} (${host})`;
      if (opts.allow) return { refused: `${shown} is an address, and tools.sandbox.network_allow lists names only` };
      const why = forbiddenAddress(host, local());
      // Security: loopback, private and link-local addresses (every port of the stack among them) stay unreachable.
      return why ? { refused: `${shown} is ${why}` } : { address: host };
    }
    if (opts.allow && !nameAllowed(host, opts.allow))
      return { refused: `${host} is not in tools.sandbox.network_allow` };
    let addresses: string[];
    try {
      addresses = await lookup(host);
    } catch (err) {
      return { refused: `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? String(err)})` };
    }
    if (!addresses.length) return { refused: `${host} does not resolve` };
    const own = local();
    for (const address of addresses) {
      const why = forbiddenAddress(address, own);
      // Security: a name that points inside is refused whatever else it points to.
      if (why) return { refused: `${host} resolves to ${address}, ${why}` };
    }
    // Security: the connection goes to this checked address, never to the name resolved again.
    return { address: addresses[0] };
  }

  const refusal = (why: string) => `klea: the command sandbox's network reaches public addresses only: ${why}\n`;

  const server = http.createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      url = new URL('invalid:');
    }
    if (url.protocol !== 'http:') {
      res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
      res.end("klea: this is the command sandbox's proxy: send http:// URLs here, and https through CONNECT\n");
      return;
    }
    const port = Number(url.port || 80);
    // Security: the server is told the host that was checked, never another (a public front that routes by Host
    // to an inside service, or to a name network_allow does not list).
    const claimed = otherHost(req.headers.host, url.hostname, port);
    if (claimed) {
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' });
      res.end(refusal(claimed));
      return;
    }
    void decide(url.hostname).then((d) => {
      if ('refused' in d) {
        res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' });
        res.end(refusal(d.refused));
        return;
      }
      const headers: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
      headers.host = url.host;
      const upstream = http.request({
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        createConnection: () => connect(d.address, port),
      });
      upstream.on('response', (up) => {
        const back: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) back[k] = v;
        res.writeHead(up.statusCode ?? 502, back);
        up.pipe(res);
      });
      upstream.on('error', (err) => {
        if (res.headersSent) res.destroy();
        else {
          res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' });
          res.end(`klea: ${url.host} did not answer (${(err as NodeJS.ErrnoException).code ?? err.message})\n`);
        }
      });
      req.pipe(upstream);
    });
  });

  /** Tunnels open now: the server no longer counts their sockets as its connections. */
  const tunnels = new Set<net.Socket>();
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    tunnels.add(client);
    client.on('close', () => tunnels.delete(client));
    client.on('error', () => client.destroy());
    const target = splitAuthority(req.url ?? '');
    const refuse = (status: string, why: string) =>
      client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${why}`);
    if (!target) return refuse('400 Bad Request', 'klea: CONNECT takes host:port\n');
    const claimed = otherHost(req.headers.host, target.host, target.port);
    if (claimed) return refuse('403 Forbidden', refusal(claimed));
    void decide(target.host).then((d) => {
      if ('refused' in d) return refuse('403 Forbidden', refusal(d.refused));
      const upstream = connect(d.address, target.port);
      upstream.once('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', (err) => {
        if (upstream.connecting || !client.bytesWritten)
          refuse('502 Bad Gateway', `klea: ${req.url} did not answer (${(err as NodeJS.ErrnoException).code})\n`);
        else client.destroy();
      });
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
    });
  });

  return {
    decide,
    listen: (socketPath) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const t of tunnels) t.destroy();
        server.close(() => resolve());
      }),
  };
}
