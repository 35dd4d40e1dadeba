/**
 * One event feed per workflow in the API process, shared by every stream and `?after=` request on it, so that
 * watching a task costs the workers almost nothing:
 *
 * - What the API has seen is served from memory. The `events` query is asked only when the workflow changed:
 *   each refresh first describes the run (answered by the Temporal server from the run's state, no worker, no
 *   replay) and queries only when the run id or history length differs from what they were before the last
 *   query. A workflow's state changes only when a workflow task completes, which always lengthens the history,
 *   so an unchanged length means the events are unchanged.
 * - Polls back off while a run is quiet (`minMs` doubling to `maxMs`), and slow to `parkedMs` while a task waits
 *   for the user (its last event asks for a review, answers or a permission). A decision, cancel or message this
 *   API sends wakes the feed at once.
 * - A finished run (a task's final `status` event, or the run closed) is read once more for its last events and
 *   never queried again: its events are served from memory, and its streams end after the last one. A rewind through
 *   this API revives it (`EventFeeds.revive`): the reset made a new run, whose events come after its last seq. A session whose
 *   run completed is asleep, not finished: the next message wakes it in a new run that continues its events, so its
 *   feed keeps describing it (slowly, since nothing changes until then).
 *
 * - A task that continued as new is followed to its latest run (describe and query name the workflow, not a run);
 *   the new run holds the tail of the log before it, and a feed further behind reads the rest from the earlier
 *   runs the task names (`FeedSource.earlier`), once: those runs never change.
 * - Earlier runs are read only as far back as a reader asks: the latest run is read whole (one query), and the
 *   earlier runs only for the events after the oldest `after` a reader has asked from (0 from the start, or the
 *   Last-Event-ID a client reconnects with). A reader asking for older events later has only those read, so a
 *   client resuming near the end of a long task never has its earlier runs replayed, and no range is read twice.
 *
 * Feeds are kept in a bounded LRU; one nobody streams may be dropped and is rebuilt on demand. Events carry their
 * `seq`, so what a client gets after `after` is gap-free and exactly once whichever feed (or API process) serves it.
 */
import type { QueryDefinition } from '@temporalio/client';
import type { KleaEvent } from '../common/events';
import { isFinalStatus } from '../common/status';
import type { Target, TemporalCalls } from './temporal-calls';

/** Both workflows answer the same `events` query; each route passes its own definition. */
export type EventsQuery = QueryDefinition<KleaEvent[], [{ after?: number; before?: number }?]>;

export interface PollSchedule {
  /** The first poll after a change or a wake. */
  minMs: number;
  /** The longest wait between polls of a quiet run. */
  maxMs: number;
  /** The wait between polls of a task waiting for the user. */
  parkedMs: number;
}

export const DEFAULT_POLL_SCHEDULE: PollSchedule = { minMs: 250, maxMs: 2_000, parkedMs: 20_000 };
export const DEFAULT_FEED_CACHE_SIZE = 500;
/**
 * Event queries the API has in flight at once, over all feeds. A query to a run that is not in a worker's cache
 * replays its history: hundreds of clients reconnecting together (after an API restart) would otherwise replay
 * hundreds of histories at once, and each query would wait past its deadline.
 */
export const DEFAULT_QUERY_CONCURRENCY = 16;

