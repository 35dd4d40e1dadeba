/** Shared set-up for benchmarks: a real dev server, a Klea worker on the prebuilt bundle, and the fake model. */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { resolveConfig, type Config } from '../common/config';
import { startDevServer, type DevServer } from '../runtime/dev-server';
import { silentLogger } from '../runtime/log';
import { findFreePort } from '../runtime/ports';
import { REPO_ROOT } from '../runtime/temporal';
import { createKleaWorker, type KleaWorker } from '../worker/worker';
import { FakeModel } from '../test/support/fake-model';

export interface BenchEnv {
  server: DevServer;
  client: Client;
  fake: FakeModel;
  config: Config;
  worker: KleaWorker;
  running: Promise<void>;
  close(): Promise<void>;
}

export async function startBenchEnv(taskQueue = 'bench'): Promise<BenchEnv> {
  Runtime.install({ logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
  const server = await startDevServer({
    port: await findFreePort(),
    httpPort: await findFreePort(),
    metricsPort: await findFreePort(),
  });
  const fake = await FakeModel.start();
  const config = resolveConfig(
    {
      model: { name: 'fake', base_url: fake.url, api_key: 'k' },
      temporal: { address: server.address, task_queue: taskQueue },
    },
    {}
  );
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const worker = await createKleaWorker({
    connection: native,
    namespace: 'default',
    taskQueue,
    workflowBundle: { codePath: path.join(REPO_ROOT, 'dist', 'workflow-bundle.js') },
    config,
    log: silentLogger,
  });
  const running = worker.run();
  return {
    server,
    client,
    fake,
    config,
    worker,
    running,
    async close() {
      worker.worker.shutdown();
      await running;
      await native.close();
      await connection.close();
      await fake.close();
      await server.stop();
    },
  };
}

export async function historyBytes(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** Step ids offered in a pick_tools request (the enum of the step_id parameter). */
export function offeredStepIds(toolSchemas: Array<{ parameters?: Record<string, unknown> }>): string[] {
  const props = (toolSchemas[0]?.parameters as { properties?: { step_id?: { enum?: string[] } } })?.properties;
  return props?.step_id?.enum ?? [];
}
