/**
 * Conversation memory (pure): the most recent `numHistoryChars` of turns stay verbatim; older turns are folded
 * into the running summary once they exceed `summarisationThresholdChars`. The last user request and what
 * follows it are never folded away.
 */
import type { MemorySettings, SummarizeResult, Turn } from '../../common/session';

export const turnChars = (t: Turn): number => t.text.length;
export const totalChars = (turns: readonly Turn[]): number => turns.reduce((n, t) => n + turnChars(t), 0);

/** Index of the last user turn (everything from it on is always kept verbatim). */
function lastUserIndex(turns: readonly Turn[]): number {
  for (let i = turns.length - 1; i >= 0; i--) if (turns[i].role === 'user') return i;
  return turns.length;
}

/** Splits turns into the older part and the recent window of at most `historyChars` (plus the protected tail). */
export function splitWindow(turns: readonly Turn[], historyChars: number): { older: Turn[]; recent: Turn[] } {
  const protectedFrom = lastUserIndex(turns);
  let start = Math.min(protectedFrom, turns.length);
  let used = totalChars(turns.slice(start));
  while (start > 0 && used + turnChars(turns[start - 1]) <= historyChars) {
    start--;
    used += turnChars(turns[start]);
  }
  return { older: turns.slice(0, start), recent: turns.slice(start) };
}

/** True when the older part has grown past the threshold. */
export function needsSummary(turns: readonly Turn[], settings: MemorySettings): boolean {
  return totalChars(splitWindow(turns, settings.numHistoryChars).older) > settings.summarisationThresholdChars;
}

/** What `/compact` folds: everything before the last user request. */
export function compactSplit(turns: readonly Turn[]): { older: Turn[]; recent: Turn[] } {
  const i = lastUserIndex(turns);
  return i >= turns.length ? { older: [...turns], recent: [] } : { older: turns.slice(0, i), recent: turns.slice(i) };
}

/** What folding needs of a summariser's result. */
export type FoldResult = Pick<SummarizeResult, 'summary' | 'foldedChars'>;

/** A session's memory: the running summary, the turns kept verbatim, and how much has been folded so far. */
export class SessionMemory {
  summary: string;
  turns: Turn[];
  summarisedChars: number;

  constructor(
    readonly settings: MemorySettings,
    carried?: { summary: string; turns: readonly Turn[]; summarisedChars: number }
  ) {
    this.summary = carried?.summary ?? '';
    this.turns = [...(carried?.turns ?? [])];
    this.summarisedChars = carried?.summarisedChars ?? 0;
  }

  /** The turns node prompts see verbatim. */
  recent(): Turn[] {
    return splitWindow(this.turns, this.settings.numHistoryChars).recent;
  }

  add(...turns: Turn[]): void {
    this.turns.push(...turns);
  }

  /** What the threshold asks to fold now, or null while the older part is under it. */
  due(): { older: Turn[]; recent: Turn[] } | null {
    return needsSummary(this.turns, this.settings) ? splitWindow(this.turns, this.settings.numHistoryChars) : null;
  }

  /** What `/compact` folds: everything before the last user request. */
  compaction(): { older: Turn[]; recent: Turn[] } {
    return compactSplit(this.turns);
  }

  /** Folds `older` into the summary. Turns that arrived while it was being summarised are kept. */
  fold(older: readonly Turn[], recent: readonly Turn[], result: FoldResult): void {
    this.summary = result.summary;
    this.turns = [...recent, ...this.turns.slice(older.length + recent.length)];
    this.summarisedChars += result.foldedChars;
  }
}

/** The `memory` event's detail after a fold. */
export function foldDetail(why: 'threshold' | 'compact', turns: number, foldedChars: number, verbatimChars: number) {
  const cause = why === 'compact' ? '/compact' : 'memory threshold reached';
  return `${cause}: folded ${turns} turns (${foldedChars} characters) into the summary; ${verbatimChars} characters stay verbatim`;
}
