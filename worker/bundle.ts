/** Builds the workflow bundle ahead of time, so a forbidden import fails the build, not a worker at start-up. */
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import path from 'node:path';

/** Temporal's OpenTelemetry workflow interceptors, made neutral to replay (see the module). */
export const WORKFLOW_INTERCEPTORS = path.resolve(__dirname, '..', 'workflows', 'shared', 'tracing-interceptors');

/** The prebuilt bundle (KLEA_WORKFLOW_BUNDLE points a worker at another one, e.g. a test build). */
export const WORKFLOW_BUNDLE_PATH =
  process.env.KLEA_WORKFLOW_BUNDLE || path.resolve(__dirname, '..', 'workflow-bundle.js');

/** Stateless libraries every workflow run uses. */
export const PRELOADED_MODULES = ['zod'];

/** `workflowsPath` may be the compiled dist/workflows or the TypeScript sources (tests). */
export async function buildWorkflowBundle(
  workflowsPath = require.resolve('../workflows')
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    // The tracing interceptors are always in the bundle: they continue the caller's trace into workflow, activity
    // and child-workflow spans. Their spans leave through the worker's `exporter` sink, which discards them when
    // traces are off (worker/telemetry.ts).
    workflowInterceptorModules: [WORKFLOW_INTERCEPTORS],
    // Loaded once per worker and shared (frozen) by every workflow run, rather than evaluated again for each new
    // run: zod holds no per-run state, and building it was a large share of what starting a run cost.
    preloadModules: PRELOADED_MODULES,
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
