/**
 * All of Klea's I/O lives in activities. The worker builds them once with `createActivities(deps)`;
 * workflows import only the `Activities` type.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../common/config';
import { Failure } from '../common/failures';
import { firstPickSteps, type FirstPick, type FirstPickAsk } from '../common/first-pick';
import { addUsage, type MeteredUsage, type ModelUsage } from '../common/model-protocol';
import type { Grant } from '../common/path-guard';
import { plannedFiles, type Plan } from '../common/plan';
import { sandboxNote, type ProjectContextInfo } from '../common/sandbox-status';
import type { SummarizeInput } from '../common/session';
import type { ToolDescriptor } from '../common/tools';
import type { Logger } from '../runtime/log';
import { activityContext } from './activity-context';
import { resolvePath, type GuardedPath } from '../runtime/path-resolve';
import { sandboxReport } from '../runtime/sandbox-probe';
import { createModelClient, type ModelClient } from './llm/model';
import {
  allFiles,
  boundNamedFiles,
  listedFiles,
  ANSWER_FILES_CHARS,
  NAMED_FILES_MAX,
  namedFiles,
  newFileNames,
  type NamedFile,
} from './llm/named-files';
import * as nodes from './llm/nodes';
import { routeRequest, type RouteRequestInput, type RouteRequestResult } from './llm/route-request';
import type { McpPool } from './mcp/pool';
import { createToolActivities } from './mcp/tools';
import { requireAllowedProject } from './project/allowed';
import { ProjectContextReader } from './project/context';
import { createRewindActivities } from './rewind';
import { sleptSessionGrants } from './session/slept-run';

/** Files that tell what a project is and how it is built and tested. */
const INIT_FILES = [
  'README.md',
  'package.json',
  'Makefile',
  'pyproject.toml',
  'setup.py',
  'requirements.txt',
  'Cargo.toml',
  'go.mod',
  'pom.xml',
  'build.gradle',
  'CONTRIBUTING.md',
  'tsconfig.json',
  'justfile',
];

/** How much of the project's listing the prompts see. */
const FILES_CHARS = 1200;

export interface ActivityDeps {
  config: Config;
  log: Logger;
  /** The worker's MCP client pool (the worker shuts it down when it stops). */
  pool: McpPool;
  /** Injected in tests; built from config otherwise. */
  model?: ModelClient;
}

/**
 * The plan with the questions the first pick raised added to their steps, said in its repairs. The pick's calls
 * are dropped: its steps are picked again, the asking one once it has its answers.
 */
function askedFirst<W extends { plan: Plan; repairs?: string[] }>(
  written: W,
  questions: NonNullable<nodes.PickToolsResult['questions']>
): W {
  const steps = written.plan.steps.map((s) => {
    const asked = questions.filter((q) => q.stepId === s.id && !s.questions.includes(q.question));
    return asked.length ? { ...s, questions: [...s.questions, ...asked.map((q) => q.question)] } : s;
  });
  const repairs = questions.map(
    (q) => `step "${q.stepId}": ${q.path} needs a fact only the user knows; the step asks "${q.question}" first`
  );
  return { ...written, plan: { ...written.plan, steps }, repairs: [...(written.repairs ?? []), ...repairs] };
}

