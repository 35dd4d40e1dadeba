/** Messages of `sessionWorkflow` (contract names, plus `startTask` for POST /tasks). */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import type {
  SessionSettings,
  SessionState,
  StartTaskRequest,
  SubmitRequest,
  SubmitResult,
} from '../../common/session';

export const submitUpdate = defineUpdate<SubmitResult, [SubmitRequest]>('submit');
export const startTaskUpdate = defineUpdate<{ taskId: string; queued: boolean }, [StartTaskRequest]>('startTask');
export const settingsSignal = defineSignal<[SessionSettings]>('settings');
export const stateQuery = defineQuery<SessionState>('state');
export const eventsQuery = defineQuery<KleaEvent[], [{ after?: number }?]>('events');
