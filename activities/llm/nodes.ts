/**
 * The task path's model nodes (docs/architecture.md §7): write_plan, pick_tools, do_step, evaluate_step and
 * compose_answer. Each builds its prompt from only what it needs; project context goes to the Planner and the
 * answer composer only, never to the per-round nodes.
 */
import { z } from 'zod';
import type { ToolAccess } from '../../common/config';
import type { PickRepair } from '../../common/first-pick';
import { addUsage, ZERO_USAGE, type MeteredUsage, type ModelUsage } from '../../common/model-protocol';
import { EvaluateStepOutputSchema, planSchema, type Plan, type PlanStep } from '../../common/plan';
import type { SummarizeInput } from '../../common/session';
import type { StepResultView, Turn } from '../../common/task';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import { EDIT_FILE, withWholeFileWrites, WRITE_FILE, type FileQuestion } from './file-content';
import type { ModelClient, NodePrompt } from './model';
import { allFiles, isCut, type NamedFile } from './named-files';
import { planOfRequest } from './plan-of-request';
import { jsonSchemaOf, type OpenAIFunction } from './structured-output';
import { turnsText, untrusted, withoutFences, withUntrustedRule } from './untrusted';

const section = (title: string, body: string | undefined | null) =>
  body && body.trim() ? `## ${title}\n${body.trim()}` : '';
const join = (...parts: string[]) => parts.filter(Boolean).join('\n\n');
/** Step results are what tools returned (or what the model made of it): fenced as untrusted, per step. */
const resultsText = (results: readonly StepResultView[]) =>
  results
    .map((r) =>
      join(
        `- ${r.id} "${r.title}" (${r.notAchieved ? 'NOT ACHIEVED' : r.status})`,
        r.instruction ? `Instruction: ${r.instruction}` : '',
        r.notAchieved ? `Why not: ${r.notAchieved}` : '',
        r.result === null || r.result === '' ? '(no result)' : untrusted(`result of step ${r.id}`, r.result)
      )
    )
    .join('\n');
/** The project's files as the Planner and the picker see them (a short listing), when known. */
const filesSection = (files: string | undefined) =>
  section('Files in the project', files && untrusted('the project listing', files));
// ---------------------------------------------------------------- write_plan

export interface WritePlanInput {
  projectDir: string;
  toolAccess: ToolAccess;
  request: string;
  summary?: string;
  recentTurns?: Turn[];
  /** For a revision or a replan: the plan being replaced, and why. */
  previousPlan?: Plan;
  feedback?: string;
  /** Steps already finished (a replan keeps them); the new plan may depend on their ids. */
  finished?: StepResultView[];
  /** A short listing of the project's files (filled in by the activity). */
  files?: string;
}

export const WRITE_PLAN_SYSTEM = `You are the Planner of Klea, a coding agent. You write the plan for the user's request and call the
function write_plan with it. The plan is one step whose instruction is the request, word for word: one step can
read, edit and run many times. Split only a request that lists separate jobs.

Example 1. Request: "Fix the typo in README.md, then run make."
{"goal": "Fix the typo in README.md, then run make.", "steps": [{"id": "s1", "title": "Fix and run", "instruction": "Fix the typo in README.md, then run make.", "depends_on": [], "needs_tool": true, "questions": []}], "review": {"before_work": false, "after_step_ids": []}}

Example 2. Request: "Where is main() defined?"
{"goal": "Where is main() defined?", "steps": [{"id": "s1", "title": "Find main", "instruction": "Where is main() defined?", "depends_on": [], "needs_tool": true, "questions": []}], "review": {"before_work": false, "after_step_ids": []}}

Example 3. Request: "Write my email address into contact.txt."
{"goal": "Write my email address into contact.txt.", "steps": [{"id": "s1", "title": "Write contact", "instruction": "Write my email address into contact.txt.", "depends_on": [], "needs_tool": true, "questions": ["What is your email address?"]}], "review": {"before_work": false, "after_step_ids": []}}

questions stays [] unless the request needs a fact that only the user knows (as in example 3). needs_tool is
false only for a step that just thinks over the results of the steps it depends on. review stays as in the
examples unless the request asks for a review.`;

/**
 * What the Planner is told of the tools: only what differs from the usual (the workspace server with write
 * access). A small model copies whatever text it is shown into its steps, so a catalogue of tools becomes a plan
 * of tool names; the pick sees the tools themselves.
 */
