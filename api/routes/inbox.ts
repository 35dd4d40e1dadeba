/**
 * The inbox: tasks (newest first) and sessions (most recently active first, session-list.ts) listed from Temporal's
 * visibility, so a client finds what waits for the user and reopens earlier sessions. Filters become a visibility query on the workflow type and Klea's
 * search attributes; their values are checked by the query schemas first, so nothing a client sends is pasted into
 * the query unchecked. The cursor is Temporal's next-page token, base64url.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  ListSessionsQuerySchema,
  ListTasksQuerySchema,
  type SessionListItemSchema,
  SessionListSchema,
  TaskListSchema,
  type TaskListItemSchema,
} from '../../common/api';
import { isFinalStatus, TASK_STATUSES, type TaskStatus } from '../../common/events';
import {
  KleaHost,
  KleaProject,
  KleaSessionId,
  KleaStatus,
  KleaTokens,
  KleaWaitingSince,
} from '../../common/search-attributes';
import { badRequest } from '../errors';
import { TEMPORAL_DOWN } from '../openapi';
import { defineRoute, type RouteSpec } from '../route';
import { activityOf, SessionLister, type SessionCursor } from '../session-list';
import type { ListedRun } from '../run-listing';
import type { TemporalCalls, WorkflowName } from '../temporal-calls';

export interface InboxRouteDeps {
  calls: TemporalCalls;
  runUrl: (workflowId: string) => string;
}

const quote = (v: string) => `'${v.replace(/'/g, '')}'`;
/** The workflow types as visibility names them: checked against the entry points, so a rename fails to compile. */
const TASK_WORKFLOW = 'taskWorkflow' satisfies WorkflowName;
/**
 * A cursor is Temporal's page token with a short checksum after it: Temporal does not refuse a malformed token
 * quickly (the client retries it until its deadline), so a cursor that was not made here is refused before it is
 * sent.
 */
const CHECK_BYTES = 6;
const checksum = (token: Uint8Array) => createHash('sha256').update(token).digest().subarray(0, CHECK_BYTES);
const encodeCursor = (token: Uint8Array | null) =>
  token ? Buffer.concat([Buffer.from(token), checksum(token)]).toString('base64url') : null;
function decodeCursor(cursor: string | undefined): Uint8Array | undefined {
  if (!cursor) return undefined;
  const raw = Buffer.from(cursor, 'base64url');
  const token = raw.subarray(0, raw.length - CHECK_BYTES);
  if (raw.length <= CHECK_BYTES || !checksum(token).equals(raw.subarray(raw.length - CHECK_BYTES)))
    throw badRequest('query.cursor: not a cursor this API returned; pass the nextCursor of a previous page', [
      { path: 'query.cursor', message: 'not a cursor from a previous page' },
    ]);
  return token;
}

/** A task's status as the inbox reports it: Klea's own, unless the run ended some other way (terminated, …). */
function taskStatus(run: ListedRun): TaskStatus {
  const klea = run.attributes.get(KleaStatus) as TaskStatus | undefined;
  const known = klea && (TASK_STATUSES as readonly string[]).includes(klea) ? klea : undefined;
  if (run.execution === 'RUNNING') return known ?? 'planning';
  if (run.execution === 'COMPLETED' && known && isFinalStatus(known)) return known;
  if (run.execution === 'CANCELED') return 'cancelled';
  return 'failed';
}

const TASK_ID = /^task-(.+)-\d+$/;

/** A session's status as the inbox reports it: a completed run went to sleep (its next message wakes it). */
function sessionStatus(run: ListedRun): 'running' | 'sleeping' | 'closed' {
  if (run.execution === 'RUNNING') return 'running';
  return run.execution === 'COMPLETED' ? 'sleeping' : 'closed';
}

/** A run's times and its page in the Temporal UI, as every listed task and session carries them. */
function runTimes(run: ListedRun, runUrl: (workflowId: string) => string) {
  return {
    startedAt: (run.startTime ?? new Date(0)).toISOString(),
    closedAt: run.closeTime?.toISOString() ?? null,
    temporalUiUrl: runUrl(run.workflowId),
  };
}

/** A list from visibility at `/<items>` (`listTasks`, `listSessions`): a page of runs from the client's cursor. */
function listRoute<Q extends { limit: number; cursor?: string }, P extends z.ZodType>(
  route: { items: 'tasks' | 'sessions'; summary: string; query: z.ZodType<Q>; page: P },
  handler: (query: Q) => Promise<z.infer<P>>
): RouteSpec {
  const { items, summary, query, page } = route;
  return defineRoute({
    method: 'get',
    path: `/${items}`,
    operationId: `list${items[0].toUpperCase()}${items.slice(1)}`,
    summary,
    tags: [items, 'inbox'],
    query,
    responses: {
      200: { description: `a page of ${items}`, schema: page },
      400: { description: 'a bad query parameter: a filter, the limit or the cursor (the message names it)' },
      ...TEMPORAL_DOWN,
    },
    handler: ({ query }) => handler(query),
  });
}

