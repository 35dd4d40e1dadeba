/**
 * Runs inside the Temporal dev server's own network namespace (runtime/temporal-isolation.ts; never imported):
 * offers chosen loopback ports of that namespace on unix sockets, which `make start` reaches from outside, then
 * runs the program (the dev server) and ends as it ends, with its exit status. Ports it does not forward (Temporal's
 * HTTP API, its metrics, its internal services) exist in the namespace only: nothing outside can reach them.
 *
 *   node socket-forward.js --forward <socket>=<port> [--forward ...] -- <program> [args...]
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { pipeSockets } from './socket-pipe';

const argv = process.argv.slice(2);
const forwards: Array<{ socket: string; port: number }> = [];
let i = 0;
for (; i < argv.length && argv[i] !== '--'; i++) {
  const m = argv[i] === '--forward' ? /^(.+)=(\d+)$/.exec(argv[++i] ?? '') : null;
  if (!m) break;
  forwards.push({ socket: m[1], port: Number(m[2]) });
}
const [program, ...args] = argv.slice(i + 1);
if (argv[i] !== '--' || !program) {
  process.stderr.write('usage: socket-forward --forward <socket>=<port> ... -- <program> [args...]\n');
  process.exit(2);
}

const servers = forwards.map(({ socket, port }) => {
  rmSync(socket, { force: true });
  const server = net.createServer((outside) => {
    pipeSockets(outside, net.connect(port, '127.0.0.1'));
  });
  server.listen(socket);
  return server;
});

// The program gets the same signals from its process group; this process waits for it to end.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);
const child = spawn(program, args, { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write(`${program}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  for (const s of servers) s.close();
  process.exit(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0));
});
