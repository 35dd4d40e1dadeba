/**
 * How routes address workflows: a task's id is its workflow id, a session's workflow id is `session-<id>`. An id
 * of another shape names no session or task (a session's own workflow id, a memory summary's, anything else):
 * it is answered 404 before Temporal is asked, so no route can reach a workflow it is not about.
 */
import { notFound } from './errors';
import type { Target } from './temporal-calls';

/** Session ids as the API makes them (`s-1a2b3c4d`); task ids as sessions number them (`task-s-1a2b3c4d-1`). */
const SESSION_ID = /^s-[A-Za-z0-9]+$/;
const TASK_ID = /^task-(s-[A-Za-z0-9]+)-[1-9][0-9]*$/;
/** A session id the API made: when it was made (ms, base 36, 9 digits), then 8 random hex digits. */
const DATED_SESSION_ID = /^s-([0-9a-z]{9})[0-9a-f]{8}$/;

export const sessionWorkflowId = (sessionId: string) => `session-${sessionId}`;

/** A new session's id: it says when it was made, so a session or task Temporal no longer keeps is told apart (410). */
export const newSessionId = (uuid: string, now = Date.now()) =>
  `s-${now.toString(36).padStart(9, '0')}${uuid.replace(/-/g, '').slice(0, 8)}`;

/** When the session was made, for ids made by `newSessionId` (older ids do not say). */
export function sessionBornAt(sessionId: string): number | undefined {
  const m = DATED_SESSION_ID.exec(sessionId);
  return m ? parseInt(m[1], 36) : undefined;
}

export const sessionTarget = (sessionId: string): Target => {
  if (!SESSION_ID.test(sessionId)) throw notFound(`no session "${sessionId}": session ids look like s-1a2b3c4d`);
  return { what: `session "${sessionId}"`, workflowId: sessionWorkflowId(sessionId), bornAt: sessionBornAt(sessionId) };
};

export const taskTarget = (taskId: string): Target => {
  const m = TASK_ID.exec(taskId);
  if (!m) throw notFound(`no task "${taskId}": task ids look like task-s-1a2b3c4d-1`);
  return { what: `task "${taskId}"`, workflowId: taskId, bornAt: sessionBornAt(m[1]) };
};

/** Links a workflow to its page in the Temporal UI. */
export const runUrlFor =
  (uiUrl: string, namespace: string) =>
  (workflowId: string): string =>
    `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
