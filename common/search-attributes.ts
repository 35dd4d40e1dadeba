/** Klea's custom search attributes (Keyword), so runs can be filtered in the Temporal UI. */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const KleaSessionId = defineSearchAttributeKey('KleaSessionId', SearchAttributeType.KEYWORD);
export const KleaStatus = defineSearchAttributeKey('KleaStatus', SearchAttributeType.KEYWORD);
export const KleaMode = defineSearchAttributeKey('KleaMode', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_NAMES = [KleaSessionId.name, KleaStatus.name, KleaMode.name] as const;
