/** The event routes of tasks and sessions: JSON with ?after=, else (Accept: text/event-stream) a live stream. */
import type { Request, Response } from 'express';
import type { QueryDefinition } from '@temporalio/client';
import type { KleaEvent } from '../../common/events';
import { lastEventId, streamEvents } from '../sse';
import type { Target, TemporalCalls } from '../temporal-calls';

/** The stream's media type in the OpenAPI document, beside the JSON list. */
export const eventStream = {
  'text/event-stream': {
    description: 'each event as `id: <seq>`, `event: <type>`, `data: <json>`; reconnect with Last-Event-ID',
  },
};

/** Both workflows answer the same `events` query; each route passes its own definition. */
export type EventsQuery = QueryDefinition<KleaEvent[], [{ after?: number }?]>;

export function eventsHandler(deps: {
  calls: TemporalCalls;
  targetOf: (id: string) => Target;
  eventsQuery: EventsQuery;
  ssePollMs?: number;
}) {
  const { calls, targetOf, eventsQuery, ssePollMs } = deps;
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
    const fetch = (after: number) => calls.query(target, eventsQuery, { after });
    const wantsStream = query.after === undefined && (req.get('accept') ?? '').includes('text/event-stream');
    if (!wantsStream) return { events: await fetch(query.after ?? 0) };
    const after = lastEventId(req) ?? 0;
    await fetch(after).then(() => undefined); // 404 before the stream starts
    await streamEvents(req, res, { fetch, after, pollMs: ssePollMs });
    return undefined;
  };
}
