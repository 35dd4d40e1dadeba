/** Task routes: start a task, read its state and events, decide what it waits for, cancel it. */
import type { ZodType } from 'zod';
import { WorkflowFailedError, type UpdateDefinition } from '@temporalio/client';
import {
  AcceptedResponseSchema,
  CancelRequestBodySchema,
  ClarifyRequestSchema,
  CreateTaskRequestSchema,
  CreateTaskResponseSchema,
  EventListSchema,
  EventsQuerySchema,
  PermissionRequestBodySchema,
  ReviewRequestSchema,
  RewindPreviewQuerySchema,
  RewindRequestBodySchema,
  RewindResponseSchema,
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
import { randomUUID } from 'node:crypto';
import type { RewindInput, RewindResult } from '../../common/rewind';
import { ApiError, badRequest, conflict, gone, notFound } from '../errors';
import type { EventFeeds } from '../event-feed';
import { TEMPORAL_DOWN, TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import type { ProjectDirResolver } from '../projects';
import { defineRoute, type RouteSpec } from '../route';
import { earlierRunEvents } from '../run-chain';
import type { SessionStarter } from '../session-start';
import type { SessionWaker } from '../session-wake';
import { sessionTarget, taskTarget } from '../targets';
import type { TemporalCalls } from '../temporal-calls';
import { eventsHandler, eventStream } from './events';

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

/** How long a rewind call waits for the rewind to finish (it goes on durably if the call gives up). */
export const REWIND_WAIT_MS = 120_000;

export function taskRoutes({ calls, sessions, waker, resolveProjectDir, runUrl, feeds }: TaskRouteDeps): RouteSpec[] {
  /** Runs a rewind (or its preview) of a task and answers as the API does: 200, or the error that says why not. */
  async function rewind(taskId: string, input: Omit<RewindInput, 'taskId'>) {
    const target = taskTarget(taskId);
    // No such task answers 404, one past retention 410, before a rewind is started for it.
    await calls.describe(target);
    await calls.requireWorker('rewind', target);
    const workflowId = `rewind-${taskId}-${randomUUID().slice(0, 8)}`;
    let result: RewindResult;
    try {
      result = await calls.execute(
        target,
        'rewindWorkflow',
        {
          workflowId,
          taskQueue: calls.taskQueue,
          args: [{ taskId, ...input }],
          staticSummary: `${input.preview ? 'preview of a rewind' : 'rewind'} of ${taskId} to before step ${input.toStep}`,
        },
        REWIND_WAIT_MS
      );
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      // The deepest cause is the one that says what went wrong (an activity's own error).
      let cause: Error | undefined = err;
      while (cause?.cause instanceof Error) cause = cause.cause;
      throw new ApiError(500, 'rewind_failed', `the rewind failed (${workflowId}): ${cause?.message ?? err.message}`);
    }
    switch (result.status) {
      case 'not_found':
        throw notFound(result.message);
      case 'expired':
        throw gone(result.message);
      case 'busy':
        throw conflict(result.message);
      case 'unknown_step':
        throw badRequest(`${input.preview ? 'query' : 'body'}.toStep: ${result.message}`, [
          { path: `${input.preview ? 'query' : 'body'}.toStep`, message: 'no such step has run' },
        ]);
      case 'conflict':
        throw conflict(
          `the rewind would overwrite ${result.conflicts.length} file(s) changed since the task touched them: ` +
            `${result.conflicts.map((c) => c.path).join(', ')}; nothing was changed (send force: true to restore them anyway)`,
          { conflicts: result.conflicts, files: result.files, steps: result.steps }
        );
      default:
        if (result.status === 'rewound') feeds.revive(target.workflowId);
        feeds.wake(target.workflowId);
        return { ...result, temporalUiUrl: runUrl(taskId) };
    }
  }

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
        await calls.requireWorker('task', body.sessionId ? sessionTarget(body.sessionId) : undefined);
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
    defineRoute({
      method: 'get',
      path: '/tasks/:id/events',
      operationId: 'getTaskEvents',
      summary: 'Task events: a server-sent event stream, or JSON with ?after=seq',
      tags: ['tasks'],
      params: TaskParamsSchema,
      query: EventsQuerySchema,
      responses: {
        200: { description: 'the events after `after`, oldest first', schema: EventListSchema, also: eventStream },
        404: { description: 'no such task' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: eventsHandler({
        feeds,
        targetOf: taskTarget,
        eventsQuery,
        endsWithStatus: true,
        earlierOf: (target) => earlierRunEvents(calls, target),
      }),
    }),
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
    defineRoute({
      method: 'get',
      path: '/tasks/:id/rewind',
      operationId: 'previewRewind',
      summary: 'What a rewind to a step would restore, file by file, and what conflicts with it (changes nothing)',
      tags: ['tasks'],
      params: TaskParamsSchema,
      query: RewindPreviewQuerySchema,
      responses: {
        200: { description: 'the files a rewind would restore, and the conflicts', schema: RewindResponseSchema },
        400: { description: 'toStep names no step that has run' },
        404: { description: 'no such task' },
        409: { description: 'a step of the task is running' },
        410: { description: "the task's checkpoints are no longer kept" },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params, query }) =>
        rewind(params.id, { toStep: query.toStep, rerun: false, force: false, preview: true }),
    }),
    defineRoute({
      method: 'post',
      path: '/tasks/:id/rewind',
      operationId: 'rewindTask',
      summary:
        'Restore the project to what it was before a step (every step from there on undone), then run the task ' +
        'again from that step (rerun) or end it `rewound`',
      tags: ['tasks'],
      params: TaskParamsSchema,
      body: RewindRequestBodySchema,
      responses: {
        200: { description: 'the files were restored and the task was reset', schema: RewindResponseSchema },
        400: { description: 'invalid request, or toStep names no step that has run' },
        404: { description: 'no such task' },
        409: {
          description:
            'files changed since the task touched them (details.conflicts lists them; nothing was changed; force: ' +
            'true restores them anyway), or a step of the task is running',
        },
        410: { description: "the task's checkpoints are no longer kept" },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params, body }) => rewind(params.id, { ...body, preview: false }),
    }),
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
