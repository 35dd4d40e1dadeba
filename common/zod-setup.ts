/**
 * Loaded once when a worker starts, before its shared modules are frozen (worker/bundle.ts preloads it with zod):
 * zod completes its global configuration (default locale, memoizer) on the first schema it builds, so one is
 * built here; a run building the first would otherwise try to change the frozen configuration.
 */
import { z } from 'zod';

export const zodReady = z.object({ ready: z.literal(true) }).safeParse({ ready: true }).success;
