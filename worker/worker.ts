/** Builds a Klea worker: the prebuilt workflow bundle plus the activities made by createActivities(deps). */
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import { McpPool } from '../activities/mcp/pool';
import type { Config } from '../common/config';
import type { Logger } from '../runtime/log';

export interface KleaWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** Either a prebuilt bundle (production) or code built in-process (tests). */
  workflowBundle: NonNullable<WorkerOptions['workflowBundle']>;
  config: Config;
  log: Logger;
  identity?: string;
}

export interface KleaWorker {
  worker: Worker;
  pool: McpPool;
  /** Runs until shutdown (SIGTERM/SIGINT or worker.shutdown()), then stops every MCP server it started. */
  run(): Promise<void>;
}

export async function createKleaWorker(opts: KleaWorkerOptions): Promise<KleaWorker> {
  const pool = new McpPool(opts.log);
  const worker = await Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: opts.workflowBundle,
    activities: createActivities({ config: opts.config, log: opts.log, pool }),
    ...(opts.identity ? { identity: opts.identity } : {}),
    // Graceful shutdown gives in-flight activities a moment to finish before they are cancelled.
    shutdownGraceTime: '10s',
  });
  return {
    worker,
    pool,
    async run() {
      try {
        await worker.run();
      } finally {
        await pool.shutdown();
      }
    },
  };
}
