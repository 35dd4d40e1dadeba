/**
 * Jest global set-up for integration tests: one real Temporal dev server (in memory, free ports) from the
 * installed CLI, and the workflow bundle built once from the TypeScript sources. Test files reach both through
 * environment variables; each test file runs its own worker on a unique task queue.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startDevServer, type DevServer } from '../../runtime/dev-server';
import { findFreePort } from '../../runtime/ports';
import { REPO_ROOT } from '../../runtime/temporal';
import { buildWorkflowBundle } from '../../worker/bundle';

declare global {
  var __KLEA_DEV_SERVER__: DevServer | undefined;
}

/**
 * The stdio MCP servers, the gated worker and `make start` (test/e2e) run from dist/: rebuild it when a source
 * file is newer (or it is missing).
 */
function ensureBuilt(): void {
  const built = path.join(REPO_ROOT, 'dist', 'tools', 'workspace', 'server.js');
  const builtAt = existsSync(built) ? statSync(built).mtimeMs : 0;
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, d) => {
      const p = path.join(dir, d.name);
      return Math.max(max, d.isDirectory() ? newest(p) : d.name.endsWith('.ts') ? statSync(p).mtimeMs : 0);
    }, 0);
  const sources = ['common', 'runtime', 'tools', 'activities', 'worker', 'api', 'scripts', 'test/support'];
  if (sources.some((d) => newest(path.join(REPO_ROOT, d)) > builtAt)) {
    execFileSync(
      process.execPath,
      [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(REPO_ROOT, 'tsconfig.build.json')],
      { stdio: 'inherit' }
    );
  }
}

export default async function globalSetup(): Promise<void> {
  ensureBuilt();
  const dir = path.join(REPO_ROOT, '.klea', 'test');
  mkdirSync(dir, { recursive: true });
  // Klea's data (tool results, the workspace server's call state) of every test goes here, never into the user's
  // real data directory (runtime/data-dir.ts), whatever KLEA_DATA_DIR the shell running the tests has.
  process.env.KLEA_DATA_DIR = path.join(dir, 'data');
  // Temporal's HTTP API: the sandbox tests check that a command cannot reach it.
  const httpPort = await findFreePort();
  const [server, bundle] = await Promise.all([
    (async () =>
      startDevServer({
        port: await findFreePort(),
        httpPort,
        metricsPort: await findFreePort(),
        uiPort: process.env.KLEA_TEST_UI_PORT ? Number(process.env.KLEA_TEST_UI_PORT) : null,
      }))(),
    buildWorkflowBundle(path.join(REPO_ROOT, 'workflows', 'index.ts')),
  ]);
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  globalThis.__KLEA_DEV_SERVER__ = server;
  process.env.KLEA_TEST_TEMPORAL_ADDRESS = server.address;
  process.env.KLEA_TEST_TEMPORAL_HTTP_PORT = String(httpPort);
  process.env.KLEA_TEST_WORKFLOW_BUNDLE = bundlePath;
  if (server.uiUrl) process.stdout.write(`\nTemporal UI for this test run: ${server.uiUrl}\n`);
}
