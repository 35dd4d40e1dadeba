/**
 * Messages of `taskWorkflow` (contract names). Each decision is a signal that works on its own (for example from
 * `temporal workflow signal --name review --input '{"decision":"approve"}'`), and an update of the same name
 * beside it for callers that want an answer: its validator rejects a decision that is not pending or is stale
 * before anything reaches history.
 */
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate, setHandler } from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import type { RewoundSignal } from '../../common/rewind';
import type {
  CancelRequest,
  ClarifyAnswers,
  GrantRevoked,
  PermissionDecision,
  ReviewDecision,
  TaskState,
} from '../../common/task';

export const reviewSignal = defineSignal<[ReviewDecision]>('review');
export const clarifySignal = defineSignal<[ClarifyAnswers]>('clarify');
export const permissionSignal = defineSignal<[PermissionDecision]>('permission');
export const cancelSignal = defineSignal<[CancelRequest?]>('cancel');
/** Sent by a rewind to the run its reset made: never by a client. */
export const rewoundSignal = defineSignal<[RewoundSignal]>('rewound');
/** From the task's session: the user revoked a grant for the session, so the task stops using it at once. */
export const grantRevokedSignal = defineSignal<[GrantRevoked]>('grantRevoked');

export interface DecisionAck {
  accepted: true;
}
export const reviewUpdate = defineUpdate<DecisionAck, [ReviewDecision]>('review');
export const clarifyUpdate = defineUpdate<DecisionAck, [ClarifyAnswers]>('clarify');
export const permissionUpdate = defineUpdate<DecisionAck, [PermissionDecision]>('permission');

export const stateQuery = defineQuery<TaskState>('state');
/** The events with seq after `after` (and, when given, before `before`): a reader asks for what it lacks. */
export const eventsQuery = defineQuery<KleaEvent[], [{ after?: number; before?: number }?]>('events');

export interface DecisionHandlers {
  /** Takes the payload if it can be taken (it may be malformed: signals are not validated); never throws. */
  accept(raw: unknown): void;
  /** Why the update refuses the payload (it throws for a malformed one), or null to accept it. */
  refusal(raw: unknown): string | null;
}

/**
 * Wires a decision's signal and its same-named update to the same `accept`, so both follow one set of rules; the
 * update's validator refuses what `refusal` names, before anything reaches history.
 */
export function setDecisionHandlers<T>(
  signal: SignalDefinition<[T]>,
  update: UpdateDefinition<DecisionAck, [T]>,
  handlers: DecisionHandlers
): void {
  setHandler(signal, (payload) => handlers.accept(payload));
  setHandler(
    update,
    (payload) => {
      handlers.accept(payload);
      return { accepted: true as const };
    },
    {
      validator: (payload) => {
        const problem = handlers.refusal(payload);
        if (problem) throw new Error(problem);
      },
    }
  );
}
