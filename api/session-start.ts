/**
 * Starting a session's workflow, for POST /sessions and for POST /tasks without a session: the input filled in
 * from the config's defaults, and the project directory checked against the allowed roots.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { CreateSessionRequestSchema } from '../common/api';
import type { Config } from '../common/config';
import { KleaMode, KleaSessionId } from '../common/search-attributes';
import type { SessionInput } from '../common/session';
import { type ApiError, unavailable } from './errors';
import type { ProjectDirResolver } from './projects';
import { sessionTarget, sessionWorkflowId } from './targets';
import type { TemporalCalls } from './temporal-calls';

/** The session settings a request may choose (POST /tasks carries them beside its prompt). */
export type SessionRequest = z.output<typeof CreateSessionRequestSchema>;

export interface SessionStarter {
  /** Starts the session's workflow; returns the session id. */
  start(body: SessionRequest, sessionId?: string): Promise<string>;
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
  return {
    async start(body, sessionId = `s-${randomUUID().slice(0, 8)}`) {
      const projectDir = resolveProjectDir(body.projectDir);
      const mode = body.mode ?? config.general.mode;
      const input: SessionInput = {
        sessionId,
        projectDir,
        mode,
        toolAccess: body.toolAccess ?? config.general.tool_access,
        network: body.network ?? config.tools.sandbox.network,
        review: body.review ?? config.general.review,
        memory: {
          summarisationThresholdChars: config.general.memory.summarisation_threshold_chars,
          numHistoryChars: config.general.memory.num_history_chars,
        },
        routeTimeoutMs: config.model.route_timeout_ms,
        maxTokensPerTask: config.model.max_tokens_per_task,
        maxCallsPerStep: config.limits.max_calls_per_step,
        taskContinueAsNewAfterEvents: config.task.continue_as_new_after_events,
      };
      await calls.start(sessionTarget(sessionId), 'sessionWorkflow', {
        taskQueue: config.temporal.task_queue,
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
