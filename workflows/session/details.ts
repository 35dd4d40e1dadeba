/** What a session shows in the Temporal UI (workflow code): its current details and its `KleaMode` attribute. */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { KleaMode } from '../../common/search-attributes';
import type { Session } from './session-state';

export function showSessionDetails(session: Session): void {
  setCurrentDetails(session.details());
  // KleaStatus is left to tasks, so `KleaStatus="awaiting_review"` lists only tasks waiting for people.
  upsertSearchAttributes([{ key: KleaMode, value: session.mode }]);
}
