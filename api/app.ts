/**
 * Builds the Express app from injected dependencies (a Temporal client and the config). `index.ts` listens;
 * tests drive this app with supertest.
 */
import { randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import express, { type Express } from 'express';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  CreateTaskRequestSchema,
  CreateTaskResponseSchema,
  EventListSchema,
  EventsQuerySchema,
  HealthResponseSchema,
  TaskParamsSchema,
  TaskStateResponseSchema,
} from '../common/api';
import { isModelConfigured, MODEL_NOT_CONFIGURED_HINT, type Config } from '../common/config';
import { KleaMode, KleaSessionId, KleaStatus } from '../common/search-attributes';
import type { TaskInput } from '../common/task';
import { bearerAuth } from './auth';
import { ApiError, badRequest, errorHandler, notFound } from './errors';
import { buildOpenApiDocument } from './openapi';
import { defineRoute, mountRoutes, type RouteSpec } from './route';

export interface AppDeps {
  client: Client;
  config: Config;
  version?: string;
}

/** A poller seen within this window counts as a live worker (long polls last about a minute). */
const POLLER_FRESH_MS = 90_000;

export function createApp({ client, config, version = '0.1.0' }: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(express.json({ limit: config.api.max_body_bytes, strict: true }));

  const { namespace, task_queue: taskQueue, ui_url: uiUrl } = config.temporal;
  const runUrl = (workflowId: string) =>
    `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;

  const allowedRoots = () =>
    config.api.allowed_project_roots.length ? config.api.allowed_project_roots : [config.project.dir];
  /** Security: a client-chosen project directory must resolve (symlinks included) under an allowed root. */
  function resolveProjectDir(requested: string | undefined): string {
    const dir = requested ?? config.project.dir;
    let real: string;
    try {
      real = realpathSync(path.resolve(config.project.dir, dir));
    } catch {
      throw badRequest(`body.projectDir: no such directory: ${dir}`, [
        { path: 'body.projectDir', message: 'no such directory' },
      ]);
    }
    const ok = allowedRoots().some((root) => {
      let realRoot: string;
      try {
        realRoot = realpathSync(root);
      } catch {
        return false;
      }
      return real === realRoot || real.startsWith(realRoot + path.sep);
    });
    if (!ok) {
      throw badRequest(`body.projectDir: must lie under an allowed project root (${allowedRoots().join(', ')})`, [
        { path: 'body.projectDir', message: 'outside the allowed project roots' },
      ]);
    }
    return real;
  }

  async function withWorkflow<T>(id: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFound(`no task with id "${id}"`);
      throw err;
    }
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
      const res = await client.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      const now = Date.now();
      const fresh = (res.pollers ?? []).filter((p) => {
        const t = p.lastAccessTime;
        const ms = t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
        return now - ms < POLLER_FRESH_MS;
      });
      worker.pollers = fresh.length;
      worker.status = fresh.length > 0 ? 'ok' : 'none';
    } catch (err) {
      temporalStatus.status = 'unreachable';
      temporalStatus.error = err instanceof Error ? err.message : String(err);
    }
    const modelOk = isModelConfigured(config);
    const body = {
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
    return body;
  }

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
    defineRoute({
      method: 'post',
      path: '/tasks',
      operationId: 'createTask',
      summary: 'Start a task (creates its session when none is given)',
      tags: ['tasks'],
      body: CreateTaskRequestSchema,
      status: 201,
      responses: { 201: { description: 'the task was started', schema: CreateTaskResponseSchema } },
      handler: async ({ body }) => {
        const projectDir = resolveProjectDir(body.projectDir);
        const sessionId = body.sessionId ?? `s-${randomUUID().slice(0, 8)}`;
        const mode = body.mode ?? config.general.mode;
        const toolAccess = body.toolAccess ?? config.general.tool_access;
        for (let n = 1; n < 10_000; n++) {
          const taskId = `task-${sessionId}-${n}`;
          const input: TaskInput = {
            taskId,
            sessionId,
            prompt: body.prompt,
            projectDir,
            mode,
            toolAccess,
            review: body.review ?? config.general.review,
          };
          try {
            await client.workflow.start('taskWorkflow', {
              taskQueue,
              workflowId: taskId,
              args: [input],
              staticSummary: firstLine(body.prompt),
              staticDetails: `session ${sessionId} · mode ${mode} · tools ${toolAccess} · project ${projectDir}`,
              typedSearchAttributes: [
                { key: KleaSessionId, value: sessionId },
                { key: KleaStatus, value: 'routing' },
                { key: KleaMode, value: mode },
              ],
            });
            return { taskId, sessionId, temporalUiUrl: runUrl(taskId) };
          } catch (err) {
            if (err instanceof WorkflowExecutionAlreadyStartedError) continue;
            throw err;
          }
        }
        throw new ApiError(409, 'conflict', `session ${sessionId} has no free task number`);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tasks/:id',
      operationId: 'getTask',
      summary: 'Task state: status, plan, pending interrupt, answer',
      tags: ['tasks'],
      params: TaskParamsSchema,
      responses: {
        200: { description: 'the task state', schema: TaskStateResponseSchema },
        404: { description: 'no such task' },
      },
      handler: ({ params }) =>
        withWorkflow(params.id, async () => {
          const state = await client.workflow.getHandle(params.id).query<Record<string, unknown>>('state');
          return { ...state, temporalUiUrl: runUrl(params.id) };
        }),
    }),
    defineRoute({
      method: 'get',
      path: '/tasks/:id/events',
      operationId: 'getTaskEvents',
      summary: 'Events of a task after a given seq',
      tags: ['tasks'],
      params: TaskParamsSchema,
      query: EventsQuerySchema,
      responses: {
        200: { description: 'the events after `after`, oldest first', schema: EventListSchema },
        404: { description: 'no such task' },
      },
      handler: ({ params, query }) =>
        withWorkflow(params.id, async () => ({
          events: await client.workflow
            .getHandle(params.id)
            .query<unknown[], [{ after: number }]>('events', { after: query.after ?? 0 }),
        })),
    }),
  ];

  const openapi = buildOpenApiDocument(routes, { version, tokenRequired: Boolean(config.api.token) });
  const router = express.Router();
  mountRoutes(router, routes, bearerAuth(config.api.token));
  app.use(router);
  app.use((req, _res, next) => next(new ApiError(404, 'not_found', `no route ${req.method} ${req.path}`)));
  app.use(errorHandler);
  return app;
}

const firstLine = (text: string) => {
  const line = text.trim().split('\n')[0];
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
};
