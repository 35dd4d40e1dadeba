/**
 * What a sandbox with the network on adds to bubblewrap-policy.ts's sandbox: the egress proxy's socket and the
 * bridge that offers it inside (egress-proxy.ts, egress-bridge.ts), both under /run/klea, and the command started
 * through the bridge. The sandbox's network namespace stays its own either way: loopback only, and the host's
 * loopback (every port of the stack) is not in it.
 */
import path from 'node:path';

/** Where the sandbox finds the proxy's socket, the bridge and the Node.js that runs it. */
export const EGRESS_DIR = '/run/klea';
const SOCKET = `${EGRESS_DIR}/egress.sock`;
const BRIDGE = `${EGRESS_DIR}/egress-bridge.js`;
const NODE = `${EGRESS_DIR}/node`;

/** The compiled bridge, beside this module in dist/. */
export const BRIDGE_SCRIPT = path.join(__dirname, 'egress-bridge.js');

/** bubblewrap's mounts for the egress: the proxy's socket (`socket`, outside) and the bridge with its runtime. */
export function egressMounts(
  socket: string,
  node: string = process.execPath,
  bridge: string = BRIDGE_SCRIPT
): string[] {
  return ['--ro-bind', node, NODE, '--ro-bind', bridge, BRIDGE, '--bind', socket, SOCKET];
}

/** The command's argv (after bubblewrap's `--`), started through the bridge. */
export function throughEgress(argv: readonly string[]): string[] {
  return [NODE, BRIDGE, SOCKET, '--', ...argv];
}
