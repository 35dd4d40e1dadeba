import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { resolveConfig } from '../../common/config-resolve';
import { forbiddenAddress } from '../../tools/workspace/egress-address';
import { canonicalHost, createEgressProxy, type EgressProxyOptions } from '../../tools/workspace/egress-proxy';
import { egressMounts, throughEgress } from '../../tools/workspace/sandbox-egress';

describe('which addresses a sandboxed command may reach (egress-address)', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.53.0.9', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['0.0.0.0', 'the "this network" range'],
    ['::', 'the unspecified address'],
    ['10.1.2.3', 'a private address'],
    ['172.20.0.1', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['100.100.0.1', 'a shared (carrier-grade NAT) address'],
    ['169.254.169.254', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['fd00:ec2::254', 'a unique-local address'],
    ['fc00::1', 'a unique-local address'],
    ['224.0.0.251', 'a multicast address'],
    ['ff02::1', 'a multicast address'],
    ['255.255.255.255', 'a reserved address'],
    ['64:ff9b::a00:1', 'a private address'],
    ['2002:7f00:1::1', 'a loopback address'],
    ['2001:db8::1', 'a documentation address'],
    ['localhost', 'not an IP address'],
  ])('refuses %s: %s', (ip, why) => {
    expect(forbiddenAddress(ip)).toBe(why);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'lets %s through',
    (ip) => {
      expect(forbiddenAddress(ip)).toBeNull();
    }
  );

  it("refuses this machine's own public address, however it is written", () => {
    expect(forbiddenAddress('93.184.215.14', ['93.184.215.14'])).toBe('an address of this machine');
    expect(forbiddenAddress('::ffff:93.184.215.14', ['93.184.215.14'])).toBe('an address of this machine');
  });
});

describe('tools.sandbox.network_allow', () => {
  it('takes names and wildcards, in any case', () => {
    const config = resolveConfig(
      { tools: { sandbox: { network_allow: ['Registry.NPMjs.org.', '*.example.com'] } } },
      {}
    );
    expect(config.tools.sandbox.network_allow).toEqual(['registry.npmjs.org', '*.example.com']);
    expect(resolveConfig({}, {}).tools.sandbox.network_allow).toBeUndefined();
  });

  it.each(['https://pypi.org', 'pypi.org:443', '10.0.0.1', 'a b', '*', '*.', 'pypi.org/simple'])(
    'refuses %s, naming the key',
    (entry) => {
      expect(() => resolveConfig({ tools: { sandbox: { network_allow: [entry] } } }, {})).toThrow(
        /tools\.sandbox\.network_allow\.0: .* is not a host name/
      );
    }
  );
});

describe('the command sandbox with the network on: how it is built (sandbox-egress)', () => {
  it('binds the proxy socket and the bridge under /run/klea, and starts the command through the bridge', () => {
    expect(egressMounts('/tmp/s/egress.sock', '/usr/bin/node', '/d/egress-bridge.js')).toEqual([
      '--ro-bind', '/usr/bin/node', '/run/klea/node',
      '--ro-bind', '/d/egress-bridge.js', '/run/klea/egress-bridge.js',
      '--bind', '/tmp/s/egress.sock', '/run/klea/egress.sock',
    ]); // prettier-ignore
    expect(throughEgress(['/bin/sh', '-c', 'npm ci'])).toEqual([
      '/run/klea/node', '/run/klea/egress-bridge.js', '/run/klea/egress.sock', '--', '/bin/sh', '-c', 'npm ci',
    ]); // prettier-ignore
  });

  it('keeps the bridge to Node built-ins: it is the one file of Klea bound into the sandbox', () => {
    const source = readFileSync(path.join(__dirname, '../../tools/workspace/egress-bridge.ts'), 'utf8');
    const imported = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imported.length).toBeGreaterThan(0);
    expect(imported.filter((name) => !name.startsWith('node:'))).toEqual([]);
  });
});

