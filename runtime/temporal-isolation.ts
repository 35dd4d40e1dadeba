/**
 * `make start`'s Temporal dev server, closed to DNS rebinding. The dev server answers any `Host` on every HTTP port
 * it opens (its HTTP API, where any workflow can be listed and signalled; its Web UI, which does the same through
 * its own API; its metrics), so a web page whose name was rebound to 127.0.0.1 could drive it from the user's
 * browser. Here it runs in a network namespace of its own (bubblewrap, loopback only), and the host sees just two
 * of its ports, each through a front in the start script:
 *
 * - the gRPC port, forwarded as it is (gRPC needs HTTP/2, which no web page can speak to it; the worker and the
 *   API use it), and
 * - the Web UI, behind a front that answers only loopback names and the host of `temporal.ui_url` (403 otherwise)
 *   and refuses a foreign `Origin` on a request that changes something.
 *
 * Its HTTP API, metrics and internal services exist inside the namespace only. Inside, socket-forward.ts offers the
 * two ports on unix sockets in a private directory; the fronts reach them there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isLoopbackName } from '../api/loopback';
import { pipeSockets } from './socket-pipe';

/** The forwarding runner, beside this module in dist/. */
const FORWARD_SCRIPT = path.join(__dirname, 'socket-forward.js');

/** `host[:port]` → the host name alone, lower case (`[::1]` keeps its brackets). */
export function hostOf(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0];
}

/** Whether the UI front serves a request with this `Host` header: loopback names, or the UI URL's own host. */
export function uiHostServed(header: string | undefined, uiUrl: string): boolean {
  if (!header) return false;
  const name = hostOf(header);
  return isLoopbackName(name) || name === new URL(uiUrl).hostname.toLowerCase();
}

export interface IsolatedTemporal {
  /** How to start the dev server inside its namespace (for `startDevServer`'s `wrap`). */
  wrap(file: string, args: string[]): { file: string; args: string[] };
  /** Opens the fronts on the host's loopback: the gRPC port, and the Web UI's when it has one. */
  openFronts(): Promise<void>;
  close(): Promise<void>;
}

export function isolateTemporal(opts: {
  bwrap: string;
  /** The gRPC port, the same number inside and outside. */
  port: number;
  /** The Web UI's port (inside and outside), or null when it runs headless. */
  uiPort: number | null;
  uiUrl: string;
  node?: string;
}): IsolatedTemporal {
  // Security: the sockets live in a directory only this user can open.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-temporal-'));
  const grpcSocket = path.join(dir, 'grpc.sock');
  const uiSocket = path.join(dir, 'ui.sock');
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };

  const grpcFront = net.createServer((outside) => {
    track(outside);
    pipeSockets(outside, net.connect(grpcSocket));
  });

  const uiFront = http.createServer((req, res) => {
    const refuse = (why: string) => {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end(why);
    };
    // Security: a DNS name rebound to 127.0.0.1 is not a name this UI serves.
    if (!uiHostServed(req.headers.host, opts.uiUrl))
      return refuse(
        `this Temporal UI does not serve host "${req.headers.host ?? ''}": open it at ${opts.uiUrl} ` +
          '(loopback names and the host of temporal.ui_url only)\n'
      );
    const origin = req.headers.origin;
    if (origin && !['GET', 'HEAD', 'OPTIONS'].includes(req.method ?? 'GET')) {
      let own = false;
      try {
        own = new URL(origin).host.toLowerCase() === (req.headers.host ?? '').toLowerCase();
      } catch {
        own = false;
      }
      if (!own) return refuse(`requests from ${origin} are refused: only the UI's own pages may change anything\n`);
    }
    const inside = http.request({ socketPath: uiSocket, method: req.method, path: req.url, headers: req.headers });
    inside.on('response', (r) => {
      res.writeHead(r.statusCode ?? 502, r.rawHeaders);
      r.pipe(res);
    });
    inside.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`the Temporal UI is not answering (${(err as NodeJS.ErrnoException).code ?? err.message})\n`);
      }
    });
    req.pipe(inside);
  });
  uiFront.on('connection', track);

  const listen = (server: net.Server, port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        servers.push(server);
        resolve();
      });
    });

  return {
    wrap(file, args) {
      const forwards = [`${grpcSocket}=${opts.port}`, ...(opts.uiPort ? [`${uiSocket}=${opts.uiPort}`] : [])];
      return {
        file: opts.bwrap,
        args: [
          // Security: a network namespace of its own (loopback only); the file system and everything else as they are.
          '--unshare-net',
          '--bind',
          '/',
          '/',
          '--dev-bind',
          '/dev',
          '/dev',
          '--',
          opts.node ?? process.execPath,
          FORWARD_SCRIPT,
          ...forwards.flatMap((f) => ['--forward', f]),
          '--',
          file,
          ...args,
        ],
      };
    },
    async openFronts() {
      await listen(grpcFront, opts.port);
      if (opts.uiPort) await listen(uiFront, opts.uiPort);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
