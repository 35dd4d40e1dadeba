/**
 * The sessions of `GET /sessions`, most recently active first: each session's latest run, ordered by its
 * `KleaLastActivity` (the last message or command it took, the last task it started or that ended), whether it is
 * awake or asleep. A session that goes to sleep keeps its activity, so it keeps its place.
 *
 * Temporal's SQL visibility (the dev server's SQLite, PostgreSQL, MySQL) cannot sort by a search attribute, so the
 * order is made here, a window of activity at a time: the sessions active in the last hour, then in the four hours
 * before, sixteen before that, and so on (each window four times the last) until the page is full and one more
 * session is known, or nothing older is left. Everything in a window is read, so what the page holds is exactly the
 * newest sessions after the cursor; a quiet team's inbox takes a few short listings, a busy one's the first window.
 *
 * The cursor is where the last page ended (its last session's activity and workflow id). Sessions whose runs carry
 * no `KleaLastActivity` (started before the inbox kept it) come after all the others, in Temporal's own order.
 */
import type { ListedRun, RunListing } from './run-listing';
import type { WorkflowName } from './temporal-calls';
import { KleaLastActivity } from '../common/search-attributes';

/** Where a page of sessions ends: after the session with this activity (ms) and id, or inside the older ones. */
export type SessionCursor = { t: number; id: string } | { legacy: string };

/** The first window of activity read (ms); each next one is four times as long. */
export const FIRST_WINDOW_MS = 3_600_000;
/** Runs asked for per listing call (Temporal's page size). */
const LIST_PAGE = 1000;

export interface SessionPage {
  runs: ListedRun[];
  next: SessionCursor | null;
}

/** The workflow type as visibility names it: checked against the entry points, so a rename fails to compile. */
const SESSION_WORKFLOW = 'sessionWorkflow' satisfies WorkflowName;
/**
 * What every listing here reads: a session's runs, except those that continued as new (the run that carries it on
 * is listed). One that went to sleep and woke again has older completed runs: only its latest counts.
 */
const SESSION_RUNS = `WorkflowType = '${SESSION_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'`;

const iso = (ms: number) => new Date(ms).toISOString();

/** A listed run's activity (ms), or null when it carries none. */
export function activityOf(run: ListedRun): number | null {
  const v = run.attributes.get(KleaLastActivity);
  return v instanceof Date && !Number.isNaN(v.getTime()) ? v.getTime() : null;
}

/** Newest activity first; the same activity by workflow id, so every session has one place. */
const byActivity = (a: { t: number; run: ListedRun }, b: { t: number; run: ListedRun }) =>
  b.t - a.t || (a.run.workflowId < b.run.workflowId ? -1 : a.run.workflowId > b.run.workflowId ? 1 : 0);

export class SessionLister {
  /** Closed runs known not to be their session's latest: a session woke since (a run never becomes latest again). */
  private readonly superseded = new Set<string>();

  constructor(
    private readonly runs: RunListing,
    private readonly firstWindowMs = FIRST_WINDOW_MS
  ) {}

  /** A page of sessions after `cursor`; `where`: a visibility clause they must also meet (a filter, checked). */
  async page(limit: number, cursor?: SessionCursor, where?: string): Promise<SessionPage> {
    const runs = where ? `${SESSION_RUNS} AND ${where}` : SESSION_RUNS;
    if (cursor && 'legacy' in cursor) return this.legacyPage(runs, limit, cursor.legacy || undefined);
    const { found, exhausted } = await this.newest(runs, limit, cursor);
    const page = found.slice(0, limit);
    if (found.length > limit) {
      const last = page.at(-1)!;
      return { runs: page.map((f) => f.run), next: { t: last.t, id: last.run.workflowId } };
    }
    // Every session with an activity has been listed: the older ones without it come next.
    const legacy = exhausted ? await this.legacyPage(runs, limit - page.length, undefined, page.length > 0) : null;
    return { runs: [...page.map((f) => f.run), ...(legacy?.runs ?? [])], next: legacy?.next ?? null };
  }

