/**
 * Jest global set-up for the cluster tests: one real Temporal cluster (runtime/cluster.ts) on free ports, with a
 * PostgreSQL database cluster made fresh for this run, and the workflow bundle in dist/ (make test-cluster builds).
 * Test files reach it through KLEA_TEST_CLUSTER_ADDRESS and start their own worker hosts and API.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { startScratchCluster, type TemporalCluster } from '../../runtime/cluster';
import { REPO_ROOT } from '../../runtime/temporal';
import { makeBridge, netnsProblem, removeBridge, type Bridge } from '../support/netns';

declare global {
  var __KLEA_TEST_CLUSTER__: TemporalCluster | undefined;
  var __KLEA_TEST_BRIDGE__: Bridge | undefined;
}

export default async function globalSetup(): Promise<void> {
  const serverDir = process.env.KLEA_TEMPORAL_SERVER_DIR;
  if (!serverDir || !existsSync(path.join(serverDir, 'bin', 'temporal-server')))
    throw new Error(
      'KLEA_TEMPORAL_SERVER_DIR must name the Temporal server build (make test-cluster sets it from ' +
        'scripts/install-temporal-server.sh)'
    );
  if (!existsSync(path.join(REPO_ROOT, 'dist', 'workflow-bundle.js')))
    throw new Error('dist/ is not built: run npm run build (make test-cluster does)');
  const dir = path.join(REPO_ROOT, '.klea', 'test-cluster');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // Where it can, the run makes a bridge for worker hosts in network namespaces of their own, and the cluster
  // listens on the bridge's address (test/support/netns.ts); otherwise everything shares the machine's loopback.
  const problem = netnsProblem();
  if (problem) process.stderr.write(`\ncluster tests: worker hosts share the machine's network (${problem})\n`);
  const bridge = problem ? undefined : makeBridge();
  globalThis.__KLEA_TEST_BRIDGE__ = bridge;
  // Its output is kept for a failure's report: the server says why a service would not start.
  const { cluster, output: lines } = await startScratchCluster(
    serverDir,
    path.join(dir, 'cluster'),
    bridge ? { bindIp: bridge.ip } : {}
  ).catch((err: unknown) => {
    if (bridge) removeBridge(bridge);
    throw err;
  });
  cluster.onExit((name, code, signal) =>
    process.stderr.write(`\ncluster: the ${name} process exited (${signal ?? code})\n${lines.slice(-20).join('')}`)
  );
  globalThis.__KLEA_TEST_CLUSTER__ = cluster;
  process.env.KLEA_TEST_CLUSTER_ADDRESS = cluster.address;
  process.env.KLEA_TEST_CLUSTER_DIR = dir;
  if (bridge) process.env.KLEA_TEST_CLUSTER_BRIDGE = JSON.stringify(bridge);
}