/** Runs at most `limit` calls at once; the others wait their turn, in order. */
export class CallGate {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((r) => this.queue.push(r));
    else this.running++;
    try {
      return await call();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** Quiet polls after a wake before a waiting task is polled slowly again (about 15 s at the default schedule). */
const WOKEN_POLLS = 8;

/** Events after which a task waits for the user (docs/architecture.md §4): nothing changes until someone answers. */
const WAITING_EVENTS = new Set<string>(['review_requested', 'questions', 'permission_requested']);

export interface FeedSource {
  target: Target;
  eventsQuery: EventsQuery;
  /** A task's log ends with its final `status` event; a session's `status` events are its tasks'. */
  endsWithStatus: boolean;
  /**
   * The events with seq after `after` and before `before` from the workflow's earlier runs: a run that continued
   * as new holds only the tail of the log before it, so a feed further behind reads the rest there.
   */
  earlier?: (after: number, before: number) => Promise<KleaEvent[]>;
}

export interface FeedListener {
  /** New events, or the feed finished. */
  changed(): void;
  /** A poll failed; the listener should give up (a client reconnects with Last-Event-ID). */
  failed(err: unknown): void;
}

export class EventFeed {
  private log: KleaEvent[] = [];
  /** The feed holds every event after this seq, up to `lastSeq` (null: not read yet). */
  private low: number | null = null;
  /** The oldest a reader has asked for: events after this seq (null: nobody has asked yet). */
  private floor: number | null = null;
  /** Older events being read for a reader: one such read at a time. */
  private lowering: Promise<void> = Promise.resolve();
  /** `runId:historyLength` as described before the last query: the events are current while it holds. */
  private seenAt: string | null = null;
  private done = false;
  private readonly listeners = new Set<FeedListener>();
  private inFlight: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private waitMs: number;
  /**
   * Quiet polls left before a waiting task may be polled slowly again after a wake: what woke it (a cancel
   * signal, say) may be acted on a moment later, and its events must not then wait for a parked poll.
   */
  private wokenPolls = 0;

  constructor(
    private readonly calls: TemporalCalls,
    private readonly source: FeedSource,
    private readonly schedule: PollSchedule,
    private readonly gate: CallGate = new CallGate(DEFAULT_QUERY_CONCURRENCY)
  ) {
    this.waitMs = schedule.minMs;
  }

  get workflowId(): string {
    return this.source.target.workflowId;
  }

  /** True once no event can follow the ones held: nothing more is asked of the workflow. */
  get finished(): boolean {
    return this.done;
  }

  get watched(): boolean {
    return this.listeners.size > 0 || this.inFlight !== null;
  }

  get lastSeq(): number {
    return this.log.at(-1)?.seq ?? this.low ?? 0;
  }

  /** Events with seq greater than `after`, oldest first (call `cover(after)` first: the feed holds them then). */
  since(after: number): KleaEvent[] {
    if (after >= this.lastSeq) return [];
    const from = this.log.findIndex((e) => e.seq > after);
    return from < 0 ? [] : this.log.slice(from);
  }

  /**
   * Brings the feed up to date and makes it hold every event after `after` that the workflow still has: the first
   * read takes the earlier runs back to there only; a reader asking for older events has those (and only those)
   * read.
   */
  async cover(after: number): Promise<void> {
    this.floor = Math.min(this.floor ?? after, after);
    await this.refresh();
    if (this.low === null || after >= this.low || !this.source.earlier) return;
    const lowered = this.lowering.then(() => this.lower(after));
    this.lowering = lowered.catch(() => undefined);
    await lowered;
  }

  /** Reads the events after `after` that the feed lacks below what it holds, from the earlier runs. */
  private async lower(after: number): Promise<void> {
    const low = this.low ?? 0;
    if (after >= low || !this.source.earlier) return;
    const older = await this.source.earlier(after, low + 1);
    this.log = [...older.filter((e) => e.seq > after && e.seq <= low), ...this.log];
    this.low = after;
  }

  /**
   * Brings the feed up to date with the workflow. Concurrent callers share one refresh; a caller that arrives
   * while one runs waits for the next, which starts after it, so it sees everything that happened before it came.
   */
  refresh(): Promise<void> {
    if (this.done) return Promise.resolve();
    if (!this.inFlight) return this.start();
    this.next ??= this.inFlight.then(
      () => this.start(),
      () => this.start()
    );
    return this.next;
  }

  /**
   * A rewind reset the task into a new run, which has more to say: a finished feed goes on from its last seq (the new
   * run's events come after it).
   */
  revive(): void {
    if (!this.done) return;
    this.done = false;
    this.seenAt = null;
  }

  private start(): Promise<void> {
    this.next = null;
    const run = this.poll().finally(() => {
      if (this.inFlight === run) this.inFlight = null;
    });
    this.inFlight = run;
    return run;
  }

  private async poll(): Promise<void> {
    if (this.done) return;
    const desc = await this.calls.describe(this.source.target);
    const at = `${desc.runId}:${desc.historyLength}`;
    // A session's completed run went to sleep: a later run may continue its log. A task's run that continued as new
    // is not the end either: the latest run goes on (the next describe finds it).
    const asleep = !this.source.endsWithStatus && desc.status.name === 'COMPLETED';
    const closed = desc.status.name !== 'RUNNING' && desc.status.name !== 'CONTINUED_AS_NEW' && !asleep;
    if (at === this.seenAt) {
      // Unchanged since the last query, which therefore saw every event the run has.
      if (closed) this.finish();
      else if (this.wokenPolls === 0 && this.waiting()) this.waitMs = this.schedule.parkedMs;
      else {
        this.wokenPolls = Math.max(0, this.wokenPolls - 1);
        this.waitMs = Math.min(this.waitMs * 2, this.schedule.maxMs);
      }
      return;
    }
    const firstRead = this.low === null;
    const after = this.lastSeq;
    const events = await this.gate.run(() => this.calls.query(this.source.target, this.source.eventsQuery, { after }));
    let fresh = events.filter((e) => e.seq > after).sort((a, b) => a.seq - b.seq);
    const first = fresh[0]?.seq;
    // The first read: the latest run holds the tail of the runs before it; the earlier runs are read back to the
    // oldest event a reader asked for, no further. Later: the run continued as new (maybe more than once) since the
    // last poll, and what came between is in the runs before it.
    const from = firstRead ? Math.min(this.floor ?? 0, (first ?? 1) - 1) : after;
    if (first !== undefined && first > from + 1 && this.source.earlier) {
      const missing = await this.source.earlier(from, first);
      fresh = [...missing.filter((e) => e.seq > from && e.seq < first), ...fresh];
    }
    if (firstRead) this.low = this.source.earlier ? from : first === undefined ? 0 : first - 1;
    this.log.push(...fresh);
    this.seenAt = at;
    this.waitMs = this.schedule.minMs;
    if (fresh.length) this.wokenPolls = 0;
    // A closed run has nothing more to say; a task has said everything with its final status.
    if (closed || (this.source.endsWithStatus && fresh.some(isTaskEnd))) this.finish();
    else if (fresh.length) for (const l of [...this.listeners]) l.changed();
  }

  private waiting(): boolean {
    const last = this.log.at(-1);
    return this.source.endsWithStatus && last !== undefined && WAITING_EVENTS.has(last.type);
  }

  private finish() {
    this.done = true;
    this.stopTimer();
    for (const l of [...this.listeners]) l.changed();
  }

  /** Keeps the feed polling while `listener` is subscribed; returns the unsubscribe function. */
  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.plan();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopTimer();
    };
  }

