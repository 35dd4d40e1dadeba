/** An append-only event log held in workflow state; read through the `events` query. */
import type { EventBody, KleaEvent } from '../../common/events';

export class EventLog {
  private readonly events: KleaEvent[];

  /** `carried`: the tail of the log of an earlier run (continue-as-new), so clients see no gap in `seq`. */
  constructor(
    carried: readonly KleaEvent[] = [],
    private seq = carried.at(-1)?.seq ?? 0
  ) {
    this.events = [...carried];
  }

  /** The last `n` events, to carry into the next run. */
  tail(n: number): KleaEvent[] {
    return this.events.slice(-n);
  }

  /** Appends an event stamped with the next seq and the workflow's (deterministic) clock. */
  emit(body: EventBody): KleaEvent {
    const event = { ...body, seq: ++this.seq, at: new Date().toISOString() } as KleaEvent;
    this.events.push(event);
    return event;
  }

  /**
   * Goes on after `seq` (a rewound task: the run that was reset had got that far), so no client that saw the events
   * of that run is handed a seq again for a different event.
   */
  skipTo(seq: number): void {
    if (seq > this.seq) this.seq = seq;
  }

  /** Events with seq greater than `after` (and less than `before`, when given), oldest first. */
  after(after = 0, before?: number): KleaEvent[] {
    return this.events.filter((e) => e.seq > after && (before === undefined || e.seq < before));
  }

  /** The seq of the oldest event held (one past the last when none is held). */
  get firstSeq(): number {
    return this.events[0]?.seq ?? this.seq + 1;
  }

  get lastSeq(): number {
    return this.seq;
  }
}