/** A cursor of `GET /sessions`: where the last page ended (session-list.ts), checked as every cursor is. */
function decodeSessionCursor(cursor: string | undefined): SessionCursor | undefined {
  const bytes = decodeCursor(cursor);
  if (!bytes) return undefined;
  const parsed = SessionCursorSchema.safeParse(
    (() => {
      try {
        return JSON.parse(Buffer.from(bytes).toString('utf8'));
      } catch {
        return null;
      }
    })()
  );
  if (!parsed.success)
    throw badRequest('query.cursor: not a cursor this API returned; pass the nextCursor of a previous page', [
      { path: 'query.cursor', message: 'not a cursor from a previous page' },
    ]);
  return parsed.data;
}

const SessionCursorSchema = z.union([
  z.strictObject({ t: z.number().int(), id: z.string().min(1).max(300) }),
  z.strictObject({ legacy: z.string().max(4000) }),
]);

export function inboxRoutes({ calls, runUrl }: InboxRouteDeps): RouteSpec[] {
  const sessions = new SessionLister(calls.runs);
  /** The runs matching `where` on the page the query asks for, and the cursor of the next page. */
  const listPage = async (where: string, query: { limit: number; cursor?: string }) => {
    const page = await calls.runs.list(where, query.limit, decodeCursor(query.cursor));
    return { runs: page.runs, nextCursor: encodeCursor(page.next) };
  };

  return [
    listRoute(
      {
        items: 'tasks',
        summary: 'Tasks, newest first, from Temporal visibility: filter by status and session (the inbox)',
        query: ListTasksQuerySchema,
        page: TaskListSchema,
      },
      async (query) => {
        const statuses = query.status ? [...new Set(query.status.split(','))] : [];
        // A long task continues as new as its history grows: only the run that carries it on is listed.
        const where = [`WorkflowType = ${quote(TASK_WORKFLOW)}`, `ExecutionStatus != 'ContinuedAsNew'`];
        if (statuses.length) {
          where.push(`${KleaStatus.name} IN (${statuses.map(quote).join(', ')})`);
          // A run that ended without saying so (terminated, timed out) keeps its last status: not waiting any more.
          if (statuses.every((s) => !isFinalStatus(s as TaskStatus))) where.push(`ExecutionStatus = 'Running'`);
        }
        if (query.sessionId) where.push(`${KleaSessionId.name} = ${quote(query.sessionId)}`);
        const { runs, nextCursor } = await listPage(where.join(' AND '), query);
        const tasks = runs
          .map((run): z.infer<typeof TaskListItemSchema> => {
            const status = taskStatus(run);
            const waiting = status.startsWith('awaiting_') ? run.attributes.get(KleaWaitingSince) : undefined;
            const tokens = run.attributes.get(KleaTokens);
            return {
              id: run.workflowId,
              sessionId:
                (run.attributes.get(KleaSessionId) as string | undefined) ?? TASK_ID.exec(run.workflowId)?.[1] ?? null,
              status,
              request: run.summary,
              ...runTimes(run, runUrl),
              waitingSince: waiting instanceof Date ? waiting.toISOString() : null,
              tokens: typeof tokens === 'number' ? tokens : null,
            };
          })
          .filter((t) => !statuses.length || statuses.includes(t.status));
        return { tasks, nextCursor };
      }
    ),
    listRoute(
      {
        items: 'sessions',
        summary: 'Sessions, most recently active first (awake and asleep alike), from Temporal visibility',
        query: ListSessionsQuerySchema,
        page: SessionListSchema,
      },
      async (query) => {
        // A group's sessions carry `group:<id>` (common/home.ts homeName).
        const home = query.host ?? (query.group ? `group:${query.group}` : undefined);
        const where = home ? `${KleaHost.name} = ${quote(home)}` : undefined;
        const page = await sessions.page(query.limit, decodeSessionCursor(query.cursor), where);
        const runs = await calls.runs.withSummaries(page.runs);
        return {
          sessions: runs.map((run): z.infer<typeof SessionListItemSchema> => {
            const activity = activityOf(run);
            return {
              id: (run.attributes.get(KleaSessionId) as string | undefined) ?? run.workflowId.replace(/^session-/, ''),
              status: sessionStatus(run),
              summary: run.summary,
              ...runTimes(run, runUrl),
              lastActivityAt: activity === null ? null : new Date(activity).toISOString(),
              projectDir: (run.attributes.get(KleaProject) as string | undefined) ?? null,
              host: (run.attributes.get(KleaHost) as string | undefined) ?? null,
            };
          }),
          nextCursor: page.next ? encodeCursor(Buffer.from(JSON.stringify(page.next))) : null,
        };
      }
    ),
  ];
}
