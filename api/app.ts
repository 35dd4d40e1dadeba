/**
 * Builds the Express app from injected dependencies (a Temporal client and the config). `index.ts` listens;
 * tests drive this app with supertest. Every route is a thin Temporal client call (start, signal, update,
 * query), validated by the zod schemas in common/ with the parsed value handed on. The routes live in routes/
 * (sessions, tasks), health.ts, web.ts and codec.ts (Temporal's codec server, with a payload key); this module
 * wires them together and adds the OpenAPI document.
 */
import express, { type Express } from 'express';
import type { Client } from '@temporalio/client';
import type { Config } from '../common/config';
import { bearerAuth } from './auth';
import { codecServer } from './codec';
import { ApiError, errorHandler } from './errors';
import { DEFAULT_POLL_SCHEDULE, EventFeeds, type PollSchedule } from './event-feed';
import { healthRoute } from './health';
import { apiObservability } from './observe';
import { buildOpenApiDocument } from './openapi';
import { projectDirResolver } from './projects';
import { requestGuard } from './request-guard';
import { defineRoute, mountRoutes, type RouteSpec } from './route';
import { hostsRoute } from './routes/hosts';
import { inboxRoutes } from './routes/inbox';
import { sessionRoutes } from './routes/sessions';
import { taskRoutes } from './routes/tasks';
import { sessionStarter } from './session-start';
import { sessionWaker } from './session-wake';
import { runUrlFor } from './targets';
import { TemporalCalls } from './temporal-calls';
import { webAssets, webPageRoute } from './web';

export interface AppDeps {
  client: Client;
  config: Config;
  version?: string;
  /** The first poll of an event feed after a change (tests shorten it). */
  ssePollMs?: number;
  /** How event feeds poll their workflows (tests shorten or lengthen it); see event-feed.ts. */
  eventPolling?: Partial<PollSchedule>;
  /** Deadline of one Temporal call, and how long an update may wait for a worker (tests shorten them). */
  callTimeoutMs?: number;
  acceptTimeoutMs?: number;
}

export function createApp({
  client,
  config,
  version = '0.1.0',
  ssePollMs,
  eventPolling,
  callTimeoutMs,
  acceptTimeoutMs,
}: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // First: every request is timed and traced, refused ones included.
  const observe = apiObservability();
  app.use(observe.middleware);
  app.use(requestGuard(config));
  // Before the API's body parser: the codec routes take larger bodies, and the Temporal UI needs CORS.
  const codec = codecServer(config);
  codec.mount(app);
  app.use(express.json({ limit: config.api.max_body_bytes, strict: true }));

  const { namespace, task_queue: taskQueue, ui_url: uiUrl } = config.temporal;
  const calls = new TemporalCalls(client, {
    namespace,
    taskQueue,
    address: config.temporal.address,
    callTimeoutMs,
    acceptTimeoutMs,
  });
  const feeds = new EventFeeds(calls, {
    ...DEFAULT_POLL_SCHEDULE,
    ...(ssePollMs !== undefined ? { minMs: ssePollMs } : {}),
    ...eventPolling,
  });
  const resolveProjectDir = projectDirResolver(config);
  const sessions = sessionStarter({ calls, config, resolveProjectDir });
  const waker = sessionWaker({ calls, sessions });
  const runUrl = runUrlFor(uiUrl, namespace);

  const routes: RouteSpec[] = [
    healthRoute({ calls, config }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApi',
      summary: 'This API as an OpenAPI 3 document',
      responses: { 200: { description: 'the OpenAPI document' } },
      handler: () => openapi,
    }),
    ...sessionRoutes({ calls, sessions, waker, runUrl, feeds }),
    ...taskRoutes({ calls, sessions, waker, resolveProjectDir, runUrl, feeds }),
    ...inboxRoutes({ calls, runUrl }),
    hostsRoute({ calls }),
    webPageRoute({ uiUrl, namespace }),
    ...codec.routes,
    observe.route,
  ];
  const openapi = buildOpenApiDocument(routes, { version, tokenRequired: Boolean(config.api.token) });
  const router = express.Router();
  mountRoutes(router, routes, bearerAuth(config.api.token));
  app.use(router);
  app.use(webAssets());
  app.use((req, _res, next) => next(new ApiError(404, 'not_found', `no route ${req.method} ${req.path}`)));
  app.use(errorHandler);
  return app;
}
