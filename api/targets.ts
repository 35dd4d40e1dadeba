/** How routes address workflows: a task's id is its workflow id, a session's workflow id is `session-<id>`. */
import type { Target } from './temporal-calls';

export const sessionWorkflowId = (sessionId: string) => `session-${sessionId}`;

export const sessionTarget = (sessionId: string): Target => ({
  what: `session "${sessionId}"`,
  workflowId: sessionWorkflowId(sessionId),
});

export const taskTarget = (taskId: string): Target => ({ what: `task "${taskId}"`, workflowId: taskId });

/** Links a workflow to its page in the Temporal UI. */
export const runUrlFor =
  (uiUrl: string, namespace: string) =>
  (workflowId: string): string =>
    `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