  /** Something this API sent may have changed the workflow: poll now, and quickly after. */
  wake(): void {
    if (this.done) return;
    this.waitMs = this.schedule.minMs;
    this.wokenPolls = WOKEN_POLLS;
    if (this.listeners.size === 0) return;
    this.stopTimer();
    this.pollThenPlan();
  }

  private plan() {
    if (this.done || this.listeners.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pollThenPlan();
    }, this.waitMs);
  }

  private pollThenPlan() {
    this.refresh().then(
      () => this.plan(),
      (err: unknown) => {
        for (const l of [...this.listeners]) l.failed(err);
        this.plan();
      }
    );
  }

  private stopTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

const isTaskEnd = (e: KleaEvent): boolean =>
  e.type === 'status' && !('taskId' in e && e.taskId) && isFinalStatus(e.status);

/** The API's feeds by workflow id: a bounded LRU of which only feeds nobody watches are ever dropped. */
export class EventFeeds {
  private readonly feeds = new Map<string, EventFeed>();
  private readonly gate: CallGate;

  constructor(
    private readonly calls: TemporalCalls,
    private readonly schedule: PollSchedule = DEFAULT_POLL_SCHEDULE,
    private readonly maxFeeds = DEFAULT_FEED_CACHE_SIZE,
    queryConcurrency = DEFAULT_QUERY_CONCURRENCY
  ) {
    this.gate = new CallGate(queryConcurrency);
  }

  feed(source: FeedSource): EventFeed {
    const id = source.target.workflowId;
    let feed = this.feeds.get(id);
    if (feed) this.feeds.delete(id);
    else feed = new EventFeed(this.calls, source, this.schedule, this.gate);
    this.feeds.set(id, feed);
    if (this.feeds.size > this.maxFeeds) {
      for (const [key, old] of this.feeds) {
        if (this.feeds.size <= this.maxFeeds) break;
        if (old !== feed && !old.watched) this.feeds.delete(key);
      }
    }
    return feed;
  }

  /** A rewind reset `workflowId` into a new run: its feed, if finished, reads on from where it stopped. */
  revive(workflowId: string): void {
    this.feeds.get(workflowId)?.revive();
  }

  /** The API sent `workflowId` a decision, cancel, message or setting: its streams hear of it at once. */
  wake(workflowId: string): void {
    this.feeds.get(workflowId)?.wake();
  }

  get size(): number {
    return this.feeds.size;
  }
}
