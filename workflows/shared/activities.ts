/** Activity proxies shared by Klea's workflows, with the timeouts and retries that fit each kind of call. */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';

/**
 * Model calls and other short I/O. Activities heartbeat every few seconds, so one on a worker that died is
 * retried elsewhere after the heartbeat timeout rather than after its start-to-close timeout.
 */
export const modelActivities = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

/** File-system facts (path checks, project context): quick and read-only. */
export const fsActivities = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 4 },
});

/** Longer work that looks around the project and writes (e.g. /init). */
export const longActivities = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 3 },
});
