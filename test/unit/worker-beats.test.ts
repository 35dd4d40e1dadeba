import Long from 'long';
import { temporal } from '@temporalio/proto';
import { beatOf, isAlive, taskQueueQuery, type Beat } from '../../api/worker-beats';

const { WORKER_STATUS_RUNNING, WORKER_STATUS_SHUTTING_DOWN } = temporal.api.enums.v1.WorkerStatus;
const NOW = 1_800_000_000_000;
const beat = (over: Partial<Beat> = {}): Beat => ({
  identity: '1@vm host=h1',
  taskQueue: 'klea-host-h1',
  running: true,
  sentAt: NOW - 1_000,
  everyMs: 5_000,
  ...over,
});

describe('worker heartbeats', () => {
  test('a worker that beat within three of its intervals is alive; one that stopped beating is not', () => {
    expect(isAlive(beat(), NOW)).toBe(true);
    expect(isAlive(beat({ sentAt: NOW - 19_000 }), NOW)).toBe(true);
    expect(isAlive(beat({ sentAt: NOW - 21_000 }), NOW)).toBe(false);
  });

  test('a worker that says it is stopping is gone at once', () => {
    expect(isAlive(beat({ running: false }), NOW)).toBe(false);
  });

  test("a worker's own interval sets the window; without one, the SDK's default minute", () => {
    expect(isAlive(beat({ everyMs: 60_000, sentAt: NOW - 150_000 }), NOW)).toBe(true);
    expect(isAlive(beat({ everyMs: null, sentAt: NOW - 150_000 }), NOW)).toBe(true);
    expect(isAlive(beat({ everyMs: null, sentAt: NOW - 190_000 }), NOW)).toBe(false);
    expect(isAlive(beat({ sentAt: null }), NOW)).toBe(false);
  });

  test('read from what ListWorkers answers', () => {
    const info = (status: number) => ({
      workerHeartbeat: {
        workerIdentity: '7@vm host=h2',
        taskQueue: 'klea-host-h2',
        status,
        heartbeatTime: { seconds: Long.fromNumber(1_800_000_000), nanos: 500_000_000 },
        elapsedSinceLastHeartbeat: { seconds: Long.fromNumber(4), nanos: 999_000_000 },
      },
    });
    expect(beatOf(info(WORKER_STATUS_RUNNING))).toEqual({
      identity: '7@vm host=h2',
      taskQueue: 'klea-host-h2',
      running: true,
      sentAt: 1_800_000_000_500,
      everyMs: 4_999,
    });
    expect(beatOf(info(WORKER_STATUS_SHUTTING_DOWN))?.running).toBe(false);
    // Its first heartbeat comes one interval after it started.
    const first = info(WORKER_STATUS_RUNNING);
    first.workerHeartbeat.elapsedSinceLastHeartbeat = { seconds: Long.fromNumber(0), nanos: 0 };
    const started = { startTime: { seconds: Long.fromNumber(1_799_999_995), nanos: 500_000_000 } };
    expect(beatOf({ workerHeartbeat: { ...first.workerHeartbeat, ...started } })?.everyMs).toBe(5_000);
    expect(beatOf(first)?.everyMs).toBeNull();
    expect(beatOf({})).toBeNull();
  });

  test('the query names one task queue, and refuses a name that would break out of its quotes', () => {
    expect(taskQueueQuery('klea-host-h1')).toBe('TaskQueue = "klea-host-h1"');
    expect(() => taskQueueQuery('x" OR TaskQueue != "')).toThrow(/quote/);
  });
});
