/**
 * The health probe (GET /healthz): Temporal reachability, worker presence, model configuration, and the workers'
 * command sandbox (read from their Temporal identities; it does not change the overall status, since everything
 * but run_command works without it).
 */
import type { z } from 'zod';
import { HealthAnswerSchema, type HealthResponseSchema } from '../common/api';
import { isModelConfigured, MODEL_NOT_CONFIGURED_HINT, type Config } from '../common/config';
import { sandboxOfIdentity, sandboxWhyOfIdentity, type SandboxStatus } from '../common/sandbox-status';
import { hostTaskQueue } from '../common/home';
import { hasToken } from './auth';
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
  let sandbox: Health['sandbox'] = { status: 'unknown', detail: 'no worker has said where it runs commands' };
  let hosts: NonNullable<Health['hosts']> = [];
  try {
    // A health check answers within seconds even when Temporal is down.
    const within = Math.min(3000, calls.callTimeoutMs);
    const presence = await calls.workers.workerPresence(within);
    const { pollers, identities } = presence;
    worker.pollers = pollers;
    worker.status = pollers > 0 ? 'ok' : 'none';
    sandbox = sandboxHealth(identities);
    // On a cluster: which worker hosts poll their own task queue, where their projects' activities run.
    hosts = await Promise.all(
      presence.hosts.map(async (hostId) => {
        const at = await calls.workers.hostPollers(hostId, within);
        const roots = presence.roots.get(hostId);
        const group = presence.groups.get(hostId);
        return {
          hostId,
          taskQueue: hostTaskQueue(hostId),
          status: at.pollers > 0 ? ('ok' as const) : ('gone' as const),
          pollers: at.pollers,
          ...(roots ? { roots } : {}),
          ...(group ? { group } : {}),
        };
      })
    );
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
    sandbox,
    temporalUi: uiUrl,
    ...(hosts.length ? { hosts } : {}),
  };
}

/** The command sandbox of the workers polling now: any that cannot run it is reported first. */
function sandboxHealth(identities: readonly string[]): Health['sandbox'] {
  const seen = identities.map(sandboxOfIdentity).filter((s): s is SandboxStatus => s !== null);
  const count = (s: SandboxStatus) => seen.filter((x) => x === s).length;
  const of = (n: number) => `${n} of ${identities.length} worker(s)`;
  if (count('unavailable')) {
    const why = identities.map(sandboxWhyOfIdentity).find((w) => w !== null);
    return {
      status: 'unavailable',
      detail:
        `${of(count('unavailable'))} cannot run the command sandbox, so run_command is refused there` +
        (why ? `: ${why} (the worker's log says how to fix it)` : " (the worker's log says why)"),
    };
  }
  if (count('off'))
    return { status: 'off', detail: `${of(count('off'))} run commands without the sandbox (tools.sandbox.mode: none)` };
  if (count('on')) return { status: 'on', detail: `${of(count('on'))} run commands in the bubblewrap sandbox` };
  return { status: 'unknown', detail: 'no worker has said where it runs commands' };
}

export function healthRoute(deps: { calls: TemporalCalls; config: Config }): RouteSpec {
  return defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness, Temporal reachability, worker presence and model configuration',
    auth: false,
    responses: {
      200: {
        description:
          'Temporal reachable and a worker polls the task queue (only `status` without the token, when one is set)',
        schema: HealthAnswerSchema,
      },
      503: { description: 'degraded: Temporal unreachable or no worker polling', schema: HealthAnswerSchema },
    },
    handler: async ({ req, res }) => {
      const body = await probeHealth(deps.calls, deps.config);
      if (body.status !== 'ok') res.set('Retry-After', String(RETRY_AFTER_SECONDS));
      // Security: with a token configured, a caller without it learns up or not, not addresses or settings.
      const full = hasToken(deps.config.api.token, req.get('authorization'));
      res.status(body.status === 'ok' ? 200 : 503).json(full ? body : { status: body.status });
    },
  });
}
