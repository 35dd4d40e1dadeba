/**
 * The Planner's and the picker's activities: `writePlan` (with the first round's picks, when the workflow may go on
 * with them at once: common/first-pick.ts) and `pickTools`, each call's paths checked (where they resolve, and
 * whether they are outside the project or sensitive) so a step needs no separate round trip for it. The
 * permission decision stays with the workflow; the workspace server checks every path again.
 */
import type { Config } from '../common/config';
import { firstPickSteps, type FirstPick, type FirstPickAsk } from '../common/first-pick';
import { addUsage, type MeteredUsage, type ModelUsage } from '../common/model-protocol';
import { earlierTurnsOf, laterChecksOf, plannedFiles, soleChangeOf, type Plan } from '../common/plan';
import type { ToolDescriptor } from '../common/tools';
import type { Logger } from '../runtime/log';
import type { GuardedPath } from '../runtime/path-resolve';
import { activityContext } from './activity-context';
import type { ModelClient } from './llm/model';
import { namedFiles } from './llm/named-files';
import { pickTools, type PickToolsInput, type PickToolsResult } from './llm/pick-tools';
import { writePlan, type WritePlanInput } from './llm/planner';
import { isDataFile } from './llm/program';
import type { createToolActivities } from './mcp/tools';
import type { createProjectCheck, ProjectCheckAsk } from './project/check';
import { whereDefined } from './project/definitions';
import type { ProjectContextReader } from './project/context';
import type { ProjectListing } from './project/listing';
import { stepNewFiles, stepUnshownFiles, type PromptContext } from './prompt-context';

export interface PlanActivityDeps {
  config: Config;
  log: Logger;
  model: ModelClient;
  tools: ReturnType<typeof createToolActivities>;
  context: PromptContext;
  projectContext: ProjectContextReader;
  projectCheck: ReturnType<typeof createProjectCheck>;
}

