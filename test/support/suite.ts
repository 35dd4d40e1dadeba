/** Jest suite helpers (not part of the build: they use jest's globals). */
import type { Config } from '../../common/config';
import type { Logger } from '../../runtime/log';
import type { Tracing } from '../../runtime/tracing';
import { FakeModel, type FakeDialect } from './fake-model';
import { startTestEnv, type TestEnv } from './harness';

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K];
};

/**
 * The usual suite set-up: a fake model and a worker environment using it, started before the suite and stopped
 * after it; after each test, every scripted reply must have been used and nothing unscripted asked.
 */
export function useFakeModelEnv(
  opts: {
    name: string;
    /** A function is called when the suite starts: for settings known only then (a server's port). */
    overrides?: DeepPartial<Config> | (() => DeepPartial<Config>);
    after?: () => Promise<void> | void;
    /** How the fake server treats structured output (default: like OpenAI). */
    dialect?: FakeDialect;
    log?: Logger;
    /** Called when the suite starts: traces for the worker and the client (test/integration/observability). */
    tracing?: () => Tracing | undefined;
    /** Called when the suite starts: the Core runtime's Prometheus exporter, served with Klea's metrics. */
    sdkMetricsUrl?: () => string | undefined;
  },
  ready: (fake: FakeModel, env: TestEnv) => void
): void {
  let fake: FakeModel | undefined;
  let env: TestEnv | undefined;
  beforeAll(async () => {
    const started = await FakeModel.start({ dialect: opts.dialect });
    fake = started;
    const overrides = typeof opts.overrides === 'function' ? opts.overrides() : opts.overrides;
    env = await startTestEnv({
      fakeModel: started,
      name: opts.name,
      overrides,
      log: opts.log,
      tracing: opts.tracing?.(),
      sdkMetricsUrl: opts.sdkMetricsUrl?.(),
    });
    ready(started, env);
  });
  afterEach(() => {
    try {
      fake?.assertDone();
    } finally {
      fake?.reset();
    }
  });
  afterAll(async () => {
    await env?.shutdown();
    await fake?.close();
    await opts.after?.();
  });
}
