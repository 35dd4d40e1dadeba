/**
 * `GET /sessions`' order (api/session-list.ts) against a fake visibility that answers the queries the lister sends
 * (activity windows, the probe for older sessions, sessions without an activity), counting them.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import { SessionLister, type SessionCursor } from '../../api/session-list';
import type { ListedRun, RunListing } from '../../api/run-listing';
import { KleaLastActivity } from '../../common/search-attributes';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-06-01T12:00:00Z');

interface Run {
  id: string;
  runId?: string;
  /** Hours before now; undefined: no activity recorded. */
  hoursAgo?: number;
  execution?: string;
  startedHoursAgo?: number;
  /** A later run of the same session exists (it woke). */
  superseded?: boolean;
}

function listed(r: Run): ListedRun {
  const attrs =
    r.hoursAgo === undefined
      ? new TypedSearchAttributes()
      : new TypedSearchAttributes([{ key: KleaLastActivity, value: new Date(NOW - r.hoursAgo * HOUR) }]);
  return {
    workflowId: `session-${r.id}`,
    runId: r.runId ?? `${r.id}-run`,
    execution: r.execution ?? 'RUNNING',
    startTime: new Date(NOW - (r.startedHoursAgo ?? r.hoursAgo ?? 1000) * HOUR),
    closeTime: null,
    attributes: attrs,
    summary: null,
  };
}

/** Evaluates the lister's queries: `KleaLastActivity <op> '<iso>'` clauses and `IS NULL`, joined by AND. */
function fakeCalls(runs: Run[]) {
  const stats = { lists: 0, describes: 0 };
  const all = runs.map((r) => ({ r, run: listed(r) }));
  const calls = {
    async list(query: string, pageSize: number, token?: Uint8Array) {
      stats.lists++;
      const clauses = [...query.matchAll(/KleaLastActivity (>=|<=|<|>) '([^']+)'/g)].map(([, op, v]) => ({
        op,
        ms: Date.parse(v),
      }));
      const wantsNull = query.includes('KleaLastActivity IS NULL');
      const matched = all
        .filter(({ run }) => {
          const v = run.attributes.get(KleaLastActivity)?.getTime();
          if (wantsNull) return v === undefined;
          if (v === undefined) return clauses.length === 0;
          return clauses.every(({ op, ms }) =>
            op === '>=' ? v >= ms : op === '<=' ? v <= ms : op === '<' ? v < ms : v > ms
          );
        })
        .map(({ run }) => run);
      const from = token ? Number(Buffer.from(token).toString()) : 0;
      const page = matched.slice(from, from + pageSize);
      const next = from + pageSize < matched.length ? Buffer.from(String(from + pageSize)) : null;
      return { runs: page, next };
    },
    async isLatestRun(workflowId: string, runId: string) {
      stats.describes++;
      return !all.some(({ r, run }) => run.workflowId === workflowId && run.runId === runId && r.superseded);
    },
  } as unknown as RunListing;
  return { calls, stats };
}

const ids = (runs: ListedRun[]) => runs.map((r) => r.workflowId.replace('session-', ''));

async function everyPage(lister: SessionLister, limit: number) {
  const pages: string[][] = [];
  let cursor: SessionCursor | undefined;
  for (;;) {
    const page = await lister.page(limit, cursor);
    pages.push(ids(page.runs));
    if (!page.next) return pages;
    cursor = page.next;
  }
}

describe('sessions in order of their last activity', () => {
  beforeEach(() => jest.useFakeTimers({ now: NOW, doNotFake: ['nextTick', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('awake and sleeping sessions are ordered by activity alike, across pages, each once', async () => {
    const { calls } = fakeCalls([
      { id: 'a', hoursAgo: 0.5 },
      { id: 'b', hoursAgo: 2, execution: 'COMPLETED' },
      { id: 'c', hoursAgo: 3 },
      { id: 'd', hoursAgo: 30, execution: 'COMPLETED' },
      { id: 'e', hoursAgo: 400 },
    ]);

    const pages = await everyPage(new SessionLister(calls), 2);

    expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it('sessions active at the same moment are ordered by id, and a page boundary between them loses none', async () => {
    const { calls } = fakeCalls([
      { id: 'x', hoursAgo: 1 },
      { id: 'y', hoursAgo: 1 },
      { id: 'z', hoursAgo: 1 },
      { id: 'w', hoursAgo: 5 },
    ]);

    expect(await everyPage(new SessionLister(calls), 1)).toEqual([['x'], ['y'], ['z'], ['w']]);
  });

  it('a session that woke is listed once, by its latest run; a run superseded is asked about once', async () => {
    const { calls, stats } = fakeCalls([
      { id: 'a', runId: 'a1', hoursAgo: 5, execution: 'COMPLETED', startedHoursAgo: 9, superseded: true },
      { id: 'a', runId: 'a2', hoursAgo: 5, execution: 'RUNNING', startedHoursAgo: 1 },
      { id: 'b', runId: 'b1', hoursAgo: 40, execution: 'COMPLETED', superseded: true },
      { id: 'b', runId: 'b2', hoursAgo: 3, execution: 'COMPLETED', startedHoursAgo: 2 },
    ]);
    const lister = new SessionLister(calls);

    const page = await lister.page(10);
    const describes = stats.describes;
    await lister.page(10);

    expect(ids(page.runs)).toEqual(['b', 'a']);
    expect(page.runs.map((r) => r.runId)).toEqual(['b2', 'a2']);
    expect(page.next).toBeNull();
    // a1 is asked about once (a superseded run stays so); b2, asleep, each time (it may wake); b1 never: b2 is newer.
    expect(describes).toBe(2);
    expect(stats.describes - describes).toBe(1);
  });

  it('a busy first hour fills the page from one window and one listing', async () => {
    const { calls, stats } = fakeCalls(
      Array.from({ length: 30 }, (_, i) => ({ id: `s${String(i).padStart(2, '0')}`, hoursAgo: i / 60 }))
    );

    const page = await new SessionLister(calls).page(10);

    expect(ids(page.runs)).toEqual(Array.from({ length: 10 }, (_, i) => `s${String(i).padStart(2, '0')}`));
    expect(page.next).toEqual({ t: NOW - (9 / 60) * HOUR, id: 'session-s09' });
    expect(stats.lists).toBe(1);
  });

  it('a quiet inbox reaches back through growing windows: a session a year old takes a few listings', async () => {
    const { calls, stats } = fakeCalls([{ id: 'old', hoursAgo: 24 * 365 }]);

    const page = await new SessionLister(calls).page(10);

    expect(ids(page.runs)).toEqual(['old']);
    expect(stats.lists).toBeLessThan(25);
  });

  it('sessions from before activity was kept come after all the others, in visibility order', async () => {
    const { calls } = fakeCalls([{ id: 'new', hoursAgo: 1 }, { id: 'legacy1' }, { id: 'legacy2' }, { id: 'legacy3' }]);

    expect(await everyPage(new SessionLister(calls), 2)).toEqual([['new', 'legacy1'], ['legacy2', 'legacy3']]);
  });
});