export function createPlanActivities(deps: PlanActivityDeps) {
  const { model, tools, context } = deps;
  const offered = async (projectDir: string, toolAccess: WritePlanInput['toolAccess']) =>
    (await tools.listTools({ projectDir, toolAccess })).tools;

  /** The data files the steps a step builds on name (./llm/program), as they are now. */
  async function dataSources(projectDir: string, listing: ProjectListing | undefined, s: PickToolsInput['steps'][0]) {
    const built = [...s.dependencyResults.map((d) => d.title), ...(s.builtOn ?? [])].join('\n');
    const names = namedFiles(listing?.files ?? [], built).filter(isDataFile);
    return names.length ? context.fileTexts(projectDir, names) : [];
  }

  /** A pick, with every call's paths checked. */
  async function pickChecked(input: PickToolsInput, offeredTools: ToolDescriptor[], opts: { mayAsk?: boolean } = {}) {
    const listing = input.listing ?? (await context.listing(input.projectDir));
    const steps = await Promise.all(
      input.steps.map(async (s) => {
        // A small model is shown the part of a long file the step or the request names (./llm/file-part).
        const files = await context.stepFiles(
          input.projectDir,
          listing,
          s,
          model.profile === 'small' ? input.request : undefined
        );
        const sources =
          model.profile === 'small' && !files.length ? await dataSources(input.projectDir, listing, s) : [];
        const newFiles = listing?.complete ? stepNewFiles(listing.files, s) : [];
        // A small model's writes also read the files the request names (./llm/file-content).
        const shownNames = new Set(files.map((f) => f.path));
        const requestNames =
          model.profile === 'small' && input.request
            ? namedFiles(listing?.files ?? [], input.request).filter((f) => !shownNames.has(f))
            : [];
        const requestFiles = requestNames.length ? await context.fileTexts(input.projectDir, requestNames) : [];
        return {
          ...s,
          files,
          ...(sources.length ? { sources } : {}),
          ...(requestFiles.length ? { requestFiles } : {}),
          unshown: stepUnshownFiles(listing?.files ?? [], s, files),
          ...(listing?.complete ? { newFiles } : {}),
        };
      })
    );
    const picked = await pickTools(model, { ...input, listing, steps }, offeredTools, opts);
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
    input: WritePlanInput,
    ask: FirstPickAsk,
    written: { plan: Plan; usage: ModelUsage },
    offeredTools: ToolDescriptor[],
    began: number
  ): Promise<(FirstPick & { questions?: PickToolsResult['questions'] }) | undefined> {
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
          ...earlierTurnsOf(input.recentTurns),
          goal: written.plan.goal,
          steps: steps.map((s) => ({
            id: s.id,
            title: s.title,
            instruction: s.instruction,
            dependencyResults: [],
            ...(s.expect ? { expect: s.expect } : {}),
            // Nothing has run yet: every file the step is to change is unchanged (under the small profile a pick
            // that only reads one it shows becomes its write: ./llm/small-model).
            ...(plannedFiles(s).length ? { unchanged: plannedFiles(s) } : {}),
            ...laterChecksOf(written.plan.steps, s),
            ...soleChangeOf(written.plan.steps, s, {
              firstPlan: !input.previousPlan,
              summary: input.summary,
              recentTurns: input.recentTurns,
            }),
          })),
          // The listing the plan was written with: the project has not changed since.
          listing: input.listing,
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
    /**
     * The Planner's plan; with `firstPick` (a first plan the workflow may go on with at once), also the first
     * round's tool picks, as `pickTools` makes them (common/first-pick.ts).
     */
    async writePlan(input: WritePlanInput & ProjectCheckAsk & { firstPick?: FirstPickAsk }) {
      return deps.projectCheck.checkedFirst(input, () => planned(input));
    },

    /** Binds the steps' tool calls and checks each call's paths. */
    async pickTools(input: PickToolsInput): Promise<PickToolsResult & { guarded: GuardedPath[][] }> {
      return pickChecked(input, await offered(input.projectDir, input.toolAccess), { mayAsk: input.mayAsk === true });
    },
  };

  /** The plan, and the first round's picks when asked for (`writePlan`). */
  async function planned(input: WritePlanInput & { firstPick?: FirstPickAsk }): Promise<{
    plan: Plan;
    usage: MeteredUsage;
    repairs?: string[];
    firstPick?: FirstPick;
  }> {
    const began = Date.now();
    const [toolList, ctx, listing] = await Promise.all([
      offered(input.projectDir, input.toolAccess),
      deps.projectContext.read(input.projectDir),
      context.listing(input.projectDir),
    ]);
    // Where the code the request mentions lives, when the request names no file of the project: one that does says
    // where to work (told where a function it named is defined, a small Planner planned a new test into that file).
    const defined = namedFiles(listing?.files ?? [], input.request).length
      ? []
      : whereDefined(input.request, await context.definitions(input.projectDir, listing));
    const listed = { ...input, listing, ...(defined.length ? { defined } : {}) };
    const written = await writePlan(model, listed, toolList, ctx.text);
    if (!input.firstPick) return written;
    const picked = await firstPick(listed, input.firstPick, written, toolList, began);
    if (!picked) return written;
    const { questions, ...pick } = picked;
    if (!questions?.length) return { ...written, firstPick: pick };
    // A new file needs a fact only the user knows: its step asks first (and the round is picked again after).
    const usage = {
      ...addUsage(written.usage, pick.usage),
      modelCalls: (written.usage.modelCalls ?? 1) + (pick.usage.modelCalls ?? 1),
    };
    return { ...askedFirst(written, questions), usage };
  }
}

/**
 * The plan with the questions the first pick raised added to their steps, said in its repairs. The pick's calls
 * are dropped: its steps are picked again, the asking one once it has its answers.
 */
function askedFirst<W extends { plan: Plan; repairs?: string[] }>(
  written: W,
  questions: NonNullable<PickToolsResult['questions']>
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

/** Whether this runs in an activity whose cancellation was requested. */
function activityCancelled(): boolean {
  return activityContext()?.cancellationSignal.aborted ?? false;
}

/** What is left of the attempt's start-to-close time, for an attempt that began at `began` (unbounded outside). */
function activityTimeLeft(began: number): number {
  const limit = activityContext()?.info.startToCloseTimeoutMs;
  return limit ? limit - (Date.now() - began) : Infinity;
}
