/**
 * Messages of `taskWorkflow` (contract names). Each decision is a signal that works on its own (for example from
 * `temporal workflow signal --name review --input '{"decision":"approve"}'`), and an update of the same name
 * beside it for callers that want an answer: its validator rejects a decision that is not pending or is stale
 * before anything reaches history.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import type { CancelRequest, ClarifyAnswers, PermissionDecision, ReviewDecision, TaskState } from '../../common/task';

export const reviewSignal = defineSignal<[ReviewDecision]>('review');
export const clarifySignal = defineSignal<[ClarifyAnswers]>('clarify');
export const permissionSignal = defineSignal<[PermissionDecision]>('permission');
export const cancelSignal = defineSignal<[CancelRequest?]>('cancel');

export interface DecisionAck {
  accepted: true;
}
export const reviewUpdate = defineUpdate<DecisionAck, [ReviewDecision]>('review');
export const clarifyUpdate = defineUpdate<DecisionAck, [ClarifyAnswers]>('clarify');
export const permissionUpdate = defineUpdate<DecisionAck, [PermissionDecision]>('permission');

export const stateQuery = defineQuery<TaskState>('state');
export const eventsQuery = defineQuery<KleaEvent[], [{ after?: number }?]>('events');
