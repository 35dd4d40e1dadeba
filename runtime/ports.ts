/** Port helpers for the start script and the test harness. */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The ports the kernel hands out as the local end of outgoing connections (`ip_local_port_range`): a port picked
 * from there can be taken by any connection between the moment it is picked and the moment it is bound (a server
 * then fails with "address already in use"), so free ports are picked below it.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! > 2048) return [low!, high!];
  } catch {
    /* not Linux: the common default */
  }
  return [32768, 60999];
}

const FIRST_PICKED = 10_000;

/**
 * A port the OS reports free right now on the given host, outside the range outgoing connections take theirs from
 * (so only another server binding the very same port can take it first); the OS's own pick where that range leaves
 * no room below it.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  const [low] = ephemeralRange();
  for (let i = 0; low > FIRST_PICKED && i < 64; i++) {
    const port = FIRST_PICKED + Math.floor(Math.random() * (low - FIRST_PICKED));
    if ((await portProblem(port, host)) === null) return port;
  }
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves to null when the port can be bound, else to the reason (e.g. EADDRINUSE). */
export function portProblem(port: number, host = '127.0.0.1'): Promise<string | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    srv.listen(port, host, () => srv.close(() => resolve(null)));
  });
}
