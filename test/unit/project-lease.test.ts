/** Leases on a group's projects (activities/project/lease.ts): one host at a time changes a project. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { Failure } from '../../common/failures';
import { ProjectLeases } from '../../activities/project/lease';

const LEASE_MS = 9_000;
const PROJECT = '/srv/shared/app';

function group() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-lease-'));
  let now = 1_000_000;
  const events: string[] = [];
  const connected = new Map<string, boolean>();
  /** How long the next check that Temporal is reachable takes (on the test's clock). */
  const slow = new Map<string, number>();
  const host = (hostId: string) => {
    connected.set(hostId, true);
    return new ProjectLeases({
      groupDir: dir,
      hostId,
      leaseMs: LEASE_MS,
      idleMs: 10 * LEASE_MS,
      now: () => now,
      connected: async () => {
        now += slow.get(hostId) ?? 0;
        return connected.get(hostId)!;
      },
      onLost: async (p) => void events.push(`${hostId} lost ${p}`),
      onTaken: async (p, from) => void events.push(`${hostId} took ${p} from ${from?.hostId ?? 'nobody'}`),
    });
  };
  return { dir, host, events, connected, slow, advance: (ms: number) => (now += ms) };
}

/** The holder a refusal names. */
async function refusedFor(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e
  );
  if (!(err instanceof ApplicationFailure) || err.type !== Failure.ProjectHeldElsewhere)
    throw new Error(`not refused: ${String(err)}`);
  expect(err.nonRetryable).toBe(true);
  return (err.details?.[0] as { hostId: string }).hostId;
}

test('the first host takes a free project; another is told who holds it, and takes it only once the lease ran out', async () => {
  const g = group();
  const h1 = g.host('h1');
  const h2 = g.host('h2');
  expect(await h1.hold(PROJECT)).toMatchObject({ hostId: 'h1', epoch: 1 });
  expect(await h1.hold(PROJECT)).toMatchObject({ epoch: 1 });
  expect(await refusedFor(h2.hold(PROJECT))).toBe('h1');
  expect(g.events).toEqual([`h1 took ${PROJECT} from nobody`]);

  // h1 stops renewing (it is gone): its lease runs out, and a whole lease later h2 may take the project.
  g.advance(LEASE_MS + 1);
  expect(await refusedFor(h2.hold(PROJECT))).toBe('h1');
  g.advance(LEASE_MS);
  expect(await h2.hold(PROJECT)).toMatchObject({ hostId: 'h2', epoch: 2 });
  expect(g.events).toEqual([`h1 took ${PROJECT} from nobody`, `h2 took ${PROJECT} from h1`]);

  // h1 comes back: its renewal finds the project taken and gives it up; its next change is sent to h2.
  await h1.tick();
  expect(g.events.at(-1)).toBe(`h1 lost ${PROJECT}`);
  expect(h1.holds(PROJECT)).toBe(false);
  expect(await refusedFor(h1.hold(PROJECT))).toBe('h2');
});

test('a holder renews while it reaches Temporal; cut off, it gives the project up before another host may take it', async () => {
  const g = group();
  const h1 = g.host('h1');
  const h2 = g.host('h2');
  await h1.hold(PROJECT);
  for (let i = 0; i < 5; i++) {
    g.advance(LEASE_MS / 3);
    await h1.tick();
  }
  // Renewed all along: well past its first lease, h2 is still refused.
  expect(await refusedFor(h2.hold(PROJECT))).toBe('h1');
  expect(g.events).toEqual([`h1 took ${PROJECT} from nobody`]);

  g.connected.set('h1', false);
  g.advance(LEASE_MS / 3);
  await h1.tick();
  expect(h1.holds(PROJECT)).toBe(true);
  g.advance(LEASE_MS);
  await h1.tick();
  // The lease ran out unrenewed: h1 stops working on the project (its commands stop with its server) ...
  expect(g.events.at(-1)).toBe(`h1 lost ${PROJECT}`);
  // ... while h2 must still wait, so the two never work on it at once.
  expect(await refusedFor(h2.hold(PROJECT))).toBe('h1');
  g.advance(LEASE_MS);
  expect(await h2.hold(PROJECT)).toMatchObject({ hostId: 'h2', epoch: 2 });
});

test('a host that stops gives its projects up, and another host takes them at once', async () => {
  const g = group();
  const h1 = g.host('h1');
  const h2 = g.host('h2');
  await h1.hold(PROJECT);
  await h1.hold('/srv/shared/other');
  await h1.stop();
  expect(await h2.hold(PROJECT)).toMatchObject({ hostId: 'h2', epoch: 2 });
  expect(await h2.hold('/srv/shared/other')).toMatchObject({ hostId: 'h2', epoch: 2 });
});

test('two hosts taking a free project at once: one takes it, the other is told which', async () => {
  for (let round = 0; round < 20; round++) {
    const g = group();
    const hosts = ['h1', 'h2', 'h3'].map((h) => g.host(h));
    const results = await Promise.allSettled(hosts.map((h) => h.hold(PROJECT)));
    const took = results.filter((r) => r.status === 'fulfilled');
    expect(took).toHaveLength(1);
    const holder = (took[0] as PromiseFulfilledResult<{ hostId: string }>).value.hostId;
    for (const r of results)
      if (r.status === 'rejected')
        expect((r.reason as ApplicationFailure).details?.[0]).toMatchObject({ hostId: holder });
    // One lease file, of epoch 1.
    expect(readdirSync(hosts[0]!.dirOf(PROJECT)).filter((n) => n.endsWith('.json'))).toEqual(['000000000001.json']);
  }
});