describe('the egress proxy', () => {
  const PUBLIC = '93.184.215.14';
  let upstream: net.Server;
  let upstreamPort = 0;
  let upstreamConnections = 0;
  let lookups: string[];

  beforeAll(async () => {
    // Stands for a public server: an echo for tunnels, a tiny HTTP answer for plain requests.
    upstream = net.createServer((s) => {
      upstreamConnections++;
      s.once('data', (d) => {
        if (d.toString().startsWith('GET ')) {
          const host = /\r\nhost: ([^\r]+)/i.exec(d.toString())?.[1];
          s.end(
            `HTTP/1.1 200 OK\r\ncontent-length: ${`hello ${host}`.length}\r\nconnection: close\r\n\r\nhello ${host}`
          );
        } else {
          s.write(d);
          s.pipe(s);
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    upstreamPort = (upstream.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise((r) => upstream.close(r)));
  beforeEach(() => {
    upstreamConnections = 0;
    lookups = [];
  });

  /** A proxy whose DNS is `names` (each a list of answers, one per lookup) and whose "internet" is `upstream`. */
  async function startProxy(names: Record<string, string[][]>, extra: Partial<EgressProxyOptions> = {}) {
    const answers = new Map(Object.entries(names).map(([k, v]) => [k, [...v]]));
    const connected: string[] = [];
    const proxy = createEgressProxy({
      lookup: async (name) => {
        lookups.push(name);
        const list = answers.get(name);
        if (!list?.length) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
        return list.length > 1 ? list.shift()! : list[0];
      },
      connect: (address, port) => {
        connected.push(`${address}:${port}`);
        return net.connect(address === PUBLIC ? upstreamPort : port, '127.0.0.1');
      },
      localAddresses: () => [],
      ...extra,
    });
    const socket = path.join(mkdtempSync(path.join(os.tmpdir(), 'klea-egress-')), 'egress.sock');
    await proxy.listen(socket);
    return { proxy, socket, connected };
  }

  /** Sends CONNECT through the proxy; returns the status line and, once tunnelled, what `ping` echoes. */
  function tunnel(socket: string, authority: string, host = authority): Promise<{ status: string; body: string }> {
    return new Promise((resolve, reject) => {
      const c = net.connect(socket);
      let data = '';
      c.on('error', reject);
      c.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      c.on('data', (d) => {
        data += d.toString();
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) return;
        const status = data.slice(0, data.indexOf('\r\n'));
        if (status.includes(' 200 ')) {
          if (data.length === end + 4) c.write('ping');
          else if (data.endsWith('ping')) {
            c.destroy();
            resolve({ status, body: 'ping' });
          }
        }
      });
      c.on('end', () => {
        const end = data.indexOf('\r\n\r\n');
        resolve({ status: data.slice(0, data.indexOf('\r\n')), body: data.slice(end + 4) });
      });
    });
  }

  /** A plain HTTP request through the proxy (absolute form), with the URL's Host unless told another. */
  function get(socket: string, url: string, host = new URL(url).host): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ socketPath: socket, path: url, headers: { host } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('tunnels to a public name, and forwards a plain request with its own Host', async () => {
    const { proxy, socket, connected } = await startProxy({ 'pypi.org': [[PUBLIC]] });
    try {
      expect(await tunnel(socket, 'pypi.org:443')).toEqual({
        status: 'HTTP/1.1 200 Connection Established',
        body: 'ping',
      });
      expect(await get(socket, 'http://pypi.org/simple/')).toEqual({ status: 200, body: 'hello pypi.org' });
      expect(connected).toEqual([`${PUBLIC}:443`, `${PUBLIC}:80`]);
    } finally {
      await proxy.close();
    }
  });

  it.each([
    ['127.0.0.1:7233', 'only: 127.0.0.1 is a loopback address'],
    ['[::1]:7243', 'only: ::1 is a loopback address'],
    ['[::ffff:127.0.0.1]:8233', 'only: ::ffff:127.0.0.1 (::ffff:7f00:1) is a loopback address'],
    ['169.254.169.254:80', 'link-local'],
    ['10.0.0.5:22', 'a private address'],
    ['localhost:7233', 'localhost resolves to 127.0.0.1, a loopback address'],
    ['rebind.example:443', 'rebind.example resolves to 192.168.1.10, a private address'],
    ['split.example:443', 'split.example resolves to 10.0.0.1, a private address'],
  ])('attack: a tunnel to %s is refused and nothing is connected', async (authority, why) => {
    const { proxy, socket, connected } = await startProxy({
      localhost: [['127.0.0.1']],
      'rebind.example': [['192.168.1.10']],
      // One public answer does not launder a private one.
      'split.example': [[PUBLIC, '10.0.0.1']],
    });
    try {
      const r = await tunnel(socket, authority);
      expect(r.status).toBe('HTTP/1.1 403 Forbidden');
      expect(r.body).toContain(why);
      expect(connected).toEqual([]);
      expect(upstreamConnections).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('attack: a plain request to the loopback or to a private address is refused', async () => {
    const { proxy, socket, connected } = await startProxy({});
    try {
      for (const url of ['http://127.0.0.1:7243/api/v1/namespaces/default/workflows', 'http://[fd00::1]/']) {
        const r = await get(socket, url);
        expect(r.status).toBe(403);
        expect(r.body).toMatch(/^klea: the command sandbox's network reaches public addresses only: /);
      }
      expect(connected).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('attack: DNS rebinding; the connection goes to the address that was checked, not to a second answer', async () => {
    // The first answer is public, any later one would be the loopback.
    const { proxy, socket, connected } = await startProxy({ 'flip.example': [[PUBLIC], ['127.0.0.1']] });
    try {
      expect((await tunnel(socket, 'flip.example:443')).status).toBe('HTTP/1.1 200 Connection Established');
      expect(lookups).toEqual(['flip.example']);
      expect(connected).toEqual([`${PUBLIC}:443`]);
    } finally {
      await proxy.close();
    }
  });

  it('with network_allow, names not on it and bare addresses are refused before any lookup', async () => {
    const { proxy, socket, connected } = await startProxy(
      { 'registry.npmjs.org': [[PUBLIC]], 'cdn.example.com': [[PUBLIC]], 'evil.example': [[PUBLIC]] },
      { allow: ['registry.npmjs.org', '*.example.com'] }
    );
    try {
      expect((await tunnel(socket, 'registry.npmjs.org:443')).status).toContain(' 200 ');
      expect((await tunnel(socket, 'CDN.Example.com.:443')).status).toContain(' 200 ');
      const name = await tunnel(socket, 'evil.example:443');
      expect(name.body).toContain('evil.example is not in tools.sandbox.network_allow');
      const apex = await tunnel(socket, 'example.com:443');
      expect(apex.body).toContain('example.com is not in tools.sandbox.network_allow');
      const bare = await tunnel(socket, `${PUBLIC}:443`);
      expect(bare.body).toContain('tools.sandbox.network_allow lists names only');
      expect(lookups).toEqual(['registry.npmjs.org', 'cdn.example.com']);
      expect(connected).toEqual([`${PUBLIC}:443`, `${PUBLIC}:443`]);
    } finally {
      await proxy.close();
    }
  });

  it.each([
    ['2130706433', '127.0.0.1', 'a loopback address'],
    ['0x7f000001', '127.0.0.1', 'a loopback address'],
    ['0x7f.1', '127.0.0.1', 'a loopback address'],
    ['0177.0.0.1', '127.0.0.1', 'a loopback address'],
    ['127.1', '127.0.0.1', 'a loopback address'],
    ['127.0.0.1.', '127.0.0.1', 'a loopback address'],
    ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254', 'a link-local address'],
    ['012.0.0.1', '10.0.0.1', 'a private address'],
    ['3232235777', '192.168.1.1', 'a private address'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1', 'a loopback address'],
    ['[0:0:0:0:0:ffff:7f00:1]', '::ffff:7f00:1', 'a loopback address'],
    ['[::ffff:a9fe:a9fe]', '::ffff:a9fe:a9fe', 'a link-local address'],
    ['[0::1]', '::1', 'a loopback address'],
  ])('attack: %s is %s, and refused as %s before anything is looked up', async (spelt, address, why) => {
    const { proxy, socket, connected } = await startProxy({});
    try {
      const r = await tunnel(socket, `${spelt}:7233`);
      expect(r.status).toBe('HTTP/1.1 403 Forbidden');
      const bare = spelt.replace(/^\[|\]$/g, '').replace(/\.$/, '');
      expect(r.body).toContain(`${bare === address ? address : `${bare} (${address})`} is ${why}`);
      const plain = await get(socket, `http://${spelt}:7233/api/v1/namespaces`);
      expect(plain.status).toBe(403);
      expect(plain.body).toContain(why);
      expect(lookups).toEqual([]);
      expect(connected).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('spellings: the canonical form of a host, or null for what is no host', () => {
    expect(canonicalHost('LocalHost.')).toBe('localhost');
    expect(canonicalHost('Example.COM')).toBe('example.com');
    expect(canonicalHost('[::FFFF:127.0.0.1]')).toBe('::ffff:7f00:1');
    expect(canonicalHost('1.2.3')).toBe('1.2.0.3');
    for (const bad of ['', 'a b', 'x/y', 'user@host', '256.256.256.256', '0x100000000', '[::1'])
      expect(canonicalHost(bad)).toBeNull();
  });

  it('attack: a Host that differs from the host the proxy checked is refused (a public front routing by Host)', async () => {
    const { proxy, socket, connected } = await startProxy({ 'pypi.org': [[PUBLIC]] });
    try {
      for (const host of ['127.0.0.1:7243', 'internal.corp', 'evil.example', 'pypi.org:8080']) {
        const r = await get(socket, 'http://pypi.org/simple/', host);
        expect(r.status).toBe(403);
        expect(r.body).toContain(`the Host header (${host}) names another host than the request (pypi.org:80)`);
      }
      const t = await tunnel(socket, 'pypi.org:443', 'internal.corp:443');
      expect(t.status).toBe('HTTP/1.1 403 Forbidden');
      expect(t.body).toContain('the Host header (internal.corp:443) names another host');
      expect(connected).toEqual([]);
      expect(upstreamConnections).toBe(0);
      // The control: the same request with its own Host (any spelling of it) reaches the server, which sees it.
      expect(await get(socket, 'http://pypi.org/simple/', 'PyPI.org.:80')).toEqual({
        status: 200,
        body: 'hello pypi.org',
      });
      expect(upstreamConnections).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it.each(['2130706433', '0x7f000001', '127.1', '017700000001', 'localhost'])(
    'attack: the loopback spelt %s is resolved by the system and refused for the address it is',
    async (name) => {
      // The system's own resolver (no network needed): numeric spellings and /etc/hosts.
      const proxy = createEgressProxy({ localAddresses: () => [] });
      const d = await proxy.decide(name);
      expect(d).toEqual({ refused: expect.stringMatching(/(resolves to (127\.0\.0\.1|::1), )?a loopback address$/) });
    }
  );
});
