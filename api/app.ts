/**
 * Builds the Express app from injected dependencies (a Temporal client and the config). `index.ts` listens;
 * tests drive this app with supertest. Every route is a thin Temporal client call (start, signal, update,
 * query), validated by the zod schemas in common/ with the parsed value handed on.
 */
import { randomUUID } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import express, { type Express } from 'express';
import type { ZodType } from 'zod';
import type { Client, UpdateDefinition } from '@temporalio/client';
import {
  AcceptedResponseSchema,
  CancelRequestBodySchema,
  ClarifyRequestSchema,
  CreateSessionRequestSchema,
  CreateSessionResponseSchema,
  CreateTaskRequestSchema,
  CreateTaskResponseSchema,
  EventListSchema,
  EventsQuerySchema,
  HealthResponseSchema,
  MessageRequestSchema,
  MessageResponseSchema,
  PatchSessionRequestSchema,
  PermissionRequestBodySchema,
  ReviewRequestSchema,
  SessionParamsSchema,
  SessionStateResponseSchema,
  TaskParamsSchema,
  TaskStateResponseSchema,
} from '../common/api';
import { isModelConfigured, MODEL_NOT_CONFIGURED_HINT, type Config } from '../common/config';
import { KleaMode, KleaSessionId } from '../common/search-attributes';
import type { SessionInput } from '../common/session';
import { bearerAuth } from './auth';
import {
  eventsQuery as sessionEventsQuery,
  settingsSignal,
  startTaskUpdate,
  stateQuery as sessionStateQuery,
  submitUpdate,
} from '../workflows/session/messages';
import {
  cancelSignal,
  clarifyUpdate,
  type DecisionAck,
  eventsQuery as taskEventsQuery,
  permissionUpdate,
  reviewUpdate,
  stateQuery as taskStateQuery,
} from '../workflows/task/messages';
import { ApiError, badRequest, errorHandler, RETRY_AFTER_SECONDS, unavailable } from './errors';
import { buildOpenApiDocument } from './openapi';
import { defineRoute, mountRoutes, type RouteSpec } from './route';
import { lastEventId, streamEvents } from './sse';
import { TemporalCalls, type Target } from './temporal-calls';
import { webRoutes } from './web';

export interface AppDeps {
  client: Client;
  config: Config;
  version?: string;
  /** Poll interval of event streams (tests shorten it). */
  ssePollMs?: number;
  /** Deadline of one Temporal call, and how long an update may wait for a worker (tests shorten them). */
  callTimeoutMs?: number;
  acceptTimeoutMs?: number;
}

const sessionWorkflowId = (sessionId: string) => `session-${sessionId}`;
const sessionTarget = (sessionId: string): Target => ({
  what: `session "${sessionId}"`,
  workflowId: sessionWorkflowId(sessionId),
});
const taskTarget = (taskId: string): Target => ({ what: `task "${taskId}"`, workflowId: taskId });

/** The 503 every route that calls Temporal may answer (see TemporalCalls). */
const TEMPORAL_DOWN = {
  503: { description: 'temporal_unavailable: Temporal is unreachable or did not answer in time (see Retry-After)' },
};
const TEMPORAL_DOWN_OR_NO_WORKER = {
  503: {
    description:
      'temporal_unavailable: Temporal is unreachable or did not answer in time; no_worker: no worker is polling ' +
      'the task queue, or none answered in time (see Retry-After)',
  },
};
/** Event routes answer JSON with ?after=, else (Accept: text/event-stream) a stream of `id: <seq>` events. */
const eventStream = {
  'text/event-stream': {
    description: 'each event as `id: <seq>`, `event: <type>`, `data: <json>`; reconnect with Last-Event-ID',
  },
};

