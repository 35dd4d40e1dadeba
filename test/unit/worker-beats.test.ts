import Long from 'long';
import { temporal } from '@temporalio/proto';
import { BeatClock, beatFresh, beatOf, taskQueueQuery, workerAlive, type Beat } from '../../api/worker-beats';

const { WORKER_STATUS_RUNNING, WORKER_STATUS_SHUTTING_DOWN } = temporal.api.enums.v1.WorkerStatus;
const NOW = 1_800_000_000_000;
const POLL_FRESH = 90_000;
const beat = (over: Partial<Beat> = {}): Beat => ({
  key: 'w1',
  identity: '1@vm host=h1',
  taskQueue: 'klea-host-h1',
  running: true,
  sentAt: NOW - 1_000,
  everyMs: 5_000,
  ...over,
});
/** Seen by the API when it was sent (clocks that agree). */
const seen = (b: Beat) => ({ beat: b, firstSeen: b.sentAt ?? NOW });

describe('worker heartbeats', () => {
  test('a heartbeat within three of its intervals is fresh; a worker that stopped beating is not', () => {
    expect(beatFresh(beat(), NOW, NOW - 1_000)).toBe(true);
    expect(beatFresh(beat({ sentAt: NOW - 19_000 }), NOW, NOW - 19_000)).toBe(true);
    expect(beatFresh(beat({ sentAt: NOW - 21_000 }), NOW, NOW - 21_000)).toBe(false);
    // A worker on the SDK's default minute gets its own window.
    expect(beatFresh(beat({ everyMs: 60_000, sentAt: NOW - 150_000 }), NOW, NOW - 150_000)).toBe(true);
  });

  test("a host whose clock is behind is not gone while its heartbeats keep coming (the API's clock counts)", () => {
    // Stamped 40 s behind the API's clock, first seen by the API a second ago: fresh.
    expect(beatFresh(beat({ sentAt: NOW - 41_000 }), NOW, NOW - 1_000)).toBe(true);
    // The same heartbeat, still the latest after the window on the API's clock: the host stopped beating.
    expect(beatFresh(beat({ sentAt: NOW - 41_000 }), NOW, NOW - 21_000)).toBe(false);
    // Older than any clock could be behind: stale on first sight.
    expect(beatFresh(beat({ sentAt: NOW - 200_000 }), NOW, NOW)).toBe(false);
  });

  test('the API remembers when it first saw each heartbeat, until the worker sends another', () => {
    const clock = new BeatClock();
    expect(clock.firstSeen(beat({ sentAt: 10 }), 1_000)).toBe(1_000);
    expect(clock.firstSeen(beat({ sentAt: 10 }), 9_000)).toBe(1_000);
    expect(clock.firstSeen(beat({ sentAt: 20 }), 9_500)).toBe(9_500);
    expect(clock.firstSeen(beat({ key: 'w2', sentAt: 20 }), 9_600)).toBe(9_600);
  });

  test('a first heartbeat tells no interval: the worker counts by its polls until the second', () => {
    expect(beatFresh(beat({ everyMs: null }), NOW, NOW)).toBeNull();
    expect(workerAlive([seen(beat({ everyMs: null, sentAt: NOW - 30_000 }))], NOW - 2_000, NOW, POLL_FRESH)).toBe(true);
    expect(workerAlive([seen(beat({ everyMs: null }))], NOW - 100_000, NOW, POLL_FRESH)).toBe(false);
  });

  test('a worker killed after its heartbeats began is gone though its last poll is fresh; control: one that beats', () => {
    expect(workerAlive([seen(beat({ sentAt: NOW - 25_000 }))], NOW - 3_000, NOW, POLL_FRESH)).toBe(false);
    expect(workerAlive([seen(beat())], NOW - 3_000, NOW, POLL_FRESH)).toBe(true);
  });

  test('a worker that stopped cleanly is gone at once; the same identity polling after it stopped is a new worker', () => {
    const stopped = seen(beat({ running: false, sentAt: NOW - 2_000 }));
    expect(workerAlive([stopped], NOW - 5_000, NOW, POLL_FRESH)).toBe(false);
    // Its own last polls, in the moment it stops, come after the heartbeat that says so (seen on a loaded machine).
    expect(workerAlive([stopped], NOW - 1_900, NOW, POLL_FRESH)).toBe(false);
    // Another worker under the same identity polls a second or so after; control: one instance's stop still counts.
    expect(
      workerAlive(
        [stopped, seen(beat({ key: 'w0', running: false, sentAt: NOW - 9_000 }))],
        NOW - 1_900,
        NOW,
        POLL_FRESH
      )
    ).toBe(false);
    expect(workerAlive([stopped], NOW - 1_000, NOW, POLL_FRESH)).toBe(true);
    // Restarted after a kill: the old instance's heartbeats are stale, the new one's first says it runs.
    const old = seen(beat({ sentAt: NOW - 60_000 }));
    expect(workerAlive([old, seen(beat({ key: 'w2', everyMs: null }))], NOW - 500, NOW, POLL_FRESH)).toBe(true);
  });

  test('a worker that sends no heartbeats is judged by its polls alone, as on a server that keeps none', () => {
    expect(workerAlive([], NOW - 60_000, NOW, POLL_FRESH)).toBe(true);
    expect(workerAlive([], NOW - 95_000, NOW, POLL_FRESH)).toBe(false);
  });

  test('read from what ListWorkers answers', () => {
    const info = (status: number) => ({
      workerHeartbeat: {
        workerInstanceKey: 'k7',
        workerIdentity: '7@vm host=h2',
        taskQueue: 'klea-host-h2',
        status,
        heartbeatTime: { seconds: Long.fromNumber(1_800_000_000), nanos: 500_000_000 },
        elapsedSinceLastHeartbeat: { seconds: Long.fromNumber(4), nanos: 999_000_000 },
      },
    });
    expect(beatOf(info(WORKER_STATUS_RUNNING))).toEqual({
      key: 'k7',
      identity: '7@vm host=h2',
      taskQueue: 'klea-host-h2',
      running: true,
      sentAt: 1_800_000_000_500,
      everyMs: 4_999,
    });
    expect(beatOf(info(WORKER_STATUS_SHUTTING_DOWN))?.running).toBe(false);
    const first = info(WORKER_STATUS_RUNNING);
    first.workerHeartbeat.elapsedSinceLastHeartbeat = { seconds: Long.fromNumber(0), nanos: 0 };
    expect(beatOf(first)?.everyMs).toBeNull();
    expect(beatOf({})).toBeNull();
  });

  test('the query names one task queue, and refuses a name that would break out of its quotes', () => {
    expect(taskQueueQuery('klea-host-h1')).toBe('TaskQueue = "klea-host-h1"');
    expect(() => taskQueueQuery('x" OR TaskQueue != "')).toThrow(/quote/);
  });
});
