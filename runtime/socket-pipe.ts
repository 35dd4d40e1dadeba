/**
 * One connection forwarded both ways between two sockets. Either side closing or failing ends both at once (no
 * half-open connection is left behind, and an error on one side never goes unhandled).
 */
import type net from 'node:net';

export function pipeSockets(a: net.Socket, b: net.Socket): void {
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end).on('close', end);
  b.on('error', end).on('close', end);
  a.pipe(b);
  b.pipe(a);
}
