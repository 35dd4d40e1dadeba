/**
 * All of Klea's I/O lives in activities. The worker builds them once with `createActivities(deps)`;
 * workflows import only the `Activities` type.
 */
import type { Config } from '../common/config';
import type { Logger } from '../runtime/log';
import { createModelClient, type ModelClient } from './llm/model';
import * as nodes from './llm/nodes';
import { routeRequest, type RouteRequestInput, type RouteRequestResult } from './llm/route-request';
import type { McpPool } from './mcp/pool';
import { createToolActivities } from './mcp/tools';
import { ProjectContextReader } from './project/context';

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
  const tools = createToolActivities({ config: deps.config, log: deps.log, pool: deps.pool });
  const projectContext = new ProjectContextReader();
  const offered = async (projectDir: string, toolAccess: nodes.WritePlanInput['toolAccess']) =>
    (await tools.listTools({ projectDir, toolAccess })).tools;

  return {
    ...tools,

    async routeRequest(input: RouteRequestInput): Promise<RouteRequestResult> {
      return routeRequest(model, input);
    },

    /** The project instruction file in use (for the `context` event); its text stays out of workflow history. */
    async projectContextInfo(input: { projectDir: string }): Promise<{ file: string | null }> {
      return { file: (await projectContext.read(input.projectDir)).file };
    },

    async writePlan(input: nodes.WritePlanInput) {
      const [toolList, ctx] = await Promise.all([
        offered(input.projectDir, input.toolAccess),
        projectContext.read(input.projectDir),
      ]);
      return nodes.writePlan(model, input, toolList, ctx.text);
    },

    async pickTools(input: nodes.PickToolsInput): Promise<nodes.PickToolsResult> {
      return nodes.pickTools(model, input, await offered(input.projectDir, input.toolAccess));
    },

    async doStep(input: nodes.DoStepInput) {
      return nodes.doStep(model, input);
    },

    async evaluateStep(input: nodes.EvaluateStepInput) {
      return nodes.evaluateStep(model, input);
    },

    async composeAnswer(input: nodes.ComposeAnswerInput) {
      const ctx = await projectContext.read(input.projectDir);
      return nodes.composeAnswer(model, input, ctx.text);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
