/** A project's home on a cluster: host ids, where a worker says its host, and how the API picks a home. */
import { resolveConfig } from '../../common/config';
import { HomeSchema, hostOfIdentity, hostTaskQueue } from '../../common/home';
import { workerIdentity } from '../../common/sandbox-status';
import { rendezvousHost } from '../../api/home';

test('a host has its own task queue, and a worker identity names its host', () => {
  expect(hostTaskQueue('h2')).toBe('klea-host-h2');
  expect(hostOfIdentity(workerIdentity('123@box host=h2', 'on'))).toBe('h2');
  expect(hostOfIdentity(workerIdentity('123@box', 'on'))).toBeNull();
  expect(hostOfIdentity(workerIdentity('123@box host=h1', 'unavailable', 'no user namespaces'))).toBe('h1');
  expect(hostOfIdentity(undefined)).toBeNull();
});

test('host ids are short lower-case names; a home waits 30 s for its host unless told otherwise', () => {
  expect(HomeSchema.parse({ hostId: 'build-2' })).toEqual({ hostId: 'build-2', waitMs: 30_000 });
  for (const bad of ['', 'H1', 'a b', '-x', 'x'.repeat(64)])
    expect(HomeSchema.safeParse({ hostId: bad }).success).toBe(false);
});

test('KLEA_HOST_ID and KLEA_HOST_WAIT_MS set worker.host_id and worker.host_wait_ms', () => {
  const config = resolveConfig({}, { KLEA_HOST_ID: 'h3', KLEA_HOST_WAIT_MS: '2500' });
  expect(config.worker).toMatchObject({ host_id: 'h3', host_wait_ms: 2500 });
  expect(resolveConfig({}, {}).worker).toMatchObject({ host_id: null, host_wait_ms: 30_000 });
  expect(() => resolveConfig({}, { KLEA_HOST_ID: 'Not A Host' })).toThrow(/KLEA_HOST_ID: a host id is/);
});

test('the API gives a project the same home while the hosts stay the same, and moves only what a gone host held', () => {
  const hosts = ['h1', 'h2', 'h3'];
  const projects = Array.from({ length: 60 }, (_, i) => `/srv/projects/p${i}`);
  const home = new Map(projects.map((p) => [p, rendezvousHost(hosts, p)]));
  for (const p of projects) expect(rendezvousHost([...hosts].reverse(), p)).toBe(home.get(p));
  // Every host holds some of them.
  for (const h of hosts) expect([...home.values()]).toContain(h);
  // h3 goes away: its projects move, and no other project does.
  for (const p of projects) {
    const now = rendezvousHost(['h1', 'h2'], p);
    if (home.get(p) !== 'h3') expect(now).toBe(home.get(p));
  }
  expect(rendezvousHost([], '/srv/projects/p0')).toBeUndefined();
});
