/** A project's home on a cluster: host ids, where a worker says its host, and how the API picks a home. */
import { resolveConfig } from '../../common/config-resolve';
import {
  groupOfIdentity,
  groupTaskQueue,
  HomeSchema,
  hostIdentityTag,
  hostOfIdentity,
  hostRootsOfIdentity,
  hostTaskQueue,
  underRoots,
} from '../../common/home';
import { workerIdentity } from '../../common/sandbox-status';
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import { Failure } from '../../common/failures';
import { rendezvousHost } from '../../api/home';
import { atHome, HomeRoute } from '../../workflows/shared/home';

test('a host has its own task queue, and a worker identity names its host', () => {
  expect(hostTaskQueue('h2')).toBe('klea-host-h2');
  expect(hostOfIdentity(workerIdentity('123@box host=h2', 'on'))).toBe('h2');
  expect(hostOfIdentity(workerIdentity('123@box', 'on'))).toBeNull();
  expect(hostOfIdentity(workerIdentity('123@box host=h1', 'unavailable', 'no user namespaces'))).toBe('h1');
  expect(hostOfIdentity(undefined)).toBeNull();
});

test('a host says in its identity which project roots it holds', () => {
  const identity = workerIdentity(`123@box${hostIdentityTag('h1', ['/srv/projects', '/home/a b'])}`, 'on');
  expect(hostOfIdentity(identity)).toBe('h1');
  expect(hostRootsOfIdentity(identity)).toEqual(['/srv/projects', '/home/a b']);
  expect(hostRootsOfIdentity(workerIdentity(`123@box${hostIdentityTag('h1', null)}`, 'on'))).toBeNull();
  expect(hostOfIdentity(workerIdentity(`123@box${hostIdentityTag('h1', null)}`, 'on'))).toBe('h1');
  expect(underRoots('/srv/projects/app', ['/srv/projects'])).toBe(true);
  expect(underRoots('/srv/projects', ['/srv/projects'])).toBe(true);
  expect(underRoots('/srv/projects-old/app', ['/srv/projects'])).toBe(false);
  expect(underRoots('/srv/app', ['/'])).toBe(true);
});

test('host ids are short lower-case names; a home waits 30 s for its host unless told otherwise', () => {
  expect(HomeSchema.parse({ hostId: 'build-2' })).toEqual({ hostId: 'build-2', waitMs: 30_000 });
  for (const bad of ['', 'H1', 'a b', '-x', 'x'.repeat(64)])
    expect(HomeSchema.safeParse({ hostId: bad }).success).toBe(false);
});

test('a home names a host or a group, never both; a host says its group in its identity', () => {
  expect(HomeSchema.parse({ groupId: 'g1' })).toEqual({ groupId: 'g1', waitMs: 30_000 });
  expect(HomeSchema.safeParse({ hostId: 'h1', groupId: 'g1' }).success).toBe(false);
  expect(HomeSchema.safeParse({}).success).toBe(false);
  const identity = workerIdentity(`1@box${hostIdentityTag('h3', ['/srv/shared'], 'g1')}`, 'on');
  expect(hostOfIdentity(identity)).toBe('h3');
  expect(groupOfIdentity(identity)).toBe('g1');
  expect(hostRootsOfIdentity(identity)).toEqual(['/srv/shared']);
  expect(groupOfIdentity(workerIdentity(`1@box${hostIdentityTag('h1', null)}`, 'on'))).toBeNull();
  expect(groupTaskQueue('g1')).toBe('klea-group-g1');
});

