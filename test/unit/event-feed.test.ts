/**
 * The API's event feed (api/event-feed.ts) against a fake workflow whose every describe and query is counted, with
 * time driven by jest's fake timers: what it asks of Temporal while a task runs, waits for the user, and is over.
 */
import type { KleaEvent } from '../../common/events';
import { CallGate, EventFeeds, type FeedListener, type PollSchedule } from '../../api/event-feed';
import type { TemporalCalls } from '../../api/temporal-calls';
import { eventsQuery } from '../../workflows/task/messages';

const SCHEDULE: PollSchedule = { minMs: 100, maxMs: 800, parkedMs: 10_000 };

/** A workflow as the feed sees it: a run whose history grows with each workflow task, and its event log. */
class FakeRun {
  log: KleaEvent[] = [];
  historyLength = 3;
  runId = 'r1';
  status = 'RUNNING';
  describes = 0;
  queries = 0;
  /** The arguments of each `events` query. */
  asked: Array<{ after: number; before?: number }> = [];

  emit(type: string, extra: Record<string, unknown> = {}) {
    this.historyLength += 3; // scheduled, started, completed
    this.log.push({ seq: this.log.length + 1, at: new Date(0).toISOString(), type, ...extra } as KleaEvent);
  }

  /** A workflow task that changed nothing a client sees (an activity was scheduled). */
  quietTask() {
    this.historyLength += 4;
  }

  calls(): TemporalCalls {
    return {
      describe: async () => {
        this.describes++;
        return { runId: this.runId, historyLength: this.historyLength, status: { name: this.status } };
      },
      query: async (_t: unknown, _q: unknown, args: { after: number; before?: number }) => {
        this.queries++;
        this.asked.push(args);
        return this.log.filter((e) => e.seq > args.after && (args.before === undefined || e.seq < args.before));
      },
    } as unknown as TemporalCalls;
  }
}

const target = { what: 'task "task-s-1-1"', workflowId: 'task-s-1-1' };

function setUp(run: FakeRun, endsWithStatus = true) {
  const feeds = new EventFeeds(run.calls(), SCHEDULE);
  const feed = feeds.feed({ target, eventsQuery, endsWithStatus });
  const seen: number[] = [];
  let after = 0;
  /** A stream that starts after what the feed holds now. */
  const follow = () => {
    after = feed.lastSeq;
    return feed.subscribe(listener);
  };
  const listener: FeedListener = {
    changed: () => {
      for (const e of feed.since(after)) seen.push((after = e.seq));
    },
    failed: (err) => {
      throw err;
    },
  };
  return { feeds, feed, seen, follow };
}

