/** Builds the workflow bundle ahead of time, so a forbidden import fails the build, not a worker at start-up. */
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

/** Temporal's OpenTelemetry workflow interceptors, made neutral to replay (see the module). */
export const WORKFLOW_INTERCEPTORS = path.resolve(__dirname, '..', 'workflows', 'shared', 'tracing-interceptors');

/** Completes zod's global configuration before the SDK freezes the preloaded zod (beside this file's build). */
const ZOD_SETUP = path.resolve(__dirname, '..', 'common', 'zod-setup');

/** The module that loads what every run of these workflows shares (workflows/shared/preload.ts), if they have one. */
function sharedModulesOf(workflowsPath: string): string[] {
  const entry = path.resolve(workflowsPath);
  const dir = existsSync(entry) && statSync(entry).isDirectory() ? entry : path.dirname(entry);
  const preload = path.join(dir, 'shared', 'preload');
  return ['.ts', '.js'].some((ext) => existsSync(preload + ext)) ? [preload] : [];
}

/** The prebuilt bundle (KLEA_WORKFLOW_BUNDLE points a worker at another one, e.g. a test build). */
export const WORKFLOW_BUNDLE_PATH =
  process.env.KLEA_WORKFLOW_BUNDLE || path.resolve(__dirname, '..', 'workflow-bundle.js');

/** `workflowsPath` may be the compiled dist/workflows or the TypeScript sources (tests). */
export async function buildWorkflowBundle(
  workflowsPath = require.resolve('../workflows')
): Promise<WorkflowBundleWithSourceMap> {
  // The worker runs every workflow in one V8 context and gives each run its own copy of every module it imports,
  // so module state never leaks from one run to another. Klea's workflow modules, the common/ modules they import
  // and zod hold no state of a run, yet each run evaluated its own copy: about 0.7 MiB of heap per parked task and
  // most of the time a new run took. Preloaded, they are evaluated once when the worker starts and shared by every
  // run; the SDK then freezes them, so a run that tried to change them would fail loudly instead of leaking into
  // another. common/zod-setup completes zod's global configuration, and workflows/shared/preload completes the
  // schemas, so that they parse once frozen.
  return bundleWorkflowCode({
    workflowsPath,
    // The tracing interceptors are always in the bundle: they continue the caller's trace into workflow, activity
    // and child-workflow spans, and load the OpenTelemetry SDK only in a run whose start carried a trace context.
    // Their spans leave through the worker's `exporter` sink, which discards them when traces are off
    // (worker/telemetry.ts).
    workflowInterceptorModules: [WORKFLOW_INTERCEPTORS],
    preloadModules: ['zod', ZOD_SETUP, ...sharedModulesOf(workflowsPath)],
    // zod says it has no side effects, so webpack would drop the preload's bare require of it.
    webpackConfigHook: (config) => ({ ...config, optimization: { ...config.optimization, sideEffects: false } }),
    // Webpack output is noisy; warnings and errors still fail the build.
    logger: {
      trace() {},
      debug() {},
      info() {},
      warn: (m) => console.warn(m),
      error: (m) => console.error(m),
      log() {},
    },
  });
}
