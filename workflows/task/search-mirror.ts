/**
 * The task's search attributes (`KleaStatus`, `KleaWaitingSince`, `KleaMode`, `KleaTokens`, `KleaModelCalls`), by
 * which the Temporal UI filters tasks (workflow code). Every upsert is an event in the run's history and a write to
 * Temporal's visibility store, so a run coalesces them:
 * - a status change is upserted at once, with everything else that changed since the last upsert;
 * - the mode goes with the first status upsert, or with the next status report if the status has not changed;
 * - the usage totals go with the next status change, or on their own every `USAGE_REFRESH_CALLS` model calls
 *   (a count, not a time: the decision must come out the same when the run is replayed);
 * - a value the run already shows is left out (a session starts its tasks with their mode and first status).
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { KleaModelCalls, KleaMode, KleaTokens } from '../../common/search-attributes';

/** How many model calls the usage totals may fall behind before they are upserted without a status change. */
export const USAGE_REFRESH_CALLS = 10;

export class SearchAttributeMirror {
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();
  /** What the run shows now, by attribute name: what it started with, then what it upserted. */
  private readonly shown = new Map<string, unknown>();

  constructor() {
    for (const p of workflowInfo().typedSearchAttributes.getAll()) this.shown.set(p.key.name, p.value);
  }

  /** The status changed (and when it started waiting, if it waits for the user): upserted now, with the rest. */
  status(pairs: SearchAttributeUpdatePair[]): void {
    this.put(pairs);
    this.flush();
  }

  /** The status was reported again unchanged: what is pending goes now, unless it is only usage. */
  unchanged(): void {
    if ([...this.pending.keys()].some((k) => k !== KleaTokens.name && k !== KleaModelCalls.name)) this.flush();
  }

  mode(value: string): void {
    this.put([{ key: KleaMode, value }]);
  }

  usage(tokens: number, modelCalls: number): void {
    this.put([
      { key: KleaTokens, value: tokens },
      { key: KleaModelCalls, value: modelCalls },
    ]);
    const shownCalls = (this.shown.get(KleaModelCalls.name) as number | undefined) ?? 0;
    if (modelCalls - shownCalls >= USAGE_REFRESH_CALLS) this.flush();
  }

  private put(pairs: SearchAttributeUpdatePair[]): void {
    for (const p of pairs) this.pending.set(p.key.name, p);
  }

  private flush(): void {
    const changed = [...this.pending.values()].filter((p) => !sameValue(this.shown.get(p.key.name), p.value));
    this.pending.clear();
    if (!changed.length) return;
    upsertSearchAttributes(changed);
    for (const p of changed) this.shown.set(p.key.name, p.value);
  }
}

/** The mirrored attributes are keywords, numbers and (KleaWaitingSince) dates. */
function sameValue(a: unknown, b: unknown): boolean {
  return a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;
}
