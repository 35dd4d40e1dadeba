/** Session routes: start a session, read its state and events, send it messages, change its settings. */
import type { ZodType } from 'zod';
import {
  AcceptedResponseSchema,
  CreateSessionRequestSchema,
  CreateSessionResponseSchema,
  EventListSchema,
  EventsQuerySchema,
  MessageRequestSchema,
  MessageResponseSchema,
  PatchSessionRequestSchema,
  SessionParamsSchema,
  SessionStateResponseSchema,
} from '../../common/api';
import { eventsQuery, settingsSignal, stateQuery, submitUpdate } from '../../workflows/session/messages';
import type { EventFeeds } from '../event-feed';
import { TEMPORAL_DOWN, TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import { defineRoute, type RouteSpec } from '../route';
import type { SessionStarter } from '../session-start';
import { sessionTarget, sessionWorkflowId } from '../targets';
import type { Target, TemporalCalls } from '../temporal-calls';
import { eventsHandler, eventStream } from './events';

export interface SessionRouteDeps {
  calls: TemporalCalls;
  sessions: SessionStarter;
  runUrl: (workflowId: string) => string;
  /** Woken when a message or setting is sent, so the session's streams follow at once. */
  feeds: EventFeeds;
}

export function sessionRoutes({ calls, sessions, runUrl, feeds }: SessionRouteDeps): RouteSpec[] {
  /** Something sent to a running session (a message, a settings change); its streams are woken to follow at once. */
  const sessionInput = <B>(
    route: Pick<RouteSpec, 'method' | 'path' | 'operationId' | 'summary' | 'responses'> & { body: ZodType<B> },
    send: (target: Target, body: B) => Promise<unknown>
  ) =>
    defineRoute({
      ...route,
      tags: ['sessions'],
      params: SessionParamsSchema,
      responses: {
        ...route.responses,
        404: { description: 'no such session' },
        409: { description: 'the session has ended' },
      },
      handler: async ({ params, body }) => {
        const target = sessionTarget(params.id);
        const out = await send(target, body);
        feeds.wake(target.workflowId);
        return out;
      },
    });

  return [
    defineRoute({
      method: 'post',
      path: '/sessions',
      operationId: 'createSession',
      summary: 'Start a chat session',
      tags: ['sessions'],
      body: CreateSessionRequestSchema,
      status: 201,
      // No worker check: nothing waits for the new session, and Temporal keeps it until a worker runs it.
      responses: {
        201: { description: 'the session was started', schema: CreateSessionResponseSchema },
        ...TEMPORAL_DOWN,
      },
      handler: async ({ body }) => {
        const sessionId = await sessions.start(body);
        return { sessionId, temporalUiUrl: runUrl(sessionWorkflowId(sessionId)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/sessions/:id',
      operationId: 'getSession',
      summary: 'Session state: settings, memory, queue, tasks, commands',
      tags: ['sessions'],
      params: SessionParamsSchema,
      responses: {
        200: { description: 'the session state', schema: SessionStateResponseSchema },
        404: { description: 'no such session' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params }) => ({
        ...(await calls.query(sessionTarget(params.id), stateQuery)),
        temporalUiUrl: runUrl(sessionWorkflowId(params.id)),
      }),
    }),
    sessionInput(
      {
        method: 'post',
        path: '/sessions/:id/messages',
        operationId: 'postMessage',
        summary: 'Send a message or a /command to a session',
        body: MessageRequestSchema,
        responses: {
          200: { description: 'chat reply, started task, or command result', schema: MessageResponseSchema },
          502: { description: 'model_error: the model failed the routing request (its message says why)' },
          ...TEMPORAL_DOWN_OR_NO_WORKER,
        },
      },
      (target, body) => calls.update(target, submitUpdate, body, { noun: 'message' })
    ),
    sessionInput(
      {
        method: 'patch',
        path: '/sessions/:id',
        operationId: 'patchSession',
        summary: "Change a session's mode or tool access level",
        body: PatchSessionRequestSchema,
        responses: {
          200: { description: 'the settings were applied', schema: AcceptedResponseSchema },
          ...TEMPORAL_DOWN,
        },
      },
      async (target, body) => {
        await calls.signal(target, settingsSignal, body);
        return { accepted: true as const };
      }
    ),
    defineRoute({
      method: 'get',
      path: '/sessions/:id/events',
      operationId: 'getSessionEvents',
      summary: 'Session events: a server-sent event stream, or JSON with ?after=seq',
      tags: ['sessions'],
      params: SessionParamsSchema,
      query: EventsQuerySchema,
      responses: {
        200: { description: 'the events after `after`, oldest first', schema: EventListSchema, also: eventStream },
        404: { description: 'no such session' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: eventsHandler({ feeds, targetOf: sessionTarget, eventsQuery, endsWithStatus: false }),
    }),
  ];
}
