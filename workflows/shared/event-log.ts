/** An append-only event log held in workflow state; read through the `events` query. */
import type { EventBody, KleaEvent } from '../../common/events';

export class EventLog {
  private readonly events: KleaEvent[] = [];

  constructor(private seq = 0) {}

  /** Appends an event stamped with the next seq and the workflow's (deterministic) clock. */
  emit(body: EventBody): KleaEvent {
    const event = { ...body, seq: ++this.seq, at: new Date().toISOString() } as KleaEvent;
    this.events.push(event);
    return event;
  }

  /** Events with seq greater than `after`, oldest first. */
  after(after = 0): KleaEvent[] {
    return this.events.filter((e) => e.seq > after);
  }

  get lastSeq(): number {
    return this.seq;
  }
}
