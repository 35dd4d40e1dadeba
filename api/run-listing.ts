/**
 * Runs as Temporal's visibility lists them, for the API's Temporal calls (`TemporalCalls.runs`): a page of runs
 * matching a query, each with its static summary (read once per run and kept), and whether a run is its workflow's
 * latest.
 */
import type { TypedSearchAttributes } from '@temporalio/common';
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes';
import { temporal } from '@temporalio/proto';
import { badRequest } from './errors';
import type { TemporalCalls } from './temporal-calls';
import { GRPC, grpcCode } from './temporal-errors';

/** One run as Temporal's visibility lists it. */
export interface ListedRun {
  workflowId: string;
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, TIMED_OUT, … */
  execution: string;
  startTime: Date | null;
  closeTime: Date | null;
  attributes: TypedSearchAttributes;
  /** The run's static summary (null when it has none or it could not be read). */
  summary: string | null;
}

/** Summaries never change: kept per run, up to this many. */
const SUMMARY_CACHE_SIZE = 5000;

/** A timestamp of Temporal's API as a Date (null when absent). */
export const tsToDate = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): Date | null =>
  t ? new Date(Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)) : null;

export class RunListing {
  private readonly summaries = new Map<string, string | null>();

  constructor(private readonly calls: TemporalCalls) {}

  /**
   * A page of runs from Temporal's visibility matching `query` (newest first), with each run's static summary.
   * The page token is Temporal's own; one it does not accept is a 400 naming the cursor.
   */
  async list(
    query: string,
    pageSize: number,
    pageToken?: Uint8Array,
    opts: { summaries?: boolean } = {}
  ): Promise<{ runs: ListedRun[]; next: Uint8Array | null }> {
    const { client, namespace } = this.calls;
    const res = await this.calls.run(undefined, { kind: 'list' }, async () => {
      try {
        return await client.workflowService.listWorkflowExecutions({
          namespace,
          pageSize,
          query,
          ...(pageToken ? { nextPageToken: pageToken } : {}),
        });
      } catch (err) {
        if (grpcCode(err) === GRPC.INVALID_ARGUMENT)
          throw badRequest(
            pageToken
              ? 'query.cursor: Temporal does not accept this cursor; pass the nextCursor of a previous page'
              : `the listing was refused: ${(err as Error).message}`,
            [{ path: 'query.cursor', message: 'not a cursor from a previous page' }]
          );
        throw err;
      }
    });
    const runs = await Promise.all(
      (res.executions ?? []).map(async (e): Promise<ListedRun> => {
        const workflowId = e.execution?.workflowId ?? '';
        const runId = e.execution?.runId ?? '';
        const status = temporal.api.enums.v1.WorkflowExecutionStatus[e.status ?? 0] ?? 'UNKNOWN';
        return {
          workflowId,
          runId,
          execution: String(status).replace(/^WORKFLOW_EXECUTION_STATUS_/, ''),
          startTime: tsToDate(e.startTime),
          closeTime: tsToDate(e.closeTime),
          attributes: decodeTypedSearchAttributes(e.searchAttributes?.indexedFields),
          summary: opts.summaries === false ? null : await this.summaryOf(workflowId, runId),
        };
      })
    );
    const next = res.nextPageToken?.length ? res.nextPageToken : null;
    return { runs, next };
  }

  /** The runs with their static summaries, for runs listed without them. */
  withSummaries(runs: ListedRun[]): Promise<ListedRun[]> {
    return Promise.all(runs.map(async (r) => ({ ...r, summary: await this.summaryOf(r.workflowId, r.runId) })));
  }

  /** A run's static summary (from describe, once per run); null when it has none or it cannot be read now. */
  private async summaryOf(workflowId: string, runId: string): Promise<string | null> {
    const key = `${workflowId}/${runId}`;
    if (this.summaries.has(key)) return this.summaries.get(key)!;
    try {
      const desc = await this.calls.within(this.calls.callTimeoutMs, () =>
        this.calls.client.workflow.getHandle(workflowId, runId).describe()
      );
      const summary = (await desc.staticSummary()) ?? null;
      if (this.summaries.size >= SUMMARY_CACHE_SIZE) this.summaries.delete(this.summaries.keys().next().value!);
      this.summaries.set(key, summary);
      return summary;
    } catch {
      return null;
    }
  }

  /** Whether `runId` is the latest run of `workflowId` (true when that cannot be told now: it is listed). */
  async isLatestRun(workflowId: string, runId: string): Promise<boolean> {
    try {
      const desc = await this.calls.within(this.calls.callTimeoutMs, () =>
        this.calls.client.workflow.getHandle(workflowId).describe()
      );
      return desc.runId === runId;
    } catch {
      return true;
    }
  }
}
