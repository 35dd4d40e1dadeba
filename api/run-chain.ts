/**
 * A task's earlier runs. A long task continues as new as its history grows: the workflow id stays and every call
 * reaches the latest run, which holds the tail of the event log before it. The events before that tail are in the
 * earlier runs, which the task names in its state (`runs.earlier`, each with the seqs it holds); a closed run still
 * answers the `events` query (a worker replays it), and since it never changes each part of it is read at most once
 * per feed, and only the part a reader lacks (`{after, before}`).
 */
import type { KleaEvent } from '../common/events';
import { eventsQuery, stateQuery } from '../workflows/task/messages';
import { ApiError } from './errors';
import type { Target, TemporalCalls } from './temporal-calls';

/** The events with `after < seq < before` from the task's earlier runs, oldest first (as many as they hold). */
export function earlierRunEvents(calls: TemporalCalls, target: Target) {
  return async (after: number, before: number): Promise<KleaEvent[]> => {
    const { runs } = await calls.query(target, stateQuery);
    const parts: KleaEvent[][] = [];
    let need = before;
    // Newest first: each run holds the tail of the one before it, so the fewest runs are read.
    for (const run of [...(runs?.earlier ?? [])].reverse()) {
      if (need <= after + 1) break;
      if (run.firstSeq >= need || run.lastSeq <= after) continue;
      let events: KleaEvent[];
      try {
        events = await calls.query({ ...target, runId: run.runId }, eventsQuery, { after, before: need });
      } catch (err) {
        // A run Temporal no longer keeps (past the namespace's retention, while the task went on for longer) has
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