function toolAbilities(tools: readonly ToolDescriptor[]): string {
  if (!tools.length) return 'No tools are available: every step has needs_tool false.';
  const names = new Set(tools.map((t) => t.qualifiedName));
  const others = tools.filter((t) => t.server !== 'workspace').map((t) => `${t.name}: ${t.description.split('\n')[0]}`);
  return [
    names.has('workspace__write_file') ? '' : 'Access is read-only: no file can be changed and no command run.',
    others.length ? `Beside the project's files and commands: ${others.join('; ')}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

export function writePlanPrompt(input: WritePlanInput, tools: readonly ToolDescriptor[], projectContext: string) {
  // What the tools can do, in words: a small model copies tool names and descriptions into its steps.
  const toolList = toolAbilities(tools);
  const turns = input.recentTurns && turnsText(input.recentTurns);
  const user = join(
    section('Request', input.request),
    section('Project context (from the project instruction file)', projectContext),
    section('Summary of the earlier conversation', input.summary && untrusted('the running summary', input.summary)),
    section('Recent conversation', turns),
    filesSection(input.files),
    toolList ? section('Tools', toolList) : '',
    input.previousPlan ? section('Previous plan', JSON.stringify(input.previousPlan, null, 2)) : '',
    input.finished?.length
      ? section('Steps already finished (leave them out; you may depend on their ids)', resultsText(input.finished))
      : '',
    input.feedback
      ? section(
          input.finished?.length ? 'Why the plan must change' : "The user's feedback on the previous plan",
          input.feedback
        )
      : ''
  );
  return { node: 'write_plan' as const, system: withUntrustedRule(WRITE_PLAN_SYSTEM), messages: [user] };
}

export async function writePlan(
  model: ModelClient,
  input: WritePlanInput,
  tools: readonly ToolDescriptor[],
  projectContext: string
): Promise<{ plan: Plan; usage: ModelUsage; repairs?: string[] }> {
  const knownIds = input.finished?.map((f) => f.id) ?? [];
  const { value, usage } = await model.structured(
    writePlanPrompt(input, tools, projectContext),
    planSchema(knownIds),
    'Record the plan: the goal, the steps as a dependency graph, and where the user should review.'
  );
  // A first plan for a request that stands alone carries the request itself, from a model whose answers a grammar
  // holds (json_schema: llama.cpp's server and the small local models it serves, whose rewording loses what the
  // request asks). After a conversation, a revision or a replan, the Planner's words may hold what the request
  // alone does not; a model that takes forced function calls plans as it sees fit.
  const standalone =
    model.structuredOutput === 'json_schema' &&
    !input.previousPlan &&
    !knownIds.length &&
    !input.summary &&
    !input.recentTurns?.length;
  const own = standalone ? planOfRequest(value.plan, input.request) : { plan: value.plan, repairs: [] };
  const repairs = [...value.repairs, ...own.repairs];
  return { plan: own.plan, usage, ...(repairs.length ? { repairs } : {}) };
}

// ---------------------------------------------------------------- pick_tools

export interface PickStep {
  id: string;
  title: string;
  instruction: string;
  dependencyResults: StepResultView[];
  /** Why the previous attempt failed, when this is a retry. */
  previousFailure?: string;
  /** The calls this attempt of the step has made so far, with what they returned (a step left open). */
  earlierCalls?: EarlierCall[];
  /** The project files the step's instruction names, as they are now (filled in by the activity). */
  files?: NamedFile[];
  /** Files the step's instruction names that are not in the project yet (filled in by the activity). */
  newFiles?: string[];
}

/** A call a step already made, as the next pick of the same step sees it. */
export interface EarlierCall {
  tool: string;
  args: Record<string, unknown>;
  status: string;
  text: string;
}

export interface PickToolsInput {
  projectDir: string;
  toolAccess: ToolAccess;
  /** The user's request in their own words (a small Planner's goal and steps may lose what it asks). */
  request?: string;
  goal: string;
  steps: PickStep[];
  /** A short listing of the project's files (filled in by the activity). */
  files?: string;
}

export interface PickToolsResult {
  calls: PickedCall[];
  noSuitable: Array<{ stepId: string; reason: string }>;
  /** `modelCalls` when the pick asked the model more than once (./file-content). */
  usage: MeteredUsage;
  /** What the activity changed in the model's calls, for each step's `repairs`. */
  repairs?: PickRepair[];
  /** Facts only the user knows that a step's new file needs (only when asked for with `mayAsk`). */
  questions?: FileQuestion[];
}

export const NO_SUITABLE_TOOL = 'no_suitable_tool';
/**
 * Bounds one pick_tools answer under json_schema: one call per step. A small model held to a list of calls
 * fills it, copying the offered tools one after another; a step that needs more calls leaves itself open
 * (`step_done: false`) and is picked again with what its call returned.
 */
export const MAX_CALLS_PER_STEP = 1;

export const PICK_TOOLS_SYSTEM = `You make the tool calls that carry out the steps listed. For each step, call the tool that does its next
part, with exact arguments, and set step_id to the step's id.
- Paths are relative to the project directory: use the real file names from the step or the files listed.
- step_done: false when the step needs more calls once you see this call's result (run the tests after you fix
  the code, say); true when the step is complete after this call.
- Steps already under way show the calls made so far and their results: make the next call, do not repeat one.
- If no offered tool can do a step, call ${NO_SUITABLE_TOOL} for it with the reason.
Call functions only.`;

/**
 * What no_suitable_tool takes, and the step id every offered function gets, for the steps of one batch. One zod
 * schema gives both the JSON schema the model sees and the check of its answer.
 */
function stepIdSchema(stepIds: readonly string[]) {
  return z.enum(stepIds as [string, ...string[]]).describe('id of the step this call carries out');
}
/**
 * Whether the step is complete after this call. Sent as required, so a model must decide; read as optional,
 * absent meaning complete (docs/architecture.md §7), so a model or script that never says keeps one-round steps.
 */
const STEP_DONE_JSON = {
  type: 'boolean',
  description: 'false when the step needs more calls after seeing this result; true when this call completes it',
};
function noSuitableSchema(stepIds: readonly string[]) {
  return z.strictObject({
    step_id: stepIdSchema(stepIds),
    reason: z.string().min(1).max(500).describe('why none of the offered tools can carry out the step'),
  });
}

/** The step-id parameter and the no_suitable_tool function for a set of step ids (s1, s2, … recur across tasks). */
const stepIdJson = new Map<string, { stepId: Record<string, unknown>; noSuitable: Record<string, unknown> }>();
const STEP_ID_JSON_KEPT = 256;

function stepIdParameters(stepIds: readonly string[]) {
  const key = JSON.stringify(stepIds);
  let json = stepIdJson.get(key);
  if (!json) {
    json = { stepId: jsonSchemaOf(stepIdSchema(stepIds)), noSuitable: jsonSchemaOf(noSuitableSchema(stepIds)) };
    if (stepIdJson.size >= STEP_ID_JSON_KEPT) stepIdJson.delete(stepIdJson.keys().next().value!);
    stepIdJson.set(key, json);
  }
  // Copies: callers build requests from them.
  return structuredClone(json);
}

const STOP_WORDS = new Set([
  'the',
  'and',
  'file',
  'files',
  'project',
  'with',
  'that',
  'this',
  'for',
  'from',
  'into',
  'then',
  'its',
  'what',
  'are',
  'tell',
]);

/** A word's stem, roughly: "changes", "changed", "changing" and "change" all give "chang". */
const stem = (w: string) => (w.length > 4 ? w.replace(/(?:ing|ed|es|s|e)$/, '') : w);

/** The words of a text that say what to do: lower case, three letters or more, stemmed. */
export function actionWords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  return new Set(words.filter((w) => !STOP_WORDS.has(w)).map(stem));
}

/** Workspace tools whose answer the pick prompt may already hold: the listing, and the files a step names. */
const LISTING_TOOLS = new Set(['workspace__list_dir', 'workspace__find_files']);
const READ_FILE = 'workspace__read_file';

/**
 * The offered tools, those whose name and first sentence share most words with the steps' instructions (and the
 * goal) first; last, those a step under way has called already and those whose answer the prompt holds (the whole
 * listing, every file the steps name). A small model leans to the first function it is offered, so the order is a
 * hint; it never removes a tool.
 */
export function rankTools(
  tools: readonly ToolDescriptor[],
  steps: readonly PickStep[],
  opts: { goal?: string; listingComplete?: boolean } = {}
): ToolDescriptor[] {
  const wanted = actionWords([opts.goal ?? '', ...steps.map((s) => s.instruction)].join(' '));
  const called = new Set(steps.flatMap((s) => s.earlierCalls ?? []).map((c) => c.tool));
  const filesShown = steps.every((s) => s.files?.length);
  const score = (t: ToolDescriptor) => {
    const own = actionWords(`${t.name.replace(/_/g, ' ')} ${t.description.split(/[.\n]/)[0]}`);
    const known =
      called.has(t.qualifiedName) ||
      (opts.listingComplete && LISTING_TOOLS.has(t.qualifiedName)) ||
      (filesShown && t.qualifiedName === READ_FILE);
    return [...own].filter((w) => wanted.has(w)).length - (known ? 10 : 0);
  };
  return tools
    .map((t, i) => ({ t, i, s: score(t) }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .map((x) => x.t);
}

/**
 * Tools whose `path` must name a file that exists. With the whole listing known, the sent schema holds such a path
 * to the listed files, so a small model cannot aim an edit at a path it made up (or copied from a file's text).
 */
const EXISTING_FILE_TOOLS = new Set([READ_FILE, EDIT_FILE]);

/** What a pick's paths are held to (`pickToolsFunctions`). */
export interface PickPaths {
  /** Every file of the project, when the listing holds them all; else a path is not held to a list. */
  existingFiles?: readonly string[] | null;
  /** The files the prompt shows whole to every step of the pick. */
  shownInFull?: ReadonlySet<string>;
  /** Files the steps name that are not in the project yet. */
  newFiles?: readonly string[];
}

/**
 * The offered tools as functions, each with the step id and `step_done`. With the whole listing known, a path that
 * must exist is held to the listed files; a file shown whole is not offered for reading (a small model that may
 * read it reads rather than counts or runs); and when the steps name files not in the project yet, `write_file`
 * writes those or a file shown whole: a small model otherwise overwrites a file it copied from the listing and
 * never saw.
 */
export function pickToolsFunctions(
  tools: readonly ToolDescriptor[],
  stepIds: readonly string[],
  paths: PickPaths = {}
): OpenAIFunction[] {
  const { stepId, noSuitable } = stepIdParameters(stepIds);
  const { existingFiles: existing, shownInFull = new Set<string>(), newFiles = [] } = paths;
  const readable = existing?.filter((f) => !shownInFull.has(f));
  const offered = readable && !readable.length ? tools.filter((t) => t.qualifiedName !== READ_FILE) : tools;
  const writable = existing && newFiles.length ? [...new Set([...newFiles, ...shownInFull])] : null;
  const heldTo = (name: string) =>
    name === WRITE_FILE ? writable : name === READ_FILE ? readable : EXISTING_FILE_TOOLS.has(name) ? existing : null;
  const fns: OpenAIFunction[] = offered.map((t) => {
    const schema = { ...(t.inputSchema as { properties?: Record<string, unknown>; required?: string[] }) };
    const pathProp = schema.properties?.path as Record<string, unknown> | undefined;
    const held = heldTo(t.qualifiedName);
    if (held?.length && pathProp) schema.properties = { ...schema.properties, path: { ...pathProp, enum: [...held] } };
    return {
      type: 'function',
      function: {
        name: t.qualifiedName,
        description: t.description.slice(0, 1000),
        parameters: {
          ...schema,
          type: 'object',
          properties: { step_id: stepId, ...(schema.properties ?? {}), step_done: STEP_DONE_JSON },
          required: [
            'step_id',
            ...(schema.required ?? []).filter((r) => r !== 'step_id' && r !== 'step_done'),
            'step_done',
          ],
        },
      },
    };
  });
  fns.push({
    type: 'function',
    function: {
      name: NO_SUITABLE_TOOL,
      description: 'Say that none of the offered tools can carry out a step, and why.',
      parameters: noSuitable,
    },
  });
  return fns;
}

/** What an earlier call of the step returned, as much as a next pick needs. */
export const EARLIER_CALL_CHARS = 1500;

function earlierCallsText(calls: readonly EarlierCall[]): string {
  return calls
    .map((c, i) => {
      const text = c.text.length > EARLIER_CALL_CHARS ? `${c.text.slice(0, EARLIER_CALL_CHARS)}…` : c.text;
      return `${i + 1}. ${c.tool} ${JSON.stringify(c.args)} -> ${c.status}\n${untrusted(`result of ${c.tool}`, text)}`;
    })
    .join('\n');
}

export function pickToolsPrompt(input: PickToolsInput) {
  const steps = input.steps
    .map((s) =>
      join(
        // The step's own instruction first: it is what the call must carry out.
        `### Step ${s.id}: ${s.instruction}`,
        s.files?.length
          ? `Files it names, as they are now (no need to read them):\n${s.files
              .map((f) => `#### ${f.path}\n${untrusted(f.path, f.text)}`)
              .join('\n')}`
          : '',
        s.newFiles?.length ? `New files it names (not in the project yet): ${s.newFiles.join(', ')}` : '',
        s.earlierCalls?.length
          ? `Calls made so far for this step:\n${earlierCallsText(s.earlierCalls)}\nMake the next call this step ` +
              'still needs (write or edit a file, or run a command, say), not one made already; step_done true ' +
              'when it finishes the step.'
          : '',
        s.dependencyResults.length ? `Results it builds on:\n${resultsText(s.dependencyResults)}` : '',
        s.previousFailure ? `The previous attempt failed: ${s.previousFailure}` : ''
      )
    )
    .join('\n\n');
  return {
    node: 'pick_tools' as const,
    system: withUntrustedRule(PICK_TOOLS_SYSTEM),
    messages: [
      join(
        section("The user's request", input.request),
        sameWords(input.request, input.goal) ? '' : section('Goal', input.goal),
        filesSection(input.files),
        section('Steps', steps)
      ),
    ],
  };
}

/** The files every step of the pick is shown whole (a file only one step sees may still be read by another). */
function shownInFull(steps: readonly PickStep[]): Set<string> {
  const per = steps.map((s) => new Set((s.files ?? []).filter((f) => !isCut(f)).map((f) => f.path)));
  return new Set([...(per[0] ?? [])].filter((p) => per.every((set) => set.has(p))));
}

/** Whether two texts say the same in the same words (a goal that only restates the request adds nothing). */
const sameWords = (a: string | undefined, b: string) =>
  a !== undefined && a.toLowerCase().replace(/\W+/g, ' ').trim() === b.toLowerCase().replace(/\W+/g, ' ').trim();

export async function pickTools(
  model: ModelClient,
  input: PickToolsInput,
  tools: readonly ToolDescriptor[],
  opts: { mayAsk?: boolean } = {}
): Promise<PickToolsResult> {
  const stepIds = input.steps.map((s) => s.id);
  const byName = new Map(tools.map((t) => [t.qualifiedName, t]));
  const existing = allFiles(input.files);
  const ranked = rankTools(tools, input.steps, {
    goal: input.request ?? input.goal,
    listingComplete: existing !== null,
  });
  const answer = await model.toolCalls(
    pickToolsPrompt(input),
    pickToolsFunctions(ranked, stepIds, {
      existingFiles: existing,
      shownInFull: shownInFull(input.steps),
      newFiles: [...new Set(input.steps.flatMap((s) => s.newFiles ?? []))],
    }),
    {
      maxCalls: stepIds.length * MAX_CALLS_PER_STEP,
    }
  );
  const calls: PickedCall[] = [];
  const noSuitable: PickToolsResult['noSuitable'] = [];
  for (const call of answer.calls) {
    const args = { ...(call.args as Record<string, unknown>) };
    const stepId = typeof args.step_id === 'string' ? args.step_id : null;
    if (!stepId || !stepIds.includes(stepId)) continue;
    // Only an explicit false leaves the step open; anything else (absent, true, a string) means complete.
    const stepOpen = args.step_done === false || args.step_done === 'false';
    delete args.step_id;
    delete args.step_done;
    if (call.name === NO_SUITABLE_TOOL) {
      const parsed = noSuitableSchema(stepIds).safeParse({ step_id: stepId, reason: args.reason });
      noSuitable.push({ stepId, reason: parsed.success ? parsed.data.reason : 'no reason given' });
      continue;
    }
    const tool = byName.get(call.name);
    // A name that was not offered still goes to dispatch, where it is refused by policy and reported as such.
    const [server, ...rest] = call.name.split('__');
    calls.push({
      stepId,
      server: tool?.server ?? server,
      tool: tool?.name ?? rest.join('__'),
      qualifiedName: call.name,
      args,
      readOnly: tool?.readOnly ?? false,
      idempotent: tool?.idempotent ?? false,
      ...(stepOpen ? { stepDone: false } : {}),
    });
  }
  // A malformed answer may name several steps (a json_schema answer cut short holds every call): each step it
  // names and that got no readable call is told why, rather than that no tool was named.
  for (const bad of answer.invalid) {
    for (const [, id] of bad.args.matchAll(/"step_id"\s*:\s*"([^"]+)"/g)) {
      if (!stepIds.includes(id) || calls.some((c) => c.stepId === id) || noSuitable.some((n) => n.stepId === id))
        continue;
      noSuitable.push({ stepId: id, reason: `the tool call could not be read (${bad.name}): ${bad.error}` });
    }
  }
  // A small model's change to a file is written whole, from plain text (./file-content).
  const whole = await withWholeFileWrites(model, input.steps, calls, tools, { mayAsk: opts.mayAsk });
  const usage = whole.modelCalls
    ? { ...addUsage(answer.usage, whole.usage), modelCalls: 1 + whole.modelCalls }
    : answer.usage;
  const repairs = whole.rewritten.map((r) => ({
    stepId: r.stepId,
    repair: `${r.path}: written whole, from the content the model wrote for it in plain text`,
  }));
  return {
    calls: whole.calls,
    noSuitable,
    usage,
    ...(repairs.length ? { repairs } : {}),
    ...(whole.questions.length ? { questions: whole.questions } : {}),
  };
}

// ---------------------------------------------------------------- do_step

export interface DoStepInput {
  goal: string;
  step: Pick<PlanStep, 'id' | 'title' | 'instruction'>;
  dependencyResults: StepResultView[];
}

export const DO_STEP_SYSTEM = `You carry out one step of a plan that needs no tool: think over the results of earlier steps and write
the step's result. Be concrete and complete; write only the result.`;