test('a host of a group needs a host id and the group directory', () => {
  const env = { KLEA_HOST_ID: 'h3', KLEA_GROUP_ID: 'g1', KLEA_GROUP_DIR: '/srv/klea-g1', KLEA_GROUP_LEASE_MS: '6000' };
  expect(resolveConfig({}, env).worker).toMatchObject({
    group_id: 'g1',
    group_dir: '/srv/klea-g1',
    group_lease_ms: 6000,
  });
  expect(resolveConfig({}, {}).worker).toMatchObject({ group_id: null, group_dir: null, group_lease_ms: 15_000 });
  expect(() => resolveConfig({}, { KLEA_GROUP_ID: 'g1', KLEA_GROUP_DIR: '/srv/klea-g1' })).toThrow(
    /KLEA_GROUP_ID: a host of a group needs worker.host_id/
  );
  expect(() => resolveConfig({}, { KLEA_HOST_ID: 'h3', KLEA_GROUP_DIR: '/srv/klea-g1' })).toThrow(
    /KLEA_GROUP_DIR: the group's directory is for a host of a group/
  );
  expect(() => resolveConfig({}, { KLEA_HOST_ID: 'h3', KLEA_GROUP_ID: 'g1' })).toThrow(
    /KLEA_GROUP_ID: a host of a group needs worker.group_dir/
  );
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

describe('an activity at its home (workflows/shared/home.ts)', () => {
  const notTaken = () =>
    new ActivityFailure(
      'not taken',
      'callTool',
      '1',
      'TIMEOUT',
      undefined,
      new TimeoutFailure('timeout', undefined, 'SCHEDULE_TO_START')
    );
  const home = { hostId: 'h2', waitMs: 1500 };

  test('without a home it is scheduled once, with no options', async () => {
    const seen: unknown[] = [];
    const watch = { away: jest.fn(), back: jest.fn() };
    await expect(atHome(undefined, watch, async (o) => (seen.push(o), 'ok'))).resolves.toBe('ok');
    expect(seen).toEqual([{}]);
    expect(watch.away).not.toHaveBeenCalled();
  });

  test("at a home it goes to the host's queue, waits for a gone host as long as it takes, and says when it is back", async () => {
    const seen: unknown[] = [];
    const watch = { away: jest.fn(), back: jest.fn() };
    let tries = 0;
    const result = await atHome(home, watch, async (o) => {
      seen.push(o);
      if (++tries < 3) throw notTaken();
      return 'done';
    });
    expect(result).toBe('done');
    expect(seen).toEqual(Array(3).fill({ taskQueue: 'klea-host-h2', scheduleToStartTimeout: 1500 }));
    expect(watch.away.mock.calls).toEqual([['h2'], ['h2']]);
    expect(watch.back.mock.calls).toEqual([['h2']]);
  });

  test('any other failure (a timeout after it started, a cancellation) is the caller’s, at once', async () => {
    const watch = { away: jest.fn(), back: jest.fn() };
    const started = new ActivityFailure(
      'lost',
      'callTool',
      '1',
      'TIMEOUT',
      undefined,
      new TimeoutFailure('hb', undefined, 'HEARTBEAT')
    );
    await expect(atHome(home, watch, () => Promise.reject(started))).rejects.toBe(started);
    expect(watch.away).not.toHaveBeenCalled();
    expect(watch.back).not.toHaveBeenCalled();
  });

  test("at a group's home it goes to the group's queue, then to the host that holds the project, and back to the group when that host is gone", async () => {
    const group = { groupId: 'g7', waitMs: 1500 };
    const heldBy = (hostId: string) =>
      new ActivityFailure(
        'held',
        'callTool',
        '1',
        'NON_RETRYABLE_FAILURE',
        undefined,
        ApplicationFailure.nonRetryable('held elsewhere', Failure.ProjectHeldElsewhere, { hostId, epoch: 1 })
      );
    const seen: Array<string | undefined> = [];
    const watch = { away: jest.fn(), back: jest.fn() };
    const answers: Array<() => never | string> = [
      () => {
        throw heldBy('h4');
      },
      () => {
        throw notTaken();
      },
      () => 'ran',
    ];
    const route = new HomeRoute();
    const run = () => atHome(group, watch, async (o) => (seen.push(o.taskQueue), answers.shift()!()), route);
    await expect(run()).resolves.toBe('ran');
    // Refused by a host that does not hold it: sent to h4 at once; h4 gone: the group again, whose host took it.
    expect(seen).toEqual(['klea-group-g7', 'klea-host-h4', 'klea-group-g7']);
    expect(watch.away.mock.calls).toEqual([['h4']]);
    expect(watch.back.mock.calls).toEqual([['h4']]);

    // Told of the holder, the run's next activity goes straight to it.
    answers.push(() => {
      throw heldBy('h5');
    });
    answers.push(() => 'ran at h5');
    await expect(run()).resolves.toBe('ran at h5');
    answers.push(() => 'again at h5');
    await expect(run()).resolves.toBe('again at h5');
    expect(seen.slice(3)).toEqual(['klea-group-g7', 'klea-host-h5', 'klea-host-h5']);
  });

  test('an attempt refused for a holder another activity of the run has just learnt of is sent there, not waited on', async () => {
    const group = { groupId: 'g8', waitMs: 1500 };
    const route = new HomeRoute();
    const seen: Array<string | undefined> = [];
    const watch = { away: jest.fn(), back: jest.fn() };
    let first = true;
    const result = await atHome(
      group,
      watch,
      async (o) => {
        seen.push(o.taskQueue);
        if (!first) return 'ran';
        first = false;
        // Meanwhile a parallel activity of the run was told the holder, and so is this one now.
        route.holder = 'h6';
        throw new ActivityFailure(
          'held',
          'callTool',
          '2',
          'NON_RETRYABLE_FAILURE',
          undefined,
          ApplicationFailure.nonRetryable('held elsewhere', Failure.ProjectHeldElsewhere, { hostId: 'h6', epoch: 1 })
        );
      },
      route
    );
    expect(result).toBe('ran');
    expect(seen).toEqual(['klea-group-g8', 'klea-host-h6']);
    expect(watch.away).not.toHaveBeenCalled();
  });
});