export function createApp({
  client,
  config,
  version = '0.1.0',
  ssePollMs,
  callTimeoutMs,
  acceptTimeoutMs,
}: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(express.json({ limit: config.api.max_body_bytes, strict: true }));

  const { namespace, task_queue: taskQueue, ui_url: uiUrl } = config.temporal;
  const calls = new TemporalCalls(client, {
    namespace,
    taskQueue,
    address: config.temporal.address,
    callTimeoutMs,
    acceptTimeoutMs,
  });
  const runUrl = (workflowId: string) =>
    `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;

  const allowedRoots = () =>
    config.api.allowed_project_roots.length ? config.api.allowed_project_roots : [config.project.dir];
  const realRoots = () =>
    allowedRoots().flatMap((root) => {
      try {
        return [realpathSync(root)];
      } catch {
        return [];
      }
    });
  const under = (p: string, roots: string[]) => roots.some((r) => p === r || p.startsWith(r + path.sep));
  const projectDirError = (message: string, detail: string) =>
    badRequest(`body.projectDir: ${message}`, [{ path: 'body.projectDir', message: detail }]);
  const outsideRoots = () =>
    projectDirError(
      `must lie under an allowed project root (${allowedRoots().join(', ')})`,
      'outside the allowed project roots'
    );

  /** Security: a client-chosen project directory must resolve (symlinks included) under an allowed root. */
  function resolveProjectDir(requested: string | undefined): string {
    const dir = requested ?? config.project.dir;
    const resolved = path.resolve(config.project.dir, dir);
    let real: string;
    try {
      real = realpathSync(resolved);
    } catch {
      // Security: outside the roots, "missing" and "outside" read the same, so the API cannot probe the disk.
      // A missing path has no real path, so it is compared as written (with the roots as written, too).
      if (!under(resolved, [...realRoots(), ...allowedRoots().map((r) => path.resolve(r))])) throw outsideRoots();
      throw projectDirError(`no such directory: ${dir}`, 'no such directory');
    }
    if (!under(real, realRoots())) throw outsideRoots();
    if (!statSync(real).isDirectory()) throw projectDirError(`not a directory: ${dir}`, 'not a directory');
    return real;
  }

  async function startSession(
    body: {
      projectDir?: string;
      mode?: 'general' | 'scientific';
      toolAccess?: 'full' | 'read_only';
      review?: 'plan' | 'always';
    },
    sessionId = `s-${randomUUID().slice(0, 8)}`
  ) {
    const projectDir = resolveProjectDir(body.projectDir);
    const mode = body.mode ?? config.general.mode;
    const input: SessionInput = {
      sessionId,
      projectDir,
      mode,
      toolAccess: body.toolAccess ?? config.general.tool_access,
      review: body.review ?? config.general.review,
      memory: {
        summarisationThresholdChars: config.general.memory.summarisation_threshold_chars,
        numHistoryChars: config.general.memory.num_history_chars,
      },
    };
    await calls.start(sessionTarget(sessionId), 'sessionWorkflow', {
      taskQueue,
      workflowId: sessionWorkflowId(sessionId),
      args: [input],
      staticSummary: `chat session ${sessionId}`,
      staticDetails: `project ${projectDir}`,
      typedSearchAttributes: [
        { key: KleaSessionId, value: sessionId },
        { key: KleaMode, value: mode },
      ],
    });
    return sessionId;
  }

  /**
   * A session this request started, whose task no worker took in time: stopped, so that neither it nor the task
   * Temporal still holds for it starts later, after the caller was told it failed.
   */
  async function abandon(sessionId: string, cause: ApiError): Promise<ApiError> {
    try {
      await calls.terminate(sessionTarget(sessionId), 'no worker took its first task');
    } catch {
      return cause;
    }
    return unavailable(
      'no_worker',
      `no worker took the task within ${calls.acceptTimeoutMs / 1000} s (is the worker running?); the new ` +
        'session was stopped, so the task will not start later'
    );
  }

  async function health() {
    const temporalStatus = {
      status: 'ok' as 'ok' | 'unreachable',
      address: config.temporal.address,
      namespace,
      error: undefined as string | undefined,
    };
    const worker = { status: 'unknown' as 'ok' | 'none' | 'unknown', taskQueue, pollers: 0 };
    try {
      // A health check answers within seconds even when Temporal is down.
      const { pollers } = await calls.workerPresence(Math.min(3000, calls.callTimeoutMs));
      worker.pollers = pollers;
      worker.status = pollers > 0 ? 'ok' : 'none';
    } catch (err) {
      temporalStatus.status = 'unreachable';
      temporalStatus.error = err instanceof Error ? err.message : String(err);
    }
    const modelOk = isModelConfigured(config);
    return {
      status: temporalStatus.status === 'ok' && worker.status === 'ok' ? ('ok' as const) : ('degraded' as const),
      temporal: temporalStatus,
      worker,
      model: {
        status: modelOk ? ('configured' as const) : ('not_configured' as const),
        name: config.model.name,
        ...(modelOk ? {} : { hint: MODEL_NOT_CONFIGURED_HINT }),
      },
      temporalUi: uiUrl,
    };
  }

  /** Events as JSON (?after=) or as a server-sent event stream. */
  function eventsRoute(targetOf: (id: string) => Target, eventsQuery: typeof taskEventsQuery) {
    return async ({
      params,
      query,
      req,
      res,
    }: {
      params: { id: string };
      query: { after?: number };
      req: express.Request;
      res: express.Response;
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
        await calls.update(taskTarget(params.id), update, b, { noun: 'decision' });
        return { accepted: true as const };
      },
    });

  const routes: RouteSpec[] = [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getHealth',
      summary: 'Liveness, Temporal reachability, worker presence and model configuration',
      auth: false,
      responses: {
        200: { description: 'Temporal reachable and a worker polls the task queue', schema: HealthResponseSchema },
        503: { description: 'degraded: Temporal unreachable or no worker polling', schema: HealthResponseSchema },
      },
      handler: async ({ res }) => {
        const body = await health();
        if (body.status !== 'ok') res.set('Retry-After', String(RETRY_AFTER_SECONDS));
        res.status(body.status === 'ok' ? 200 : 503).json(body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApi',
      summary: 'This API as an OpenAPI 3 document',
      responses: { 200: { description: 'the OpenAPI document' } },
      handler: () => openapi,
    }),

    // ---------------------------------------------------------------- sessions
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
        const sessionId = await startSession(body);
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
        ...(await calls.query(sessionTarget(params.id), sessionStateQuery)),
        temporalUiUrl: runUrl(sessionWorkflowId(params.id)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/sessions/:id/messages',
      operationId: 'postMessage',
      summary: 'Send a message or a /command to a session',
      tags: ['sessions'],
      params: SessionParamsSchema,
      body: MessageRequestSchema,
      responses: {
        200: { description: 'chat reply, started task, or command result', schema: MessageResponseSchema },
        404: { description: 'no such session' },
        409: { description: 'the session has ended' },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: ({ params, body }) => calls.update(sessionTarget(params.id), submitUpdate, body, { noun: 'message' }),
    }),
    defineRoute({
      method: 'patch',
      path: '/sessions/:id',
      operationId: 'patchSession',
      summary: "Change a session's mode or tool access level",
      tags: ['sessions'],
      params: SessionParamsSchema,
      body: PatchSessionRequestSchema,
      responses: {
        200: { description: 'the settings were applied', schema: AcceptedResponseSchema },
        404: { description: 'no such session' },
        409: { description: 'the session has ended' },
        ...TEMPORAL_DOWN,
      },
      handler: async ({ params, body }) => {
        await calls.signal(sessionTarget(params.id), settingsSignal, body);
        return { accepted: true as const };
      },
    }),
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
      handler: eventsRoute(sessionTarget, sessionEventsQuery),
    }),

    // ---------------------------------------------------------------- tasks
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
        sessionId ??= await startSession(body);
        const task = {
          prompt: body.prompt,
          ...(body.mode ? { mode: body.mode } : {}),
          ...(body.toolAccess ? { toolAccess: body.toolAccess } : {}),
          ...(body.review ? { review: body.review } : {}),
        };
        try {
          const { taskId, queued } = await calls.update(sessionTarget(sessionId), startTaskUpdate, task, {
            noun: 'task',
            workerChecked: true,
          });
          return { taskId, sessionId, temporalUiUrl: runUrl(taskId), queued };
        } catch (err) {
          if (created && err instanceof ApiError && err.code === 'no_worker') throw await abandon(sessionId, err);
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
        ...(await calls.query(taskTarget(params.id), taskStateQuery)),
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
      handler: eventsRoute(taskTarget, taskEventsQuery),
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
        await calls.signal(taskTarget(params.id), cancelSignal, body);
        return { accepted: true as const };
      },
    }),
  ];

  routes.push(...webRoutes({ uiUrl, namespace }));
  const openapi = buildOpenApiDocument(routes, { version, tokenRequired: Boolean(config.api.token) });
  const router = express.Router();
  mountRoutes(router, routes, bearerAuth(config.api.token));
  app.use(router);
  app.use((req, _res, next) => next(new ApiError(404, 'not_found', `no route ${req.method} ${req.path}`)));
  app.use(errorHandler);
  return app;
}
