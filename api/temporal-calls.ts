/** Temporal client calls as the API needs them, with Temporal's failures mapped to the API's errors. */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApiError, conflict, notFound } from './errors';

function isClosed(err: unknown): boolean {
  const text = `${(err as Error)?.message ?? ''} ${String((err as { cause?: { message?: string } })?.cause?.message ?? '')}`;
  return /already completed|workflow execution.*(completed|closed|terminated)|execution is closed/i.test(text);
}

export class TemporalCalls {
  constructor(readonly client: Client) {}

  handle(workflowId: string): WorkflowHandle {
    return this.client.workflow.getHandle(workflowId);
  }

  /** Runs a call on a workflow; "no such workflow" becomes 404, "it has ended" 409, a refused update 409. */
  async on<T>(what: string, workflowId: string, fn: (h: WorkflowHandle) => Promise<T>): Promise<T> {
    try {
      return await fn(this.handle(workflowId));
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof WorkflowNotFoundError) {
        if (isClosed(err)) throw conflict(`${what} has ended`);
        throw notFound(`no ${what}`);
      }
      if (err instanceof WorkflowUpdateFailedError) {
        const reason = (err.cause as Error | undefined)?.message ?? err.message;
        throw conflict(reason);
      }
      if (isClosed(err)) throw conflict(`${what} has ended`);
      const status = (err as { code?: number }).code;
      if (status === 5) throw notFound(`no ${what}`); // gRPC NOT_FOUND
      throw err;
    }
  }

  /** Whether a workflow is still running (false when it has ended; throws 404 when it does not exist). */
  async running(what: string, workflowId: string): Promise<boolean> {
    const desc = await this.on(what, workflowId, (h) => h.describe());
    return desc.status.name === 'RUNNING';
  }
}
