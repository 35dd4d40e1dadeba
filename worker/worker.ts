/** Builds a Klea worker: the prebuilt workflow bundle plus the activities made by createActivities(deps). */
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';

export interface KleaWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** Either a prebuilt bundle (production) or code built in-process (tests). */
  workflowBundle: NonNullable<WorkerOptions['workflowBundle']>;
  deps: ActivityDeps;
  identity?: string;
}

export async function createKleaWorker(opts: KleaWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: opts.workflowBundle,
    activities: createActivities(opts.deps),
    ...(opts.identity ? { identity: opts.identity } : {}),
    // Graceful shutdown gives in-flight activities a moment to finish before they are cancelled.
    shutdownGraceTime: '10s',
  });
}
