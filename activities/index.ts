/**
 * All of Klea's I/O lives in activities. The worker builds them once with `createActivities(deps)`; workflows
 * import only the `Activities` type. This file wires them: each kind of work lives in a module of its own.
 */
import type { ProjectLeases } from './project/lease';
import type { Config } from '../common/config';
import type { ProjectContextInfo } from '../common/sandbox-status';
import type { SummarizeInput } from '../common/session';
import type { Logger } from '../runtime/log';
import { createModelClient, type ModelClient } from './llm/model';
import { ANSWER_FILES_CHARS, namedFiles } from './llm/named-files';
import * as nodes from './llm/nodes';
import { routeRequest, type RouteRequestInput, type RouteRequestResult } from './llm/route-request';
import type { McpPool } from './mcp/pool';
import { createToolActivities } from './mcp/tools';
import { createPlanActivities } from './plan-activities';
import { createProjectCheck, type ProjectCheckAsk } from './project/check';
import { ProjectContextReader } from './project/context';
import { whereDefined } from './project/definitions';
import { initProject } from './project/init';
import { createPromptContext } from './prompt-context';
import { createRewindActivities } from './rewind';
import { sleptSessionGrants } from './session/slept-run';

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** The worker's MCP client pool (the worker shuts it down when it stops). */
  pool: McpPool;
  /** Injected in tests; built from config otherwise. */
  model?: ModelClient;
  /** On a host of a group: its leases on the group's projects (project/lease.ts). */
  leases?: ProjectLeases;
}

export function createActivities(deps: ActivityDeps) {
  const { config, log } = deps;
  const model = deps.model ?? createModelClient(config, log);
  const tools = createToolActivities({ config, log, pool: deps.pool, leases: deps.leases });
  const projectContext = new ProjectContextReader();
  const context = createPromptContext(tools);
  const projectCheck = createProjectCheck(config, projectContext);

  return {
    ...tools,
    ...createRewindActivities({ config, log, leases: deps.leases }),
    ...createPlanActivities({ config, log, model, tools, context, projectContext, projectCheck }),
    sleptSessionGrants,

    /** The router, which takes a message naming a file of the project as work at once (llm/route-request.ts). */
    async routeRequest(
      input: RouteRequestInput & ProjectCheckAsk
    ): Promise<RouteRequestResult & { project?: ProjectContextInfo }> {
      return projectCheck.checkedFirst(input, async () => {
        const listing = input.projectDir ? await context.listing(input.projectDir) : undefined;
        return routeRequest(model, input, listing?.files ?? []);
      });
    },

    /**
     * The project instruction file in use and where this worker runs commands (for the `context` event); the
     * file's text stays out of workflow history.
     */
    async projectContextInfo(input: { projectDir: string }): Promise<ProjectContextInfo> {
      return projectCheck.projectInfo(input.projectDir);
    },

    async doStep(input: nodes.DoStepInput) {
      return nodes.doStep(model, input);
    },

    async evaluateStep(input: nodes.EvaluateStepInput) {
      return nodes.evaluateStep(model, input);
    },

    /**
     * The answer, from the steps' results and the files the request names as they are now: a question about a file
     * is answered from the file, whatever the steps made of it.
     */
    async composeAnswer(input: nodes.ComposeAnswerInput) {
      const [ctx, listing] = await Promise.all([
        projectContext.read(input.projectDir),
        context.listing(input.projectDir),
      ]);
      const named = namedFiles(listing?.files ?? [], input.request);
      const [files, defs] = await Promise.all([
        context.fileTexts(input.projectDir, named, ANSWER_FILES_CHARS),
        context.definitions(input.projectDir, listing),
      ]);
      const defined = whereDefined(input.request, defs);
      const found = { ...(files.length ? { files } : {}), ...(defined.length ? { defined } : {}) };
      return nodes.composeAnswer(model, { ...input, ...found }, ctx.text);
    },

    async summarizeMemory(input: SummarizeInput) {
      return nodes.summarizeMemory(model, input);
    },

    /** `/init`: writes the project's AGENTS.md (./project/init.ts). */
    async initProject(input: { projectDir: string }) {
      // A group's project: its AGENTS.md is written where the lease is held, so the model is asked there only.
      const init = () => initProject({ config, model, tools }, input);
      return deps.leases ? deps.leases.using(input.projectDir, init) : init();
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
