/**
 * The event routes of tasks and sessions (`GET /tasks/:id/events`, `GET /sessions/:id/events`): one route on each,
 * declared here once. JSON with ?after=, else (Accept: text/event-stream) a live stream. Both read the workflow's
 * event feed (event-feed.ts), so what the API has already seen is served from memory.
 */
import type { Request, Response } from 'express';
import type { ZodType } from 'zod';
import { EventListSchema, EventsQuerySchema } from '../../common/api';
import type { EventFeeds, EventsQuery, FeedSource } from '../event-feed';
import { TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import { defineRoute } from '../route';
import { lastEventId, streamEvents } from '../sse';
import type { Target } from '../temporal-calls';

/** The stream's media type in the OpenAPI document, beside the JSON list. */
const eventStream = {
  'text/event-stream': {
    description:
      "each event as `id: <seq>`, `event: <type>`, `data: <json>`; reconnect with Last-Event-ID; a task's stream " +
      'ends after its final `status` event',
  },
};

export type { EventsQuery };

interface EventsDeps {
  feeds: EventFeeds;
  targetOf: (id: string) => Target;
  eventsQuery: EventsQuery;
  /** Where the events before the latest run's are read (a task that continued as new). */
  earlierOf?: (target: Target) => FeedSource['earlier'];
}

/**
 * The events route of a task or a session: `path` and `operationId` as the API names them, the ids its `params`
 * accept, and where its events are read.
 */
export function eventsRoute(
  route: { noun: 'task' | 'session'; path: string; operationId: string; params: ZodType<{ id: string }> },
  deps: EventsDeps
) {
  const { noun, ...named } = route;
  return defineRoute({
    method: 'get',
    ...named,
    summary: `${noun === 'task' ? 'Task' : 'Session'} events: a server-sent event stream, or JSON with ?after=seq`,
    tags: [`${noun}s`],
    query: EventsQuerySchema,
    responses: {
      200: { description: 'the events after `after`, oldest first', schema: EventListSchema, also: eventStream },
      404: { description: `no such ${noun}` },
      ...TEMPORAL_DOWN_OR_NO_WORKER,
    },
    // A task's log ends with its final `status` event (a session's never ends that way).
    handler: eventsHandler({ ...deps, endsWithStatus: noun === 'task' }),
  });
}

function eventsHandler(deps: EventsDeps & { endsWithStatus: boolean }) {
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