export async function doStep(model: ModelClient, input: DoStepInput): Promise<{ text: string; usage: ModelUsage }> {
  const result = await model.text({
    node: 'do_step',
    system: withUntrustedRule(DO_STEP_SYSTEM),
    messages: [
      join(
        section('Goal', input.goal),
        section(`Step ${input.step.id}: ${input.step.title}`, input.step.instruction),
        section('Results of earlier steps', resultsText(input.dependencyResults))
      ),
    ],
  });
  return { ...result, text: withoutFences(result.text) };
}

// ---------------------------------------------------------------- evaluate_step

export interface EvaluateStepInput {
  goal: string;
  step: Pick<PlanStep, 'id' | 'title' | 'instruction'>;
  calls: Array<{ tool: string; status: string; text: string }>;
  attempt: number;
}

export const EVALUATE_STEP_SYSTEM = `You judge the outcome of one step whose tool reported an error. Call evaluate_step with:
- move_on when the result is good enough (or the error is the answer, e.g. "no matches"),
- retry when running the same step again is likely to work,
- replan when the plan itself must change.`;

export async function evaluateStep(model: ModelClient, input: EvaluateStepInput) {
  const calls = input.calls.map((c) => `- ${c.tool} (${c.status}):\n${untrusted(`tool ${c.tool}`, c.text)}`).join('\n');
  const { value, usage } = await model.structured(
    {
      node: 'evaluate_step',
      system: withUntrustedRule(EVALUATE_STEP_SYSTEM),
      messages: [
        join(
          section('Goal', input.goal),
          section(`Step ${input.step.id}: ${input.step.title} (attempt ${input.attempt})`, input.step.instruction),
          section('Tool calls and results', calls)
        ),
      ],
    },
    EvaluateStepOutputSchema,
    'Decide whether to move on, retry the step, or replan.'
  );
  return { ...value, usage };
}

