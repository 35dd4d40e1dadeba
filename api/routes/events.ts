/**
 * The event routes of tasks and sessions: JSON with ?after=, else (Accept: text/event-stream) a live stream. Both
 * read the workflow's event feed (event-feed.ts), so what the API has already seen is served from memory.
 */
import type { Request, Response } from 'express';
import type { EventFeeds, EventsQuery, FeedSource } from '../event-feed';
import { lastEventId, streamEvents } from '../sse';
import type { Target } from '../temporal-calls';

/** The stream's media type in the OpenAPI document, beside the JSON list. */
export const eventStream = {
  'text/event-stream': {
    description:
      "each event as `id: <seq>`, `event: <type>`, `data: <json>`; reconnect with Last-Event-ID; a task's stream " +
      'ends after its final `status` event',
  },
};

export type { EventsQuery };

export function eventsHandler(deps: {
  feeds: EventFeeds;
  targetOf: (id: string) => Target;
  eventsQuery: EventsQuery;
  /** A task's log ends with its final `status` event (a session's never ends that way). */
  endsWithStatus: boolean;
  /** Where the events before the latest run's are read (a task that continued as new). */
  earlierOf?: (target: Target) => FeedSource['earlier'];
}) {
  const { feeds, targetOf, eventsQuery, endsWithStatus, earlierOf } = deps;
  return async ({
    params,
    query,
    req,
    res,
  }: {
    params: { id: string };
    query: { after?: number };
    req: Request;
    res: Response;
  }) => {
    const target = targetOf(params.id);
    const feed = feeds.feed({ target, eventsQuery, endsWithStatus, earlier: earlierOf?.(target) });
    const wantsStream = query.after === undefined && (req.get('accept') ?? '').includes('text/event-stream');
    // What the reader lacks: after its last event (Last-Event-ID when it reconnects), and nothing older.
    const after = wantsStream ? (lastEventId(req) ?? 0) : (query.after ?? 0);
    await feed.cover(after); // current before it is served, and a 404 before a stream starts
    if (!wantsStream) return { events: feed.since(after) };
    await streamEvents(req, res, { feed, after });
    return undefined;
  };
}
