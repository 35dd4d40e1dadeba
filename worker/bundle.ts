/** Builds the workflow bundle ahead of time, so a forbidden import fails the build, not a worker at start-up. */
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import path from 'node:path';

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