// ---------------------------------------------------------------- compose_answer

export interface ComposeAnswerInput {
  projectDir: string;
  request: string;
  goal: string;
  results: StepResultView[];
  /** The task's tool access: a read-only task's answer says that a change asked for was not made. */
  toolAccess?: ToolAccess;
  /** The project files the request names, as they are after the work (filled in by the activity). */
  files?: NamedFile[];
}

/** What the composer is told of read-only access. */
export const READ_ONLY_NOTE =
  'This task had read-only access: no file could be changed and no command run. If the request asks for a ' +
  'change, say first that it was not made because access is read-only.';

export const COMPOSE_ANSWER_SYSTEM = `You write Klea's answer to the user from the results of the plan's steps. Answer the request directly
and briefly, in markdown, using the real values in the results (command output, file contents, counts).
- Claim only what a result shows. A step marked NOT ACHIEVED was not done: say so, with its reason.
- Mention a denied path, an error or a failed command only when a result shows one.`;

export function composeAnswerPrompt(input: ComposeAnswerInput, projectContext: string): NodePrompt {
  return {
    node: 'compose_answer',
    system: withUntrustedRule(COMPOSE_ANSWER_SYSTEM),
    messages: [
      join(
        section('Request', input.request),
        section('Project context (from the project instruction file)', projectContext),
        section('Step results', resultsText(input.results)),
        input.files?.length
          ? section(
              'Files the request names, as they are now',
              input.files.map((f) => `#### ${f.path}\n${untrusted(f.path, f.text)}`).join('\n')
            )
          : '',
        input.toolAccess === 'read_only' ? section('Access', READ_ONLY_NOTE) : ''
      ),
    ],
  };
}

