/** The health probe (GET /healthz): Temporal reachability, worker presence and model configuration. */
import type { z } from 'zod';
import { HealthResponseSchema } from '../common/api';
import { isModelConfigured, MODEL_NOT_CONFIGURED_HINT, type Config } from '../common/config';
import { RETRY_AFTER_SECONDS } from './errors';
import { defineRoute, type RouteSpec } from './route';
import type { TemporalCalls } from './temporal-calls';

export type Health = z.output<typeof HealthResponseSchema>;

export async function probeHealth(calls: TemporalCalls, config: Config): Promise<Health> {
  const { address, namespace, task_queue: taskQueue, ui_url: uiUrl } = config.temporal;
  const temporalStatus = {
    status: 'ok' as 'ok' | 'unreachable',
    address,
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
    status: temporalStatus.status === 'ok' && worker.status === 'ok' ? 'ok' : 'degraded',
    temporal: temporalStatus,
    worker,
    model: {
      status: modelOk ? 'configured' : 'not_configured',
      name: config.model.name,
      ...(modelOk ? {} : { hint: MODEL_NOT_CONFIGURED_HINT }),
    },
    temporalUi: uiUrl,
  };
}

export function healthRoute(deps: { calls: TemporalCalls; config: Config }): RouteSpec {
  return defineRoute({
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
      const body = await probeHealth(deps.calls, deps.config);
      if (body.status !== 'ok') res.set('Retry-After', String(RETRY_AFTER_SECONDS));
      res.status(body.status === 'ok' ? 200 : 503).json(body);
    },
  });
}
