/** Messages of `sessionWorkflow` (contract names, plus `startTask` for POST /tasks). */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import type { HeldGrant, SessionGrant, TaskResult } from '../../common/task';
import type {
  RevokeGrantRequest,
  SessionSettings,
  SessionState,
  StartTaskRequest,
  SubmitRequest,
  SubmitResult,
} from '../../common/session';

export const submitUpdate = defineUpdate<SubmitResult, [SubmitRequest]>('submit');
export const startTaskUpdate = defineUpdate<{ taskId: string; queued: boolean }, [StartTaskRequest]>('startTask');
export const settingsSignal = defineSignal<[SessionSettings]>('settings');
/** From a child task when the user allows a path for the session (recorded at once, whatever the task's fate). */
export const grantSignal = defineSignal<[SessionGrant]>('grant');
/** A task's run made by a rewind's reset reports its end (its parent hears of no other way): its result. */
export const taskEndedSignal = defineSignal<[TaskResult]>('taskEnded');
/**
 * A rewind is about to reset the session's running task: Temporal reports that run terminated, and the session waits
 * for the new run's own report (`taskEnded`) instead of taking the task as failed.
 */
export const taskRewindingSignal = defineSignal<[{ taskId: string }]>('taskRewinding');
/** Revokes a grant the session holds (DELETE /sessions/:id/grants/:grantId); an unknown id is refused. */
export const revokeGrantUpdate = defineUpdate<{ revoked: HeldGrant }, [RevokeGrantRequest]>('revokeGrant');
export const stateQuery = defineQuery<SessionState>('state');
/** The events with seq after `after` (and, when given, before `before`): a reader asks for what it lacks. */
export const eventsQuery = defineQuery<KleaEvent[], [{ after?: number; before?: number }?]>('events');
