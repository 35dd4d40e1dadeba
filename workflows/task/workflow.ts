/**
 * `taskWorkflow` (contract): one user task, from the request to the answer.
 *
 * Messages: queries `state` and `events {after}`.
 * Lifecycle: emits `context` first, routes the request with the `route_request` node, and ends with an `answer`
 * (labelled unverified) or an `error`, then a final `status` event. Status is mirrored into the `KleaStatus`
 * search attribute and the run's current details, so the Temporal UI shows where each task stands.
 */
import {
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { isFinalStatus, UNVERIFIED_LABEL, type TaskStatus } from '../../common/events';
import { KleaMode, KleaStatus } from '../../common/search-attributes';
import { TaskInputSchema, type TaskInput, type TaskResult, type TaskState } from '../../common/task';
import { EventLog } from '../shared/event-log';
import { eventsQuery, stateQuery } from './messages';
import { SCIENTIFIC_MODE_EXPLANATION } from './modes';

const model = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
});

export async function taskWorkflow(rawInput: TaskInput): Promise<TaskResult> {
  const parsed = TaskInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid task input: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      'InvalidInput'
    );
  }
  const input = parsed.data;
  const log = new EventLog();
  const state: Omit<TaskState, 'lastSeq'> = {
    taskId: input.taskId,
    sessionId: input.sessionId,
    status: 'routing',
    prompt: input.prompt,
    mode: input.mode,
    requestedMode: input.mode,
    toolAccess: input.toolAccess,
    answer: null,
    error: null,
  };

  setHandler(stateQuery, () => ({ ...state, lastSeq: log.lastSeq }));
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0));

  const setStatus = (status: TaskStatus, detail?: string) => {
    state.status = status;
    upsertSearchAttributes([{ key: KleaStatus, value: status }]);
    setCurrentDetails(`**${status}**${detail ? `: ${detail}` : ''}`);
    if (isFinalStatus(status)) log.emit({ type: 'status', status, detail });
  };
  const finish = (status: 'done' | 'failed' | 'cancelled', detail?: string): TaskResult => {
    setStatus(status, detail);
    return { taskId: input.taskId, status, answer: state.answer, verification: 'unverified', error: state.error };
  };
  const answer = (text: string) => {
    state.answer = text;
    log.emit({ type: 'answer', text, verification: 'unverified', label: UNVERIFIED_LABEL });
  };

  upsertSearchAttributes([{ key: KleaMode, value: input.mode }]);
  const declined = input.mode === 'scientific';
  log.emit({
    type: 'context',
    mode: input.mode,
    requestedMode: input.mode,
    modeNote: declined ? SCIENTIFIC_MODE_EXPLANATION : null,
    toolAccess: input.toolAccess,
    projectDir: input.projectDir,
    projectContextFile: null,
  });
  if (declined) {
    // Never a silently ungrounded answer: the request is declined with the reason.
    answer(SCIENTIFIC_MODE_EXPLANATION);
    return finish('done', 'scientific mode declined');
  }

  setStatus('routing', 'deciding between a direct reply and a planned task');
  try {
    const route = await model.routeRequest.executeWithOptions({ summary: 'route request' }, [{ text: input.prompt }]);
    if (route.route === 'chat' && route.reply) {
      answer(route.reply);
      return finish('done');
    }
    state.error = 'This request needs a plan, and planning is not available in this build of Klea yet.';
    log.emit({ type: 'error', code: 'PlanningUnavailable', message: state.error });
    return finish('failed', state.error);
  } catch (err) {
    if (isCancellation(err)) throw err;
    state.error = failureMessage(err);
    log.emit({ type: 'error', code: 'ActivityFailed', message: state.error });
    return finish('failed', state.error);
  }
}

function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  // ActivityFailure wraps the ApplicationFailure that carries the useful message.
  while (e?.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return e?.message ?? String(err);
}