test('a host that takes its own project back after another held it starts afresh (a new epoch)', async () => {
  const g = group();
  const h1 = g.host('h1');
  const h2 = g.host('h2');
  await h1.hold(PROJECT);
  await h1.stop();
  await h2.hold(PROJECT);
  await h2.stop();
  const h1again = g.host('h1');
  expect(await h1again.hold(PROJECT)).toMatchObject({ hostId: 'h1', epoch: 3 });
  expect(g.events.at(-1)).toBe(`h1 took ${PROJECT} from h2`);
  expect(h1again.holds(PROJECT)).toBe(true);
});

test('a renewal whose answer from Temporal comes after the lease ran out does not renew it: the project is given up', async () => {
  const g = group();
  const h1 = g.host('h1');
  await h1.hold(PROJECT);
  g.advance(LEASE_MS / 3);
  g.slow.set('h1', LEASE_MS);
  await h1.tick();
  expect(g.events.at(-1)).toBe(`h1 lost ${PROJECT}`);
  expect(h1.holds(PROJECT)).toBe(false);
});

test('a lease about to run out is given up by its own timer, with no renewal round to notice it', async () => {
  jest.useFakeTimers({ now: 5_000_000 });
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-lease-'));
    const lost: number[] = [];
    const h1 = new ProjectLeases({
      groupDir: dir,
      hostId: 'h1',
      leaseMs: LEASE_MS,
      connected: async () => true,
      onLost: async () => void lost.push(Date.now()),
    });
    const { until } = await h1.hold(PROJECT);
    // Never started (no renewal rounds), as a host whose event loop or renewals are stuck.
    jest.advanceTimersByTime(LEASE_MS - 1_001);
    expect(lost).toEqual([]);
    expect(h1.holds(PROJECT)).toBe(true);
    jest.advanceTimersByTime(1);
    expect(lost).toHaveLength(1);
    // A second before the lease's end: another host may take it a whole lease after that end.
    expect(until - lost[0]!).toBe(1_000);
    expect(h1.holds(PROJECT)).toBe(false);
  } finally {
    jest.useRealTimers();
  }
});

test('an unreadable newest lease file does not keep the project from being taken', async () => {
  const g = group();
  const h1 = g.host('h1');
  await h1.hold(PROJECT);
  await h1.stop();
  writeFileSync(path.join(h1.dirOf(PROJECT), '000000000002.json'), '{"cut off');
  const h2 = g.host('h2');
  expect(await h2.hold(PROJECT)).toMatchObject({ hostId: 'h2', epoch: 3 });
});

test('a lease nothing uses is given up after a while, never while a change runs', async () => {
  const g = group();
  const h1 = g.host('h1');
  const h2 = g.host('h2');
  let finish!: () => void;
  let started!: () => void;
  const began = new Promise<void>((r) => (started = r));
  const running = h1.using(PROJECT, () => {
    started();
    return new Promise<void>((r) => (finish = r));
  });
  await began;
  // A change runs for longer than the idle time: renewed all along, and kept.
  for (let i = 0; i < 40; i++) {
    g.advance(LEASE_MS / 3);
    await h1.tick();
  }
  expect(h1.holds(PROJECT)).toBe(true);
  finish();
  await running;
  for (let i = 0; i < 29; i++) {
    g.advance(LEASE_MS / 3);
    await h1.tick();
  }
  expect(h1.holds(PROJECT)).toBe(true);
  g.advance(LEASE_MS / 3 + 1);
  await h1.tick();
  // Idle for longer than its idle time: given up, its server stopped, and another host takes it at once.
  expect(h1.holds(PROJECT)).toBe(false);
  expect(g.events.at(-1)).toBe(`h1 lost ${PROJECT}`);
  expect(await h2.hold(PROJECT)).toMatchObject({ hostId: 'h2', epoch: 2 });
});

test('a lease file that cannot be read is not taken for a free lease', async () => {
  const g = group();
  const h1 = g.host('h1');
  await h1.hold(PROJECT);
  // The holder's file, unreadable for a moment (here: a directory where the file is; an I/O error or a stale handle
  // on a network volume does the same): the other host is refused an answer, not handed the project.
  const file = path.join(h1.dirOf(PROJECT), '000000000001.json');
  rmSync(file);
  mkdirSync(file);
  const h2 = g.host('h2');
  await expect(h2.hold(PROJECT)).rejects.toThrow(/EISDIR/);
  expect(readdirSync(h1.dirOf(PROJECT)).filter((n) => n.endsWith('.json'))).toEqual(['000000000001.json']);
});

test('an idle lease is released only once the host has stopped working on the project', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-lease-'));
  let now = 1_000_000;
  const seen: Array<boolean | undefined> = [];
  const h1: ProjectLeases = new ProjectLeases({
    groupDir: dir,
    hostId: 'h1',
    leaseMs: LEASE_MS,
    idleMs: LEASE_MS,
    now: () => now,
    connected: async () => true,
    onLost: async () => {
      // Its server takes a moment to stop: the lease must still be held by it meanwhile.
      await new Promise((r) => setTimeout(r, 50));
      seen.push((await h1.current(PROJECT))?.released);
    },
  });
  await h1.hold(PROJECT);
  now += LEASE_MS / 3;
  await h1.tick();
  // Unused for longer than its idle time, and its lease not yet near its end.
  now += (2 * LEASE_MS) / 3 + 1;
  await h1.tick();
  // (toStrictEqual: toEqual takes [] for [undefined].)
  expect(seen).toStrictEqual([undefined]);
  expect((await h1.current(PROJECT))?.released).toBe(true);
});
