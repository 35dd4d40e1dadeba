/**
 * All of Klea's I/O lives in activities. The worker builds them once with `createActivities(deps)`;
 * workflows import only the `Activities` type.
 */
import type { Config } from '../common/config';
import type { Logger } from '../runtime/log';
import { createModelClient, type ModelClient } from './llm/model';
import { routeRequest, type RouteRequestInput, type RouteRequestResult } from './llm/route-request';

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** Injected in tests; built from config otherwise. */
  model?: ModelClient;
}

export function createActivities(deps: ActivityDeps) {
  const model = deps.model ?? createModelClient(deps.config);
  return {
    async routeRequest(input: RouteRequestInput): Promise<RouteRequestResult> {
      return routeRequest(model, input);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
