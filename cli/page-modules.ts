/**
 * The web page's modules the CLI shares, so the two clients behave alike: the event-stream parser (web/sse.js) and
 * the rule for showing model-chosen text (web/visible.js). The page's scripts are served as they are and never
 * copied into dist/, so they are loaded from the installation's web/ folder.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { REPO_ROOT } from '../runtime/repo-root';
import type * as Sse from '../web/sse';
import type * as Visible from '../web/visible';

// ES modules, which require() loads from Node 20.19 on.
const webModule = createRequire(__filename);
/** The web page's own stream parser, so the two clients read frames alike. */
export const { createFrameParser } = webModule(path.join(REPO_ROOT, 'web', 'sse.js')) as typeof Sse;
// The page's rule for showing model-chosen text: control and bidirectional characters are shown, never obeyed.
export const { visibleText, visibleLine } = webModule(path.join(REPO_ROOT, 'web', 'visible.js')) as typeof Visible;
/** One value on one line, shown (a title, a path, an id). */
export const one = (value: unknown) => visibleLine(String(value));
