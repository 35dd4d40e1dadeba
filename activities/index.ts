/**
 * All of Klea's I/O lives in activities. The worker builds them once with `createActivities(deps)`;
 * workflows import only the `Activities` type.
 */
import type { Config } from '../common/config';
import type { Logger } from '../runtime/log';
import { createModelClient, type ModelClient } from './llm/model';
import { routeRequest, type RouteRequestInput, type RouteRequestResult } from './llm/route-request';
import type { McpPool } from './mcp/pool';
import { createToolActivities } from './mcp/tools';

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** The worker's MCP client pool (the worker shuts it down when it stops). */
  pool: McpPool;
  /** Injected in tests; built from config otherwise. */
  model?: ModelClient;
}

export function createActivities(deps: ActivityDeps) {
  const model = deps.model ?? createModelClient(deps.config);
  return {
    ...createToolActivities({ config: deps.config, log: deps.log, pool: deps.pool }),
    async routeRequest(input: RouteRequestInput): Promise<RouteRequestResult> {
      return routeRequest(model, input);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