export async function composeAnswer(model: ModelClient, input: ComposeAnswerInput, projectContext: string) {
  const answer = await model.text(composeAnswerPrompt(input, projectContext));
  const text = withoutLoops(withoutFences(answer.text));
  return { ...answer, text: text || resultsAnswer(input.results) };
}

/** Times one line may follow itself before it is taken for a loop. */
const LOOP_RUN = 3;

/**
 * A small model at temperature 0 can write one line again and again up to its token limit ("```markdown" 150
 * times): such a run keeps one line, and a code fence left open with nothing after it goes too.
 */
export function withoutLoops(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length;) {
    let j = i + 1;
    while (j < lines.length && lines[j] === lines[i]) j++;
    const run = j - i;
    out.push(...(lines[i].trim() && run >= LOOP_RUN ? [lines[i]] : lines.slice(i, j)));
    i = j;
  }
  while (out.length && !out[out.length - 1].trim()) out.pop();
  const fences = out.filter((l) => /^\s*```/.test(l)).length;
  if (fences % 2 === 1 && /^\s*```[\w-]*\s*$/.test(out.at(-1) ?? '')) out.pop();
  return out.join('\n').trim();
}

/** An answer from the steps' results alone, for a composer that wrote nothing usable. */
function resultsAnswer(results: readonly StepResultView[]): string {
  const line = (r: StepResultView) => {
    const first = (r.result ?? '').trim().split('\n')[0] ?? '';
    return `- ${r.title}: ${first.length > 200 ? `${first.slice(0, 199)}…` : first || r.status}`;
  };
  const achieved = results.filter((r) => !r.notAchieved);
  return achieved.length
    ? `What the steps did:\n${achieved.map(line).join('\n')}`
    : 'No step achieved its instruction.';
}