  /**
   * The sessions after `cursor`, newest first: at least `limit + 1` of them when there are that many, read a window
   * at a time; `exhausted` when none older is left.
   */
  private async newest(runs: string, limit: number, cursor?: { t: number; id: string }) {
    const latest = new Map<string, { t: number; run: ListedRun }>();
    const after = (t: number, id: string) => !cursor || t < cursor.t || (t === cursor.t && id > cursor.id);
    let upper: { ms: number; inclusive: boolean } | null = cursor ? { ms: cursor.t, inclusive: true } : null;
    let span = this.firstWindowMs;
    for (;;) {
      const from = (upper?.ms ?? Date.now()) - span;
      const bounds = [`KleaLastActivity >= '${iso(from)}'`];
      if (upper) bounds.push(`KleaLastActivity ${upper.inclusive ? '<=' : '<'} '${iso(upper.ms)}'`);
      const fresh: ListedRun[] = [];
      for await (const run of this.all(`${runs} AND ${bounds.join(' AND ')}`)) {
        const t = activityOf(run);
        if (t === null || !after(t, run.workflowId)) continue;
        const seen = latest.get(run.workflowId);
        // One session, several runs (it slept and woke): the newest run stands for it.
        if (seen && (seen.run.startTime?.getTime() ?? 0) >= (run.startTime?.getTime() ?? 0)) continue;
        latest.set(run.workflowId, { t, run });
        fresh.push(run);
      }
      await this.dropSuperseded(fresh, latest);
      if (latest.size > limit) return { found: [...latest.values()].sort(byActivity), exhausted: false };
      const older = await this.runs.list(`${runs} AND KleaLastActivity < '${iso(from)}'`, 1, undefined, {
        summaries: false,
      });
      if (!older.runs.length) return { found: [...latest.values()].sort(byActivity), exhausted: true };
      upper = { ms: from, inclusive: false };
      span *= 4;
    }
  }

  /**
   * The latest run of every session `where` picks (sessions on a cluster: those with a home), reading at most `max`
   * runs; `complete` when every matching run was read.
   */
  async latestRuns(where: string, max: number): Promise<{ runs: ListedRun[]; complete: boolean }> {
    const latest = new Map<string, ListedRun>();
    let read = 0;
    for await (const run of this.all(`${SESSION_RUNS} AND ${where}`)) {
      if (++read > max) return { runs: [...latest.values()], complete: false };
      const seen = latest.get(run.workflowId);
      if (!seen || (seen.startTime?.getTime() ?? 0) < (run.startTime?.getTime() ?? 0)) latest.set(run.workflowId, run);
    }
    return { runs: [...latest.values()], complete: true };
  }

  /** Drops the closed runs whose session has a later run (it woke since), asking Temporal only about new ones. */
  private async dropSuperseded(fresh: ListedRun[], latest: Map<string, { t: number; run: ListedRun }>) {
    await Promise.all(
      fresh.map(async (run) => {
        if (run.execution === 'RUNNING') return;
        const key = `${run.workflowId}/${run.runId}`;
        if (!this.superseded.has(key) && (await this.runs.isLatestRun(run.workflowId, run.runId))) return;
        this.remember(key);
        if (latest.get(run.workflowId)?.run === run) latest.delete(run.workflowId);
      })
    );
  }

  private remember(key: string) {
    if (this.superseded.size >= 10_000) this.superseded.delete(this.superseded.values().next().value!);
    this.superseded.add(key);
  }

  /** Every run matching `query`, page by page. */
  private async *all(query: string): AsyncGenerator<ListedRun> {
    let token: Uint8Array | undefined;
    do {
      const page = await this.runs.list(query, LIST_PAGE, token, { summaries: false });
      yield* page.runs;
      token = page.next ?? undefined;
    } while (token);
  }

  /**
   * Sessions whose runs carry no activity, in Temporal's order, from its page `token`. `continued`: the page already
   * holds newer sessions, so an empty remainder still says whether any legacy session follows.
   */
  private async legacyPage(
    matching: string,
    limit: number,
    token: string | undefined,
    continued = false
  ): Promise<SessionPage> {
    const query = `${matching} AND KleaLastActivity IS NULL`;
    if (limit <= 0) {
      if (!continued) return { runs: [], next: null };
      const any = await this.runs.list(query, 1, undefined, { summaries: false });
      return { runs: [], next: any.runs.length ? { legacy: '' } : null };
    }
    const listed = await this.runs.list(query, limit, token ? Buffer.from(token, 'base64url') : undefined, {
      summaries: false,
    });
    const kept = await Promise.all(
      listed.runs.map(async (run) => {
        if (run.execution === 'RUNNING') return true;
        const key = `${run.workflowId}/${run.runId}`;
        if (this.superseded.has(key)) return false;
        if (await this.runs.isLatestRun(run.workflowId, run.runId)) return true;
        this.remember(key);
        return false;
      })
    );
    const seen = new Set<string>();
    const runs = listed.runs.filter((r, i) => kept[i] && !seen.has(r.workflowId) && seen.add(r.workflowId));
    return { runs, next: listed.next ? { legacy: Buffer.from(listed.next).toString('base64url') } : null };
  }
}
