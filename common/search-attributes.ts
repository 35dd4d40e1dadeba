/** Klea's custom search attributes, so runs can be filtered in the Temporal UI (`KleaTokens > 100000`). */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export const KleaSessionId = defineSearchAttributeKey('KleaSessionId', SearchAttributeType.KEYWORD);
export const KleaStatus = defineSearchAttributeKey('KleaStatus', SearchAttributeType.KEYWORD);
export const KleaMode = defineSearchAttributeKey('KleaMode', SearchAttributeType.KEYWORD);
/** A task's model tokens so far (input + output), and its model calls. */
export const KleaTokens = defineSearchAttributeKey('KleaTokens', SearchAttributeType.INT);
export const KleaModelCalls = defineSearchAttributeKey('KleaModelCalls', SearchAttributeType.INT);
/** When a task last started waiting for the user (review, answers, permission): the inbox's "waiting since". */
export const KleaWaitingSince = defineSearchAttributeKey('KleaWaitingSince', SearchAttributeType.DATETIME);
/**
 * A session's last activity (a message or command it took, a task it started or that ended): the inbox's order.
 * Going to sleep and waking keep it, so a sleeping session keeps its place.
 */
export const KleaLastActivity = defineSearchAttributeKey('KleaLastActivity', SearchAttributeType.DATETIME);
/** A session's project directory (as the API resolved it), so sessions are found by project. */
export const KleaProject = defineSearchAttributeKey('KleaProject', SearchAttributeType.KEYWORD);
/** On a cluster: the worker host that holds a session's project (its home), so projects are listed by host. */
export const KleaHost = defineSearchAttributeKey('KleaHost', SearchAttributeType.KEYWORD);

/** Every custom attribute with its type as the Temporal CLI names it (`--search-attribute Name=Type`). */
export const SEARCH_ATTRIBUTES = [
  { name: KleaSessionId.name, type: 'Keyword' },
  { name: KleaStatus.name, type: 'Keyword' },
  { name: KleaMode.name, type: 'Keyword' },
  { name: KleaTokens.name, type: 'Int' },
  { name: KleaModelCalls.name, type: 'Int' },
  { name: KleaWaitingSince.name, type: 'Datetime' },
  { name: KleaLastActivity.name, type: 'Datetime' },
  { name: KleaProject.name, type: 'Keyword' },
  { name: KleaHost.name, type: 'Keyword' },
] as const;

/**
 * The search attributes a session starts each of its tasks with, so the task is found in the Temporal UI from its
 * first moment (and need not upsert what it starts with).
 */
export function taskStartAttributes(sessionId: string, mode: string): SearchAttributePair[] {
  return [
    { key: KleaSessionId, value: sessionId },
    { key: KleaStatus, value: 'planning' },
    { key: KleaMode, value: mode },
  ];
}
