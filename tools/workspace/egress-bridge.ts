/**
 * Runs inside the command sandbox when the session's network is on (never imported): offers the egress proxy's
 * unix socket (bound into the sandbox) on a loopback port, then runs the command with HTTP_PROXY, HTTPS_PROXY and
 * ALL_PROXY naming that port, and ends as the command ends, with its exit status. It holds nothing the command
 * could not do itself: every check is the proxy's, outside the sandbox.
 *
 * It imports nothing but Node's built-ins: it is the one file of Klea bound into the sandbox (sandbox-egress.ts), so
 * a module it imported would not be there. That is why it keeps its own copy of the two-way pipe that
 * runtime/socket-pipe.ts gives the rest of Klea.
 *
 *   node egress-bridge.js <proxy socket> -- <program> [args...]
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';

const [socketPath, separator, program, ...args] = process.argv.slice(2);
if (!socketPath || separator !== '--' || !program) {
  process.stderr.write('usage: egress-bridge <proxy socket> -- <program> [args...]\n');
  process.exit(2);
}

// The same as runtime/socket-pipe.ts's pipeSockets: either side closing or failing ends both.
const bridge = net.createServer((client) => {
  const proxy = net.connect(socketPath);
  const end = () => {
    client.destroy();
    proxy.destroy();
  };
  client.on('error', end).on('close', end);
  proxy.on('error', end).on('close', end);
  client.pipe(proxy);
  proxy.pipe(client);
});

bridge.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${(bridge.address() as net.AddressInfo).port}`;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) env[name] = env[name.toLowerCase()] = url;
  // The sandbox's own loopback (a server the command started) is reached directly.
  env.NO_PROXY = env.no_proxy = 'localhost,127.0.0.1,::1';
  // Node's fetch and http follow these variables only when asked to.
  env.NODE_USE_ENV_PROXY = '1';
  const child = spawn(program, args, { stdio: 'inherit', env });
  child.on('error', (err) => {
    process.stderr.write(`${program}: ${err.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0)));
});
