/**
 * The task's search attributes (`KleaStatus`, `KleaWaitingSince`, `KleaMode`, `KleaTokens`, `KleaModelCalls`), by
 * which the Temporal UI filters tasks (workflow code). Every upsert is an event in the run's history and a write to
 * Temporal's visibility store, so a run started since `CURRENT_CHANGES` (./changes.ts) coalesces them:
 * - a status change is upserted at once, with everything else that changed since the last upsert;
 * - the mode goes with the first status upsert, or with the next status report if the status has not changed;
 * - the usage totals go with the next status change, or once they are `USAGE_REFRESH_MS` old (workflow time).
 * Runs started earlier upsert each value as it changes: their histories have those events.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import { KleaModelCalls, KleaMode, KleaTokens } from '../../common/search-attributes';

/** How long usage totals may wait for a status change before they are upserted on their own. */
export const USAGE_REFRESH_MS = 10_000;

export class SearchAttributeMirror {
  private readonly pending = new Map<string, SearchAttributeUpdatePair>();
  /** Workflow time of the last upsert (the run's start until one is made). */
  private lastUpsert = Date.now();

  /** @param coalesce whether this run coalesces its upserts (runs since `CURRENT_CHANGES`). */
  constructor(private readonly coalesce: boolean) {}

  /** The status changed (and when it started waiting, if it waits for the user): upserted now, with the rest. */
  status(pairs: SearchAttributeUpdatePair[]): void {
    this.put(pairs);
    this.flush();
  }

  /** The status was reported again unchanged: what is pending goes now unless it is usage that is still fresh. */
  unchanged(): void {
    const onlyUsage = [...this.pending.keys()].every((k) => k === KleaTokens.name || k === KleaModelCalls.name);
    if (!onlyUsage || this.usageIsStale()) this.flush();
  }

  mode(value: string): void {
    this.put([{ key: KleaMode, value }]);
    if (!this.coalesce) this.flush();
  }

  usage(tokens: number, modelCalls: number): void {
    this.put([
      { key: KleaTokens, value: tokens },
      { key: KleaModelCalls, value: modelCalls },
    ]);
    if (!this.coalesce || this.usageIsStale()) this.flush();
  }

  private usageIsStale(): boolean {
    return Date.now() - this.lastUpsert >= USAGE_REFRESH_MS;
  }

  private put(pairs: SearchAttributeUpdatePair[]): void {
    for (const p of pairs) this.pending.set(p.key.name, p);
  }

  private flush(): void {
    if (!this.pending.size) return;
    upsertSearchAttributes([...this.pending.values()]);
    this.pending.clear();
    this.lastUpsert = Date.now();
  }
}
