/** Task routes: start a task, read its state and events, decide what it waits for, rewind it (rewind.ts), cancel it. */
import type { ZodType } from 'zod';
import type { UpdateDefinition } from '@temporalio/client';
import {
  AcceptedResponseSchema,
  CancelRequestBodySchema,
  ClarifyRequestSchema,
  CreateTaskRequestSchema,
  CreateTaskResponseSchema,
  PermissionRequestBodySchema,
  ReviewRequestSchema,
  TaskParamsSchema,
  TaskStateResponseSchema,
} from '../../common/api';
import { startTaskUpdate, stateQuery as sessionStateQuery } from '../../workflows/session/messages';
import {
  cancelSignal,
  clarifyUpdate,
  type DecisionAck,
  eventsQuery,
  permissionUpdate,
  reviewUpdate,
  stateQuery,
} from '../../workflows/task/messages';
import { ApiError, badRequest } from '../errors';
import type { EventFeeds } from '../event-feed';
import { TEMPORAL_DOWN, TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import type { ProjectDirResolver } from '../projects';
import { defineRoute, type RouteSpec } from '../route';
import { earlierRunEvents } from '../run-chain';
import type { SessionStarter } from '../session-start';
import type { SessionWaker } from '../session-wake';
import { sessionTarget, taskTarget } from '../targets';
import type { TemporalCalls } from '../temporal-calls';
import { eventsRoute } from './events';
import { rewindRoutes } from './rewind';

export interface TaskRouteDeps {
  calls: TemporalCalls;
  sessions: SessionStarter;
  /** Sends to a session, waking it when it sleeps. */
  waker: SessionWaker;
  resolveProjectDir: ProjectDirResolver;
  runUrl: (workflowId: string) => string;
  /** Woken when a decision or cancel is sent, so the task's streams follow at once. */
  feeds: EventFeeds;
}

export function taskRoutes({ calls, sessions, waker, resolveProjectDir, runUrl, feeds }: TaskRouteDeps): RouteSpec[] {
  /** A decision the task waits for, sent as an update so that a refused one is answered 409 at once. */
  const taskDecision = <B>(
    update: UpdateDefinition<DecisionAck, [B]>,
    route: { path: string; operationId: string; summary: string },
    body: ZodType<B>
  ) =>
    defineRoute({
      method: 'post',
      ...route,
      tags: ['tasks'],
      params: TaskParamsSchema,
      body,
      responses: {
        200: {
          description:
            'the decision was accepted (a repeated identical decision is accepted again and changes nothing)',
          schema: AcceptedResponseSchema,
        },
        404: { description: 'no such task' },
        409: {
          description:
            'nothing of the kind is pending, the decision is stale, or the task has ended (the message names its ' +
            'final status)',
        },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params, body: b }) => {
        const target = taskTarget(params.id);
        await calls.update(target, update, b, { noun: 'decision' });
        feeds.wake(target.workflowId);
        return { accepted: true as const };
      },
    });

  return [
    defineRoute({
      method: 'post',
      path: '/tasks',
      operationId: 'createTask',
      summary: 'Start a task in a session (a new session unless sessionId is given); it is planned, not routed',
      tags: ['tasks'],
      body: CreateTaskRequestSchema,
      status: 201,
      responses: {
        201: {
          description: "the task was started (or queued behind the session's current task)",
          schema: CreateTaskResponseSchema,
        },
        400: { description: "invalid request, or a projectDir other than the given session's" },
        404: { description: 'no such session' },
        409: { description: 'the session has ended' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ body }) => {
        const requestedDir = body.projectDir !== undefined ? resolveProjectDir(body.projectDir) : undefined;
        await calls.workers.requireWorker('task', body.sessionId ? sessionTarget(body.sessionId) : undefined);
        let sessionId = body.sessionId;
        if (sessionId && requestedDir !== undefined) {
          const session = await calls.query(sessionTarget(sessionId), sessionStateQuery);
          if (session.projectDir !== requestedDir) {
            throw badRequest(
              `body.projectDir: session "${sessionId}" works in ${session.projectDir}, not ${requestedDir}; ` +
                'leave projectDir out, or start the task without sessionId',
              [{ path: 'body.projectDir', message: "differs from the session's project directory" }]
            );
          }
        }
        const created = !sessionId;
        sessionId ??= await sessions.start(body);
        const task = {
          prompt: body.prompt,
          ...(body.mode ? { mode: body.mode } : {}),
          ...(body.toolAccess ? { toolAccess: body.toolAccess } : {}),
          ...(body.review ? { review: body.review } : {}),
        };
        try {
          const { taskId, queued } = created
            ? await calls.update(sessionTarget(sessionId), startTaskUpdate, task, { noun: 'task', workerChecked: true })
            : await waker.update(sessionId, startTaskUpdate, task, 'task');
          feeds.wake(sessionTarget(sessionId).workflowId);
          return { taskId, sessionId, temporalUiUrl: runUrl(taskId), queued };
        } catch (err) {
          if (created && err instanceof ApiError && err.code === 'no_worker') {
            throw await sessions.abandon(sessionId, err);
          }
          throw err;
        }
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tasks/:id',
      operationId: 'getTask',
      summary: 'Task state: status, plan with step statuses, pending decisions, answer',
      tags: ['tasks'],
      params: TaskParamsSchema,
      responses: {
        200: { description: 'the task state', schema: TaskStateResponseSchema },
        404: { description: 'no such task' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params }) => ({
        ...(await calls.query(taskTarget(params.id), stateQuery)),
        temporalUiUrl: runUrl(params.id),
      }),
    }),
    eventsRoute(
      { noun: 'task', path: '/tasks/:id/events', operationId: 'getTaskEvents', params: TaskParamsSchema },
      { feeds, targetOf: taskTarget, eventsQuery, earlierOf: (target) => earlierRunEvents(calls, target) }
    ),
    taskDecision(
      reviewUpdate,
      {
        path: '/tasks/:id/review',
        operationId: 'reviewTask',
        summary: 'Approve the plan under review, or ask for a revision with feedback',
      },
      ReviewRequestSchema
    ),
    taskDecision(
      clarifyUpdate,
      {
        path: '/tasks/:id/clarify',
        operationId: 'clarifyTask',
        summary: 'Answer the questions of the step that waits for them',
      },
      ClarifyRequestSchema
    ),
    taskDecision(
      permissionUpdate,
      {
        path: '/tasks/:id/permissions',
        operationId: 'permissionTask',
        summary: 'Decide a pending permission request: allow_once, allow_session or deny',
      },
      PermissionRequestBodySchema
    ),
    ...rewindRoutes({ calls, runUrl, feeds }),
    defineRoute({
      method: 'post',
      path: '/tasks/:id/cancel',
      operationId: 'cancelTask',
      summary: 'Cancel a running task',
      tags: ['tasks'],
      params: TaskParamsSchema,
      body: CancelRequestBodySchema,
      responses: {
        200: { description: 'cancellation was requested', schema: AcceptedResponseSchema },
        404: { description: 'no such task' },
        409: { description: 'the task has already ended (the message names its final status)' },
        ...TEMPORAL_DOWN,
      },
      handler: async ({ params, body }) => {
        const target = taskTarget(params.id);
        await calls.signal(target, cancelSignal, body);
        feeds.wake(target.workflowId);
        return { accepted: true as const };
      },
    }),
  ];
}
