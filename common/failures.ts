/**
 * Klea's failure vocabulary: the `type` of every ApplicationFailure an activity or a workflow throws, and the `code`
 * of the `error` event that reports it. Throwers and readers (the workflows, the API's error mapping, the CLI) name
 * them from here, so a renamed failure fails to compile rather than silently no longer matching.
 *
 * Pure: bundled into workflows.
 */
import { TimeoutFailure } from '@temporalio/common';

export const Failure = {
  /** No model endpoint is configured: nothing a retry can fix until the operator sets one (503 from the API). */
  ModelNotConfigured: 'ModelNotConfigured',
  /** The endpoint refused the request with a 4xx a retry cannot fix (bad request, auth, unknown model). */
  ModelRequestRefused: 'ModelRequestRefused',
  /** The endpoint could not be reached, timed out or was overloaded: retried, the type kept when retries run out. */
  ModelUnavailable: 'ModelUnavailable',
  /** The endpoint answered with another 5xx: retried, since servers recover. */
  ModelServerError: 'ModelServerError',
  /** The model's structured output stayed invalid after the bounded re-asks: more of the same will not help. */
  ModelOutputInvalid: 'ModelOutputInvalid',
  /** The project directory is not under `project.allowed_roots` (or not its real path): nothing runs there. */
  ProjectNotAllowed: 'ProjectNotAllowed',
  /** A configured MCP server's entry cannot be used as written: the operator must fix the config. */
  ToolServerMisconfigured: 'ToolServerMisconfigured',
  /** An MCP server failed to start or could not be reached (an error class: its name becomes the failure type). */
  McpServerUnavailable: 'McpServerUnavailable',
  /** /init could not write AGENTS.md into the project: the workspace server refused or failed the write. */
  InitWriteFailed: 'InitWriteFailed',
  /** /init failed as a whole (the model or the write): reported on the session, which carries on. */
  InitFailed: 'InitFailed',
  /** A workflow's input failed its schema: the run cannot start from it, so it fails rather than retries. */
  InvalidInput: 'InvalidInput',
  /** A signal's payload failed its schema: it is ignored and reported, since a signal has no caller to answer. */
  InvalidSignal: 'InvalidSignal',
  /** Path grants in a session's input did not come from its own earlier run: dropped, so no caller can forge one. */
  GrantsIgnored: 'GrantsIgnored',
  /** A grant to revoke is not one the session holds (revoked already, lapsed, or never made): 404 from the API. */
  GrantNotFound: 'GrantNotFound',
  /** The entry router failed for a reason other than the model's own typed failures. */
  RouteFailed: 'RouteFailed',
  /** No step of the plan can run and none waits for an answer: the run would otherwise wait forever. */
  PlanStuck: 'PlanStuck',
  /** A task's run was reset by something other than a rewind: it runs again, but nothing restored its files. */
  ResetOutsideRewind: 'ResetOutsideRewind',
  /** A rewind could not be carried out (the reset, or a step with no point to reset to). */
  RewindFailed: 'RewindFailed',
  /** No step of the plan achieved its instruction: the task ends failed, its answer saying what was tried. */
  NothingAchieved: 'NothingAchieved',
  /**
   * A group project's changing activity reached a host of the group that does not hold the project's lease
   * (activities/project/lease.ts): its details name the host that does, and the workflow sends the activity there.
   */
  ProjectHeldElsewhere: 'ProjectHeldElsewhere',
  /**
   * A new plan asked for after a step could not be completed asks nothing the plan before it did not (the same
   * steps, the same instructions): it is not run, since it would fail the same way; the task goes on to its answer.
   */
  PlanRepeated: 'PlanRepeated',
  /** The task failed with an untyped error: the fallback code, so every failure has one. */
  TaskFailed: 'TaskFailed',
} as const;

export type FailureType = (typeof Failure)[keyof typeof Failure];

/** Whether a failure chain holds a timeout (an activity's schedule-to-close time ran out, say). */
export function isTimeout(err: unknown): boolean {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth++)
    if (e instanceof TimeoutFailure) return true;
  return false;
}

/** The innermost message of a failure chain (ActivityFailure → ApplicationFailure → ...). */
export function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}

/**
 * The type of the innermost typed failure of a chain (`ModelOutputInvalid`, `ModelNotConfigured`, an error class a
 * retried activity ended with), for the `error` event's code; `fallback` when none has a type.
 */
export function failureCode(err: unknown, fallback: string): string {
  let code = fallback;
  for (let e = err as { type?: unknown; cause?: unknown } | undefined; e && typeof e === 'object';) {
    if (typeof e.type === 'string' && e.type) code = e.type;
    e = e.cause as typeof e;
  }
  return code;
}
