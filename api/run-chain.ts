/**
 * A workflow's earlier runs. A long task continues as new as its history grows, and a session continues as new and
 * goes to sleep and wakes: the workflow id stays and every call reaches the latest run, which holds the tail of the
 * event log before it. The events before that tail are in the earlier runs, which the workflow names in its state
 * (a task's `runs.earlier`, a session's `earlierRuns`, each with the seqs it holds); a closed run still answers the
 * `events` query (a worker replays it), and since it never changes each part of it is read at most once per feed,
 * and only the part a reader lacks (`{after, before}`).
 */
import type { KleaEvent } from '../common/events';
import type { TaskRunLink } from '../common/task';
import { eventsQuery as sessionEventsQuery, stateQuery as sessionStateQuery } from '../workflows/session/messages';
import { eventsQuery, stateQuery } from '../workflows/task/messages';
import { ApiError } from './errors';
import type { EventsQuery } from './event-feed';
import type { Target, TemporalCalls } from './temporal-calls';

/** The events with `after < seq < before` from a task's earlier runs, oldest first (as many as they hold). */
export function earlierRunEvents(calls: TemporalCalls, target: Target) {
  return fromEarlierRuns(calls, target, eventsQuery, async () => (await calls.query(target, stateQuery)).runs?.earlier);
}

/** The same from a session's earlier runs (it continued as new, or slept and woke). */
export function earlierSessionEvents(calls: TemporalCalls, target: Target) {
  return fromEarlierRuns(
    calls,
    target,
    sessionEventsQuery,
    async () => (await calls.query(target, sessionStateQuery)).earlierRuns
  );
}

function fromEarlierRuns(
  calls: TemporalCalls,
  target: Target,
  query: EventsQuery,
  earlierRuns: () => Promise<readonly TaskRunLink[] | undefined>
) {
  return async (after: number, before: number): Promise<KleaEvent[]> => {
    const runs = (await earlierRuns()) ?? [];
    const parts: KleaEvent[][] = [];
    let need = before;
    // Newest first: each run holds the tail of the one before it, so the fewest runs are read.
    for (const run of [...runs].reverse()) {
      if (need <= after + 1) break;
      if (run.firstSeq >= need || run.lastSeq <= after) continue;
      let events: KleaEvent[];
      try {
        events = await calls.query({ ...target, runId: run.runId }, query, { after, before: need });
      } catch (err) {
        // A run Temporal no longer keeps (past the namespace's retention, while the workflow went on for longer) has
        // taken its events with it: the readers get the rest rather than an error for ever.
        if (err instanceof ApiError && (err.status === 404 || err.status === 410)) continue;
        throw err;
      }
      const got = events.filter((e) => e.seq > after && e.seq < need).sort((a, b) => a.seq - b.seq);
      if (!got.length) continue;
      parts.unshift(got);
      need = got[0].seq;
    }
    return parts.flat();
  };
}
