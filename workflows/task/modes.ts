/** Operating modes: what can run, and what the user is told when a requested mode cannot. */
export const SCIENTIFIC_MODE_EXPLANATION =
  'Scientific mode cannot run yet: it is meant for grounded, source-backed research answers over a curated ' +
  'knowledge source, and no such source is connected to Klea (retrieval is still to come). Rather than answer ' +
  'without grounding, Klea declines the request. Switch to general mode (`/mode general`) to have it handled ' +
  'with the configured model and tools.';
