/**
 * How routes address workflows: a task's id is its workflow id, a session's workflow id is `session-<id>`. An id
 * of another shape names no session or task (a session's own workflow id, a memory summary's, anything else):
 * it is answered 404 before Temporal is asked, so no route can reach a workflow it is not about.
 */
import { notFound } from './errors';
import type { Target } from './temporal-calls';

/** Session ids as the API makes them (`s-1a2b3c4d`); task ids as sessions number them (`task-s-1a2b3c4d-1`). */
const SESSION_ID = /^s-[A-Za-z0-9]+$/;
const TASK_ID = /^task-s-[A-Za-z0-9]+-[1-9][0-9]*$/;

export const sessionWorkflowId = (sessionId: string) => `session-${sessionId}`;

export const sessionTarget = (sessionId: string): Target => {
  if (!SESSION_ID.test(sessionId)) throw notFound(`no session "${sessionId}": session ids look like s-1a2b3c4d`);
  return { what: `session "${sessionId}"`, workflowId: sessionWorkflowId(sessionId) };
};

export const taskTarget = (taskId: string): Target => {
  if (!TASK_ID.test(taskId)) throw notFound(`no task "${taskId}": task ids look like task-s-1a2b3c4d-1`);
  return { what: `task "${taskId}"`, workflowId: taskId };
};

/** Links a workflow to its page in the Temporal UI. */
export const runUrlFor =
  (uiUrl: string, namespace: string) =>
  (workflowId: string): string =>
    `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
