/**
 * Activity proxies shared by Klea's workflows: one per kind of work, each typed to the activities of that kind
 * (so a tool call cannot go out with a model node's timeouts) and given the timeouts and retries that fit it.
 * Every activity heartbeats every few seconds, so one on a worker that died is retried elsewhere after the
 * heartbeat timeout rather than after its start-to-close timeout.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';

/** The model nodes (docs/architecture.md §7): one chat-completions request each, with bounded re-asks inside. */
export const modelNodes = proxyActivities<
  Pick<
    Activities,
    'routeRequest' | 'writePlan' | 'pickTools' | 'doStep' | 'evaluateStep' | 'composeAnswer' | 'summarizeMemory'
  >
>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

/**
 * MCP tool calls. How often a call may be attempted follows the tool (`toolRetryPolicy`: a call that writes is
 * attempted once), so each call passes its own `retry`; this one is merged under it.
 */
export const toolCalls = proxyActivities<Pick<Activities, 'callTool'>>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 1 },
});

/** Facts about the project's files (where a call's paths resolve, the project context file): quick, read-only. */
export const projectFacts = proxyActivities<Pick<Activities, 'projectContextInfo'>>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 4 },
});

/**
 * The same facts as a local activity: run by the worker that runs the workflow, with no round trip through the
 * task queue, for work this short (a stat and a cached read).
 */
export const localProjectFacts = proxyLocalActivities<Pick<Activities, 'projectContextInfo'>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 4 },
});

/** `/init`: looks around the project, has the model write the guidance, and writes AGENTS.md. */
export const projectSetup = proxyActivities<Pick<Activities, 'initProject'>>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 3 },
});

/** A woken session reads the grants of the run that went to sleep (activities/session/slept-run.ts). */
export const sessionRuns = proxyActivities<Pick<Activities, 'sleptSessionGrants'>>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumAttempts: 5 },
});
