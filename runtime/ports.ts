/** Port helpers for the start script and the test harness. */
import net from 'node:net';

/** A port the OS reports free right now on the given host. */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
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
