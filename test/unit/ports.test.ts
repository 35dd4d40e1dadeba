/**
 * Free ports are picked below the range the kernel takes outgoing connections' local ports from: a port from that
 * range can be taken by any connection before the server that picked it binds it ("address already in use").
 */
import { readFileSync } from 'node:fs';
import { findFreePort, portProblem } from '../../runtime/ports';

const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('findFreePort', () => {
  it('picks ports a server can bind, below the range outgoing connections use', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => findFreePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(low);
      expect(await portProblem(port)).toBeNull();
    }
  });
});
