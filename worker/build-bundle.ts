/** `npm run build` step: writes dist/workflow-bundle.js. */
import { writeFileSync } from 'node:fs';
import { buildWorkflowBundle, WORKFLOW_BUNDLE_PATH } from './bundle';

buildWorkflowBundle()
  .then(({ code }) => {
    writeFileSync(WORKFLOW_BUNDLE_PATH, code);
    console.log(`workflow bundle: ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)`);
  })
  .catch((err: unknown) => {
    console.error(`workflow bundle failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
