/**
 * Session routes: start a session, read its state and events, send it messages, change its settings, revoke a
 * grant. What is sent to a session that went to sleep wakes it (session-wake.ts).
 */
import type { ZodType } from 'zod';
import {
  AcceptedResponseSchema,
  CreateSessionRequestSchema,
  CreateSessionResponseSchema,
  GrantParamsSchema,
  MessageRequestSchema,
  MessageResponseSchema,
  PatchSessionRequestSchema,
  RevokeGrantResponseSchema,
  SessionParamsSchema,
  SessionStateResponseSchema,
} from '../../common/api';
import {
  eventsQuery,
  revokeGrantUpdate,
  settingsSignal,
  stateQuery,
  submitUpdate,
} from '../../workflows/session/messages';
import type { EventFeeds } from '../event-feed';
import { earlierSessionEvents } from '../run-chain';
import { TEMPORAL_DOWN, TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import { defineRoute, type RouteSpec } from '../route';
import type { SessionStarter } from '../session-start';
import type { SessionWaker } from '../session-wake';
import { sessionTarget, sessionWorkflowId } from '../targets';
import type { TemporalCalls } from '../temporal-calls';
import { eventsRoute } from './events';

export interface SessionRouteDeps {
  calls: TemporalCalls;
  sessions: SessionStarter;
  /** Sends to a session, waking it when it sleeps. */
  waker: SessionWaker;
  runUrl: (workflowId: string) => string;
  /** Woken when a message or setting is sent, so the session's streams follow at once. */
  feeds: EventFeeds;
}

export function sessionRoutes({ calls, sessions, waker, runUrl, feeds }: SessionRouteDeps): RouteSpec[] {
  /**
   * Something sent to a session (a message, a settings change), waking it if it sleeps; its streams are woken to
   * follow at once.
   */
  const sessionInput = <B>(
    route: Pick<RouteSpec, 'method' | 'path' | 'operationId' | 'summary' | 'responses'> & { body: ZodType<B> },
    send: (sessionId: string, body: B) => Promise<unknown>
  ) =>
    defineRoute({
      ...route,
      tags: ['sessions'],
      params: SessionParamsSchema,
      responses: {
        ...route.responses,
        404: { description: 'no such session' },
        409: { description: 'the session has ended (failed or was terminated; a sleeping session is woken)' },
        410: { description: 'the session ended longer ago than Temporal keeps closed sessions' },
      },
      handler: async ({ params, body }) => {
        const target = sessionTarget(params.id);
        const out = await send(params.id, body);
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
        200: { description: 'the session state (a sleeping one too)', schema: SessionStateResponseSchema },
        404: { description: 'no such session' },
        410: { description: 'the session ended longer ago than Temporal keeps closed sessions' },
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
      (sessionId, body) => waker.update(sessionId, submitUpdate, body, 'message')
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
      async (sessionId, body) => {
        await waker.signal(sessionId, settingsSignal, body);
        return { accepted: true as const };
      }
    ),
    defineRoute({
      method: 'delete',
      path: '/sessions/:id/grants/:grantId',
      operationId: 'revokeGrant',
      summary: 'Revoke a path allowed for the session (its id is in the grants of GET /sessions/:id)',
      tags: ['sessions'],
      params: GrantParamsSchema,
      responses: {
        200: {
          description:
            'the grant was revoked: no task is handed it from now on, and the task running now has been told (its ' +
            'next call on the path asks again)',
          schema: RevokeGrantResponseSchema,
        },
        404: { description: 'no such session, or the session holds no such grant (revoked already or lapsed)' },
        409: { description: 'the session has ended' },
        410: { description: 'the session ended longer ago than Temporal keeps closed sessions' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params }) => {
        const out = await waker.update(params.id, revokeGrantUpdate, { grantId: params.grantId }, 'revocation');
        feeds.wake(sessionTarget(params.id).workflowId);
        return out;
      },
    }),
    eventsRoute(
      { noun: 'session', path: '/sessions/:id/events', operationId: 'getSessionEvents', params: SessionParamsSchema },
      { feeds, targetOf: sessionTarget, eventsQuery, earlierOf: (target) => earlierSessionEvents(calls, target) }
    ),
  ];
}
