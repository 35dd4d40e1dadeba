/**
 * What the page's end-to-end tests stand on: the scripted fake model, a worker on the real Temporal dev server with
 * the real workspace MCP server, the API serving the page on a free loopback port, and headless Chromium
 * (the system's, never a downloaded one).
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createApp } from '../../api/app';
import { FakeModel } from './fake-model';
import { startTestEnv, type TestEnv } from './harness';
import { makeProject } from './task-driver';

const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'e2e');
const CHROMIUM = process.env.KLEA_CHROMIUM ?? '/usr/bin/chromium';

export interface PageStack {
  fake: FakeModel;
  env: TestEnv;
  project: ReturnType<typeof makeProject>;
  server: http.Server;
  /** The API's (and the page's) URL. */
  base: string;
  browser: Browser;
  page: Page;
  /** A full-page screenshot into test-artifacts/e2e/<name>.png. */
  shot(name: string): Promise<unknown>;
}

export async function startPageStack(name: string, files: Record<string, string>): Promise<PageStack> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const s: Partial<PageStack> = {};
  try {
    s.fake = await FakeModel.start();
    s.project = makeProject(files);
    s.env = await startTestEnv({ fakeModel: s.fake, name, overrides: { project: { dir: s.project.dir } } });
    const server = (s.server = http.createServer(
      createApp({ client: s.env.client, config: s.env.config, ssePollMs: 100 })
    ));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    s.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    s.browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = (s.page = await s.browser.newPage({ viewport: { width: 1400, height: 900 } }));
    s.shot = (shotName: string) => page.screenshot({ path: path.join(ARTIFACTS, `${shotName}.png`), fullPage: true });
    return s as PageStack;
  } catch (err) {
    // What did start is stopped, so a failed start leaves nothing running.
    await stopPageStack(s);
    throw err;
  }
}

export async function stopPageStack(s: Partial<PageStack> | undefined): Promise<void> {
  await s?.browser?.close();
  s?.server?.closeAllConnections();
  s?.server?.close();
  await s?.env?.shutdown();
  await s?.fake?.close();
}
