/**
 * What a session shows in the Temporal UI and the inbox (workflow code): its current details, and its `KleaMode`
 * and `KleaLastActivity` attributes.
 */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { KleaLastActivity, KleaMode } from '../../common/search-attributes';
import type { Session } from './session-state';

export function showSessionDetails(session: Session): void {
  setCurrentDetails(session.details());
  // KleaStatus is left to tasks, so `KleaStatus="awaiting_review"` lists only tasks waiting for people.
  upsertSearchAttributes([
    { key: KleaMode, value: session.mode },
    { key: KleaLastActivity, value: new Date(session.lastActivityAt) },
  ]);
}
