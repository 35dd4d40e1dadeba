/**
 * Starting a session's workflow, for POST /sessions and for POST /tasks without a session: the input filled in
 * from the config's defaults, and the project directory checked against the allowed roots. Waking a session that
 * went to sleep starts its workflow again, on the same id, from what its last run returned.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowStartOptions } from '@temporalio/client';
import type { z } from 'zod';
import type { CreateSessionRequestSchema } from '../common/api';
import type { Config, Mode } from '../common/config';
import { KleaHost, KleaLastActivity, KleaMode, KleaProject, KleaSessionId } from '../common/search-attributes';
import { homeName } from '../common/home';
import type { SessionInput, SessionSleep } from '../common/session';
import type { sessionWorkflow } from '../workflows';
import { type ApiError, unavailable } from './errors';
import { chooseHome } from './home';
import type { ProjectDirResolver } from './projects';
import { newSessionId, sessionTarget, sessionWorkflowId } from './targets';
import type { TemporalCalls } from './temporal-calls';

/** The session settings a request may choose (POST /tasks carries them beside its prompt). */
export type SessionRequest = z.output<typeof CreateSessionRequestSchema>;

export type SessionStartOptions = WorkflowStartOptions<typeof sessionWorkflow>;

export interface SessionStarter {
  /** Starts the session's workflow; returns the session id. */
  start(body: SessionRequest, sessionId?: string): Promise<string>;
  /** How to start the run that wakes a session whose run `runId` went to sleep with `slept`. */
  wakeOptions(slept: SessionSleep, runId: string): SessionStartOptions;
  /**
   * A session this request started, whose task no worker took in time: stopped, so that neither it nor the task
   * Temporal still holds for it starts later, after the caller was told it failed.
   */
  abandon(sessionId: string, cause: ApiError): Promise<ApiError>;
}

export function sessionStarter(deps: {
  calls: TemporalCalls;
  config: Config;
  resolveProjectDir: ProjectDirResolver;
}): SessionStarter {
  const { calls, config, resolveProjectDir } = deps;

  /** The operator's settings every run of a session takes from the config in force when it starts. */
  const runSettings = () => ({
    memory: {
      summarisationThresholdChars: config.general.memory.summarisation_threshold_chars,
      numHistoryChars: config.general.memory.num_history_chars,
    },
    routeTimeoutMs: config.model.route_timeout_ms,
    maxTokensPerTask: config.model.max_tokens_per_task,
    maxCallsPerStep: config.limits.max_calls_per_step,
    idleCloseMs: config.session.idle_close_ms,
    grantTtlMs: config.permissions.session_grant_ttl_ms,
    taskContinueAsNewAfterEvents: config.task.continue_as_new_after_events,
  });

  const startOptions = (sessionId: string, input: SessionInput, mode: Mode): SessionStartOptions => ({
    taskQueue: config.temporal.task_queue,
    workflowId: sessionWorkflowId(sessionId),
    args: [input],
    staticSummary: `chat session ${sessionId}`,
    staticDetails: `project ${input.projectDir}${input.home ? ` on ${input.home.groupId !== undefined ? `group ${input.home.groupId}` : `host ${input.home.hostId}`}` : ''}`,
    typedSearchAttributes: [
      { key: KleaSessionId, value: sessionId },
      { key: KleaMode, value: mode },
      // Listed in the inbox in its place from the start: a new session now, a woken one where it slept.
      { key: KleaLastActivity, value: new Date(input.carry?.lastActivityAt ?? Date.now()) },
      // The inbox and GET /hosts list sessions by project and by the host that holds it.
      { key: KleaProject, value: input.projectDir },
      ...(input.home ? [{ key: KleaHost, value: homeName(input.home) }] : []),
    ],
  });

  return {
    async start(body, sessionId = newSessionId(randomUUID())) {
      const projectDir = resolveProjectDir(body.projectDir);
      const mode = body.mode ?? config.general.mode;
      const home = await chooseHome(calls, config, { host: body.host, group: body.group }, projectDir);
      const input: SessionInput = {
        sessionId,
        projectDir,
        mode,
        toolAccess: body.toolAccess ?? config.general.tool_access,
        network: body.network ?? config.tools.sandbox.network,
        review: body.review ?? config.general.review,
        ...runSettings(),
        ...(home ? { home } : {}),
      };
      await calls.start(sessionTarget(sessionId), 'sessionWorkflow', startOptions(sessionId, input, mode));
      return sessionId;
    },

    wakeOptions(slept, runId) {
      const { sessionId, projectDir, carry, home } = slept;
      const input: SessionInput = {
        sessionId,
        projectDir,
        ...runSettings(),
        carry,
        wakeFrom: runId,
        ...(home ? { home } : {}),
      };
      return startOptions(sessionId, input, carry.mode);
    },

    async abandon(sessionId, cause) {
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
    },
  };
}