describe('event feed', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('asks the workflow for events only when its history changed, and backs off while it is quiet', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    const { feed, seen, follow } = setUp(run);
    await feed.refresh();
    follow();
    // Act: a minute with nothing happening
    await jest.advanceTimersByTimeAsync(60_000);
    // Assert: one query in all; polls at 100, 200, 400, then every 800 ms
    expect(run.queries).toBe(1);
    expect(run.describes).toBe(1 + 3 + Math.floor((60_000 - 700) / 800));
    // Act: the run moves on
    run.quietTask();
    run.emit('step_started');
    await jest.advanceTimersByTimeAsync(800);
    // Assert
    expect(run.queries).toBe(2);
    expect(feed.since(0).map((e) => e.type)).toEqual(['context', 'step_started']);
    expect(seen).toEqual([2]); // the listener hears of what came after it subscribed
  });

  it('polls a task waiting for review only slowly, and at once when a decision is sent through the API', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    run.emit('plan');
    run.emit('review_requested');
    const { feeds, feed, seen, follow } = setUp(run);
    await feed.refresh();
    follow();
    // Act: parked for a minute
    await jest.advanceTimersByTimeAsync(60_000);
    // Assert: after the first quiet poll, one every parked interval, and no query after the first
    expect(run.queries).toBe(1);
    expect(run.describes).toBe(1 + 1 + 5);
    // Act: the review is approved through the API, and the feed is woken
    run.emit('step_started');
    const describesBefore = run.describes;
    feeds.wake(target.workflowId);
    await jest.advanceTimersByTimeAsync(0);
    // Assert: the new event is there with no time passing
    expect(run.describes).toBe(describesBefore + 1);
    expect(seen).toEqual([4]);
  });

  it('after a cancel wakes a parked task, the feed keeps polling quickly until the task acts on it', async () => {
    // Arrange: parked at a review
    const run = new FakeRun();
    run.emit('review_requested');
    const { feeds, feed, seen, follow } = setUp(run);
    await feed.refresh();
    follow();
    await jest.advanceTimersByTimeAsync(1_000);
    // Act: the cancel signal is in the history, but the workflow has not run yet when the wake polls
    run.historyLength += 2;
    feeds.wake(target.workflowId);
    await jest.advanceTimersByTimeAsync(300);
    run.emit('status', { status: 'cancelled' });
    run.status = 'COMPLETED';
    await jest.advanceTimersByTimeAsync(SCHEDULE.maxMs);
    // Assert: seen within a quiet poll, not a parked one
    expect(seen).toEqual([2]);
    expect(feed.finished).toBe(true);
  });

  it('a message sent through the API wakes a session feed that has backed off', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    const { feeds, feed, seen, follow } = setUp(run, false);
    await feed.refresh();
    follow();
    await jest.advanceTimersByTimeAsync(60_000);
    // Act
    run.emit('answer');
    feeds.wake(target.workflowId);
    await jest.advanceTimersByTimeAsync(0);
    // Assert
    expect(seen).toEqual([2]);
  });

  it('reads a finished task once: after its final status nothing is asked again and its events stay served', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    run.emit('answer');
    run.emit('status', { status: 'done' });
    run.status = 'COMPLETED';
    const { feeds, feed } = setUp(run);
    // Act
    await feed.refresh();
    const again = feeds.feed({ target, eventsQuery, endsWithStatus: true });
    await again.refresh();
    const unsubscribe = again.subscribe({ changed() {}, failed() {} });
    feeds.wake(target.workflowId);
    await jest.advanceTimersByTimeAsync(60_000);
    unsubscribe();
    // Assert
    expect(again).toBe(feed);
    expect(feed.finished).toBe(true);
    expect([run.describes, run.queries]).toEqual([1, 1]);
    expect(feed.since(1).map((e) => e.seq)).toEqual([2, 3]);
  });

  it('ends the feed of a run that closed without a final status (terminated) after reading its last events', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    const { feed, seen, follow } = setUp(run);
    await feed.refresh();
    follow();
    // Act
    run.emit('step_started');
    run.historyLength += 1;
    run.status = 'TERMINATED';
    await jest.advanceTimersByTimeAsync(60_000);
    // Assert
    expect(feed.finished).toBe(true);
    expect(seen).toEqual([2]);
    expect(run.queries).toBe(2);
  });

  it("a session's task status events do not end its feed; a new run after continue-as-new is read", async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    run.emit('status', { status: 'done', taskId: 'task-s-1-1' });
    const { feed, seen, follow } = setUp(run, false);
    await feed.refresh();
    follow();
    // Act: the session continues as new, with the same history length, and answers a message
    const length = run.historyLength;
    run.runId = 'r2';
    run.emit('answer');
    run.historyLength = length;
    await jest.advanceTimersByTimeAsync(100);
    // Assert
    expect(feed.finished).toBe(false);
    expect(seen).toEqual([3]);
  });

  it('a refresh asked while another runs waits for a new one, so it sees what happened before it was asked', async () => {
    // Arrange
    const run = new FakeRun();
    run.emit('context');
    const { feed } = setUp(run);
    // Act
    const first = feed.refresh();
    run.emit('plan');
    const second = feed.refresh();
    const third = feed.refresh();
    await Promise.all([first, second, third]);
    // Assert: two refreshes for three callers, and the second saw the plan
    expect(run.describes).toBe(2);
    expect(feed.since(0).map((e) => e.type)).toEqual(['context', 'plan']);
  });

  it('a run is read whole by its first query, whichever reader comes first; later readers cost nothing more', async () => {
    // Arrange
    const run = new FakeRun();
    for (let i = 0; i < 10; i++) run.emit('step_started');
    const { feed } = setUp(run);
    // Act: a client reconnects with Last-Event-ID 7, then others ask from 3 and from the start
    await feed.cover(7);
    const resumed = feed.since(7).map((e) => e.seq);
    await feed.cover(3);
    await feed.cover(0);
    // Assert
    expect(resumed).toEqual([8, 9, 10]);
    expect(run.asked).toEqual([{ after: 0 }]);
    expect(feed.since(0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('readers asking for older events at once each get them once: the feed holds no event twice', async () => {
    // Arrange: the latest run holds 8 to 10; the earlier runs hold the rest
    const run = new FakeRun();
    for (let i = 0; i < 10; i++) run.emit('step_started');
    const older = run.log.slice(0, 7);
    run.log = run.log.slice(7);
    const feeds = new EventFeeds(run.calls(), SCHEDULE);
    const earlierAsked: Array<[number, number]> = [];
    const feed = feeds.feed({
      target,
      eventsQuery,
      endsWithStatus: true,
      earlier: async (after, before) => {
        earlierAsked.push([after, before]);
        await Promise.resolve();
        return older.filter((e) => e.seq > after && e.seq < before);
      },
    });
    await feed.cover(8);
    // Act
    await Promise.all([feed.cover(2), feed.cover(0), feed.cover(5)]);
    run.log.push({ seq: 11, at: new Date(0).toISOString(), type: 'answer' } as KleaEvent);
    run.historyLength += 3;
    await feed.cover(0);
    // Assert
    expect(feed.since(0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(earlierAsked).toEqual([
      [2, 8],
      [0, 3],
    ]);
  });

  it("events older than the latest run holds are read from the earlier runs, only as far back as they're asked", async () => {
    // Arrange: the latest run holds 6 to 10 (the tail it was handed, and its own); an earlier run holds 1 to 5
    const run = new FakeRun();
    for (let i = 0; i < 10; i++) run.emit('step_started');
    const older = run.log.slice(0, 5);
    run.log = run.log.slice(5);
    const earlierAsked: Array<[number, number]> = [];
    const feeds = new EventFeeds(run.calls(), SCHEDULE);
    const feed = feeds.feed({
      target,
      eventsQuery,
      endsWithStatus: true,
      earlier: async (after, before) => {
        earlierAsked.push([after, before]);
        return older.filter((e) => e.seq > after && e.seq < before);
      },
    });
    // Act
    await feed.cover(7);
    const fromSeven = earlierAsked.length;
    await feed.cover(2);
    await feed.cover(0);
    // Assert
    expect(fromSeven).toBe(0);
    expect(earlierAsked).toEqual([
      [2, 6],
      [0, 3],
    ]);
    expect(feed.since(0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('keeps at most its size of feeds, never dropping one a stream watches', async () => {
    // Arrange
    const run = new FakeRun();
    const feeds = new EventFeeds(run.calls(), SCHEDULE, 2);
    const watched = feeds.feed({ target: { what: 'a', workflowId: 'a' }, eventsQuery, endsWithStatus: true });
    const unsubscribe = watched.subscribe({ changed() {}, failed() {} });
    // Act
    for (const id of ['b', 'c', 'd'])
      feeds.feed({ target: { what: id, workflowId: id }, eventsQuery, endsWithStatus: true });
    // Assert
    expect(feeds.size).toBe(2);
    expect(feeds.feed({ target: { what: 'a', workflowId: 'a' }, eventsQuery, endsWithStatus: true })).toBe(watched);
    unsubscribe();
  });

  it('has at most its limit of queries in flight over all feeds, the others waiting their turn in order', async () => {
    // Arrange
    const gate = new CallGate(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const releases: Array<() => void> = [];
    const call = (n: number) => () =>
      new Promise<number>((resolve) => {
        running++;
        most = Math.max(most, running);
        order.push(n);
        releases.push(() => {
          running--;
          resolve(n);
        });
      });
    // Act
    const all = Promise.all([1, 2, 3, 4, 5].map((n) => gate.run(call(n))));
    for (let i = 0; i < 5; i++) {
      await jest.advanceTimersByTimeAsync(0);
      releases.shift()!();
    }
    // Assert
    expect(await all).toEqual([1, 2, 3, 4, 5]);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });
});