export { ZERO_USAGE };

// ---------------------------------------------------------------- summarize_memory

export const SUMMARIZE_MEMORY_SYSTEM = `You keep the running summary of a conversation between a user and Klea, a research and coding agent.
Fold the older turns below into the summary: keep facts, decisions, names, file paths, preferences and open
questions; drop pleasantries. Write only the new summary (it replaces the old one), as compact prose or bullets.`;

export async function summarizeMemory(model: ModelClient, input: SummarizeInput) {
  return model.text({
    node: 'summarize_memory',
    system: withUntrustedRule(SUMMARIZE_MEMORY_SYSTEM),
    messages: [
      join(
        section('Current summary', input.summary ? untrusted('the running summary', input.summary) : '(none yet)'),
        section('Older turns to fold in', turnsText(input.turns))
      ),
    ],
  });
}

// ---------------------------------------------------------------- init_project

export const INIT_PROJECT_SYSTEM = `You write AGENTS.md for a software or research project: the guidance an agent (or a new colleague)
needs to work in it. From the files shown, state what the project is, its layout, how to build, test, lint and
run it (exact commands), its conventions, and anything to be careful with. Only state what the files support;
say "unknown" rather than guess. Write only the markdown content of AGENTS.md.`;

export async function initProjectText(model: ModelClient, observations: string) {
  return model.text({
    node: 'init_project',
    system: withUntrustedRule(INIT_PROJECT_SYSTEM),
    messages: [untrusted('the project files', observations)],
  });
}