export function createActivities(deps: ActivityDeps) {
  const model = deps.model ?? createModelClient(deps.config, deps.log);
  const tools = createToolActivities({ config: deps.config, log: deps.log, pool: deps.pool });
  const projectContext = new ProjectContextReader();
  const offered = async (projectDir: string, toolAccess: nodes.WritePlanInput['toolAccess']) =>
    (await tools.listTools({ projectDir, toolAccess })).tools;

  /**
   * A workspace read for a prompt, with read-only access (confined like any read; a sensitive path is refused): its
   * text, or undefined when it cannot be had, and the prompt goes without it.
   */
  async function readForPrompt(projectDir: string, tool: string, args: Record<string, unknown>) {
    try {
      const r = await tools.callTool({ projectDir, toolAccess: 'read_only', server: 'workspace', tool, args });
      return r.status === 'ok' ? r.text : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * A short listing of the project's files (two levels) for the Planner's and the picker's prompts: a small model
   * names real files when it sees them.
   */
  async function projectFiles(projectDir: string): Promise<string | undefined> {
    const text = await readForPrompt(projectDir, 'list_dir', { path: '.', depth: 2 });
    return text !== undefined && text.length > FILES_CHARS ? `${text.slice(0, FILES_CHARS)}\n…` : text;
  }

  /** Files as they are now, read for a prompt within `chars` (a file that cannot be read is left out). */
  async function namedFileTexts(projectDir: string, names: readonly string[], chars?: number) {
    const read = await Promise.all(
      names.slice(0, NAMED_FILES_MAX).map(async (file) => {
        const text = await readForPrompt(projectDir, 'read_file', { path: file });
        return text === undefined ? null : { path: file, text };
      })
    );
    return boundNamedFiles(
      read.filter((f): f is NamedFile => f !== null),
      chars
    );
  }

  /**
   * The files a step's plan aims at (its `expect.changes`) and its instruction names (activities/llm/named-files.ts),
   * as they are now.
   */
  async function stepFiles(projectDir: string, listing: string | undefined, step: nodes.PickStep) {
    // And the files the step's calls so far read or changed, as they are now: an edit is aimed at text it sees.
    const touched = (step.earlierCalls ?? []).map((c) => c.args.path).filter((p): p is string => typeof p === 'string');
    const listed = new Set(listedFiles(listing));
    const names = [
      ...new Set([
        ...plannedFiles(step).filter((p) => listed.has(p)),
        ...namedFiles(listing, step.instruction),
        ...touched.filter((p) => listed.has(p)),
      ]),
    ];
    return namedFileTexts(projectDir, names);
  }

  /** The files a step is to create: those its plan's `expect.changes` and its instruction name that do not exist. */
  const stepNewFiles = (existing: readonly string[], step: nodes.PickStep) => {
    const known = new Set(existing);
    return [
      ...new Set([...plannedFiles(step).filter((p) => !known.has(p)), ...newFileNames(existing, step.instruction)]),
    ];
  };

  /** A pick, with every call's paths checked (where they resolve, and whether outside the project or sensitive). */
  async function pickChecked(
    input: nodes.PickToolsInput,
    offeredTools: ToolDescriptor[],
    opts: { mayAsk?: boolean } = {}
  ) {
    const files = input.files ?? (await projectFiles(input.projectDir));
    const existing = allFiles(files);
    const steps = await Promise.all(
      input.steps.map(async (s) => ({
        ...s,
        files: await stepFiles(input.projectDir, files, s),
        ...(existing ? { newFiles: stepNewFiles(existing, s) } : {}),
      }))
    );
    const picked = await nodes.pickTools(model, { ...input, files, steps }, offeredTools, opts);
    const guarded = await Promise.all(
      picked.calls.map((c) =>
        tools.checkPaths({ projectDir: input.projectDir, server: c.server, tool: c.tool, args: c.args })
      )
    );
    return { ...picked, guarded };
  }

  /**
   * The first round's picks right after the first plan (common/first-pick.ts), or none. A pick that fails leaves
   * the plan standing: the workflow then picks in an activity of its own, retried as every pick is.
   */
  async function firstPick(
    input: nodes.WritePlanInput,
    ask: FirstPickAsk,
    written: { plan: Plan; usage: ModelUsage },
    offeredTools: ToolDescriptor[],
    began: number
  ): Promise<(FirstPick & { questions?: nodes.PickToolsResult['questions'] }) | undefined> {
    const steps = firstPickSteps(written.plan, ask, written.usage.inputTokens + written.usage.outputTokens);
    if (!steps.length) return undefined;
    // The plan and the pick share the activity's time limit: a pick that might outlast what is left would have the
    // attempt time out and the plan written again, so a slow plan goes back to the workflow alone; so does one
    // whose task was cancelled meanwhile.
    if (activityCancelled() || activityTimeLeft(began) < deps.config.model.timeout_ms) return undefined;
    try {
      const picked = await pickChecked(
        {
          projectDir: input.projectDir,
          toolAccess: input.toolAccess,
          request: input.request,
          goal: written.plan.goal,
          steps: steps.map((s) => ({
            id: s.id,
            title: s.title,
            instruction: s.instruction,
            dependencyResults: [],
            ...(s.expect ? { expect: s.expect } : {}),
          })),
          // The listing the plan was written with: the project has not changed since.
          files: input.files,
        },
        offeredTools,
        // The steps have not started: a fact only the user knows can still be asked before they do.
        { mayAsk: true }
      );
      return { stepIds: steps.map((s) => s.id), ...picked };
    } catch (err) {
      if (activityCancelled()) throw err;
      deps.log.warn('the first pick with the plan failed; the task picks on its own', {
        error: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    }
  }

  return {
    ...tools,
    ...createRewindActivities({ config: deps.config, log: deps.log }),

    /** The router, which takes a message naming a file of the project as work at once (llm/route-request.ts). */
    async routeRequest(input: RouteRequestInput): Promise<RouteRequestResult> {
      const files = input.projectDir ? listedFiles(await projectFiles(input.projectDir)) : [];
      return routeRequest(model, input, files);
    },

    /**
     * The project instruction file in use and where this worker runs commands (for the `context` event); the
     * file's text stays out of workflow history.
     */
    async projectContextInfo(input: { projectDir: string }): Promise<ProjectContextInfo> {
      requireAllowedProject(deps.config, input.projectDir);
      const [ctx, sandbox] = await Promise.all([
        projectContext.read(input.projectDir),
        sandboxReport(deps.config.tools.sandbox),
      ]);
      return { file: ctx.file, sandbox: sandbox.status, sandboxNote: sandboxNote(sandbox) };
    },

    /**
     * The Planner's plan; with `firstPick` (a first plan the workflow may go on with at once), also the first
     * round's tool picks, as `pickTools` makes them (common/first-pick.ts).
     */
    async writePlan(input: nodes.WritePlanInput & { firstPick?: FirstPickAsk }): Promise<{
      plan: Plan;
      usage: MeteredUsage;
      repairs?: string[];
      firstPick?: FirstPick;
    }> {
      const began = Date.now();
      const [toolList, ctx, files] = await Promise.all([
        offered(input.projectDir, input.toolAccess),
        projectContext.read(input.projectDir),
        projectFiles(input.projectDir),
      ]);
      const listed = { ...input, files };
      const written = await nodes.writePlan(model, listed, toolList, ctx.text);
      if (!input.firstPick) return written;
      const picked = await firstPick(listed, input.firstPick, written, toolList, began);
      if (!picked) return written;
      const { questions, ...pick } = picked;
      if (!questions?.length) return { ...written, firstPick: pick };
      // A new file needs a fact only the user knows: its step asks first (and the round is picked again after).
      const usage = { ...addUsage(written.usage, pick.usage), modelCalls: 1 + (pick.usage.modelCalls ?? 1) };
      return { ...askedFirst(written, questions), usage };
    },

    /**
     * Binds the steps' tool calls and checks each call's paths (where they resolve, and whether they are outside
     * the project or sensitive), as `checkPaths` does, so a step needs no separate round trip for it. The
     * permission decision stays with the workflow; the workspace server checks every path again.
     */
    async pickTools(input: nodes.PickToolsInput): Promise<nodes.PickToolsResult & { guarded: GuardedPath[][] }> {
      return pickChecked(input, await offered(input.projectDir, input.toolAccess));
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
      const [ctx, listing] = await Promise.all([projectContext.read(input.projectDir), projectFiles(input.projectDir)]);
      const files = await namedFileTexts(input.projectDir, namedFiles(listing, input.request), ANSWER_FILES_CHARS);
      return nodes.composeAnswer(model, { ...input, ...(files.length ? { files } : {}) }, ctx.text);
    },

    async summarizeMemory(input: SummarizeInput) {
      return nodes.summarizeMemory(model, input);
    },

    /**
     * `/init`: looks at the project through the workspace server's read-only tools, has the `init_project` node
     * write the guidance, and writes AGENTS.md through the workspace server (so the write is confined and audited).
     */
    sleptSessionGrants,

    async initProject(input: { projectDir: string }): Promise<{ path: string; bytes: number; usage: ModelUsage }> {
      const call = (tool: string, args: Record<string, unknown>, grants: Grant[] = []) =>
        tools.callTool({ projectDir: input.projectDir, toolAccess: 'full', server: 'workspace', tool, args, grants });
      requireAllowedProject(deps.config, input.projectDir);
      const listing = await call('list_dir', { path: '.', depth: 2 });
      const parts = [`## Files (two levels)\n${listing.text}`];
      for (const name of INIT_FILES) {
        const r = await call('read_file', { path: name, end_line: 150 });
        if (r.status === 'ok') parts.push(`## ${name}\n${r.text.slice(0, 6000)}`);
      }
      const { text, usage } = await nodes.initProjectText(model, parts.join('\n\n'));
      // AGENTS.md is protected (every later plan reads it): the user's own `/init` is the decision to write it.
      const agentsMd =
        resolvePath(path.join(input.projectDir, 'AGENTS.md')).real ?? path.join(input.projectDir, 'AGENTS.md');
      const written = await call('write_file', { path: 'AGENTS.md', content: text.trim() + '\n' }, [
        { path: agentsMd, op: 'write' },
      ]);
      if (written.status !== 'ok')
        throw ApplicationFailure.nonRetryable(`could not write AGENTS.md: ${written.text}`, Failure.InitWriteFailed);
      return { path: 'AGENTS.md', bytes: Buffer.byteLength(text), usage };
    },
  };
}

/** Whether this runs in an activity whose cancellation was requested. */
function activityCancelled(): boolean {
  return activityContext()?.cancellationSignal.aborted ?? false;
}

/** What is left of the attempt's start-to-close time, for an attempt that began at `began` (unbounded outside). */
function activityTimeLeft(began: number): number {
  const limit = activityContext()?.info.startToCloseTimeoutMs;
  return limit ? limit - (Date.now() - began) : Infinity;
}

export type Activities = ReturnType<typeof createActivities>;
