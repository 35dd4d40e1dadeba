/**
 * The pick_tools node (docs/architecture.md §7): the tool calls that carry out a batch's steps, one model call for
 * all of them, with the small profile's planned calls (./small-model.ts) and whole-file writes (./file-content.ts).
 */
import { z } from 'zod';
import type { ToolAccess } from '../../common/config';
import type { PickRepair } from '../../common/first-pick';
import { addUsage, ZERO_USAGE, type MeteredUsage } from '../../common/model-protocol';
import { plannedFiles, type StepExpect } from '../../common/plan';
import type { StepResultView } from '../../common/task';
import type { PickedCall, ToolDescriptor } from '../../common/tools';
import type { ProjectListing } from '../project/listing';
import { withWholeFileWrites, type FileQuestion } from './file-content';
import { foldersNotFiles } from './folder-writes';
import { writesForFailure } from './repair-writes';
import { reproducesFirst } from './reproduce';
import type { ModelClient } from './model';
import { isWhole, type NamedFile } from './named-files';
import { copiesForWrites } from './copy-writes';
import { movesForCommands } from './move-commands';
import { computingSteps, programCalls } from './program';
import { NO_SUITABLE_TOOL, pickToolsPrompt } from './pick-prompt';
import {
  checksFirst,
  isQuestion,
  narrowPaths,
  READ_FILE,
  readsBeforeBlindWrites,
  readsFirst,
  suggestedTools,
  writesForNewFiles,
  writesForUnchanged,
} from './small-model';
import { jsonSchemaOf, type OpenAIFunction } from './structured-output';

export interface PickStep {
  id: string;
  title: string;
  instruction: string;
  dependencyResults: StepResultView[];
  /** What the steps it depends on were to do (their instructions), for the small profile's programs (./program). */
  builtOn?: string[];
  /** Why the previous attempt failed, when this is a retry. */
  previousFailure?: string;
  /** The calls this attempt of the step has made so far, with what they returned (a step left open). */
  earlierCalls?: EarlierCall[];
  /** The project files the step's instruction names, as they are now (filled in by the activity). */
  files?: NamedFile[];
  /** Files the step's instruction names that are not in the project yet (filled in by the activity). */
  newFiles?: string[];
  /** Files of the project the step's instruction names that `files` does not hold whole (filled in by the activity). */
  unshown?: string[];
  /**
   * For a step that names no file of the project: the data files the steps it builds on name, as they are now (filled
   * in by the activity, under the small profile: ./program).
   */
  sources?: NamedFile[];
  /**
   * For a step that creates a file and names no file of the project: the files the user's request names, as they are
   * now (the code a new test tests, the data a new script reads), for its whole-file write to read (filled in by the
   * activity, under the small profile: ./file-content).
   */
  requestFiles?: NamedFile[];
  /** What shows the step worked (the plan's `expect`). */
  expect?: StepExpect;
  /** The checks of the steps that depend on this one (their `expect.check`): what is to pass once it is done. */
  laterChecks?: string[];
  /**
   * The first plan's only step that changes files (`soleChangeOf`), without the user's answers, in a task that is no
   * follow-up of a session: a small model's whole-file write is told the request, not the Planner's rewording of it
   * (./file-content).
   */
  soleChange?: boolean;
  /** For a repair round: what the evidence shows is not done yet (workflows/task/evidence.ts). */
  notDone?: string;
  /** For a repair round, and the first pick made with the plan: the files of `expect.changes` not changed yet. */
  unchanged?: string[];
  /** The tools its plan says it needs, likeliest first (the small profile's `suggestedTools`). */
  suggested?: string[];
  /** For a repair round: the files the task's finished steps changed (./repair-writes). */
  taskChanged?: string[];
}

/** A call a step already made, as the next pick of the same step sees it. */
export interface EarlierCall {
  tool: string;
  args: Record<string, unknown>;
  status: string;
  text: string;
  /** The project files it created, changed or deleted, as the workspace server reported them. */
  changed?: string[];
}

export interface PickToolsInput {
  projectDir: string;
  toolAccess: ToolAccess;
  /** The user's request in their own words (a small Planner's goal and steps may lose what it asks). */
  request?: string;
  /**
   * In a session's follow-up, Klea's last turn before the request and the user's turn it answered (`earlierTurnsOf`):
   * what the request refers to ("Yes, do that." names no file; the turn that offered the change does).
   */
  earlierTurns?: string[];
  goal: string;
  steps: PickStep[];
  /** The project's listing (filled in by the activity). */
  listing?: ProjectListing;
  /**
   * The steps have made no call yet, so a fact only the user knows can still be asked before they do (`questions`
   * in the result; the workflow asks, then picks the step again).
   */
  mayAsk?: boolean;
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

/**
 * Bounds one pick_tools answer under json_schema: one call per step. A small model held to a list of calls
 * fills it, copying the offered tools one after another; a step that needs more calls leaves itself open
 * (`step_done: false`) and is picked again with what its call returned.
 */
export const MAX_CALLS_PER_STEP = 1;

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

/**
 * The offered tools as functions, each with the step id and `step_done`, plus `no_suitable_tool`: every tool with
 * its own schema (the small profile narrows paths afterwards: ./small-model).
 */
export function pickToolsFunctions(tools: readonly ToolDescriptor[], stepIds: readonly string[]): OpenAIFunction[] {
  const { stepId, noSuitable } = stepIdParameters(stepIds);
  const fns: OpenAIFunction[] = tools.map((t) => {
    const schema = t.inputSchema as { properties?: Record<string, unknown>; required?: string[] };
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

/** The files every step of the pick is shown whole (a file only one step sees may still be read by another). */
function shownInFull(steps: readonly PickStep[]): Set<string> {
  const per = steps.map((s) => new Set((s.files ?? []).filter(isWhole).map((f) => f.path)));
  return new Set([...(per[0] ?? [])].filter((p) => per.every((set) => set.has(p))));
}

export async function pickTools(
  model: ModelClient,
  input: PickToolsInput,
  tools: readonly ToolDescriptor[],
  opts: { mayAsk?: boolean } = {}
): Promise<PickToolsResult> {
  if (model.profile !== 'small') return modelPick(model, input, tools, opts);
  // A small model's steps that only run a check, or only create files, make that call without a pick
  // (./small-model); a step whose write got no content, and every other step, is picked by the model as usual.
  // A step that works something out of data files runs a program the model writes for it (./program).
  const programs = await programCalls(
    model,
    input.request ?? input.goal,
    computingSteps(input.steps, isQuestion(input.request ?? '')),
    tools
  );
  const computed = new Set(programs.calls.map((c) => c.stepId));
  const others = input.steps.filter((s) => !computed.has(s.id));
  const reproducing = reproducesFirst(tools, others, input.listing?.complete ? input.listing.files : null);
  const checks = [...checksFirst(tools, others), ...readsFirst(tools, others), ...reproducing];
  const creating = input.listing?.complete ? writesForNewFiles(others, input.listing.files) : [];
  const written = await withWholeFileWrites(model, others, [...checks, ...creating], tools, {
    mayAsk: opts.mayAsk,
    request: input.request,
  });
  const planned = {
    ...written,
    calls: [...programs.calls, ...written.calls],
    usage: addUsage(programs.usage, written.usage),
    modelCalls: programs.modelCalls + written.modelCalls,
  };
  const covered = new Set([...planned.calls, ...planned.questions].map((c) => c.stepId));
  if (!covered.size && !planned.modelCalls) return modelPick(model, input, tools, opts);
  const rest = input.steps.filter((s) => !covered.has(s.id));
  const picked: PickToolsResult = rest.length
    ? await modelPick(model, { ...input, steps: rest }, tools, opts)
    : { calls: [], noSuitable: [], usage: { ...ZERO_USAGE, modelCalls: 0 } };
  const repairs = [
    ...programs.calls.map((c) => ({
      stepId: c.stepId,
      repair: 'worked out by a program the model wrote, run with python3',
    })),
    ...checks.map((c) => ({
      stepId: c.stepId,
      repair:
        c.qualifiedName === READ_FILE
          ? `${String(c.args.path)}: read first, named by the step and shown to no prompt`
          : reproducing.includes(c)
            ? `\`${String(c.args.command)}\`: run first, to see what is to pass once the step is done`
            : `\`${String(c.args.command)}\`: run first, the step's check`,
    })),
    ...planned.rewritten.map((r) => ({
      stepId: r.stepId,
      repair: `${r.path}: written whole, as the plan names it${importsAdded(r.imports)}`,
    })),
    ...(picked.repairs ?? []),
  ];
  const questions = [...planned.questions, ...(picked.questions ?? [])];
  return {
    calls: [...planned.calls, ...picked.calls],
    noSuitable: picked.noSuitable,
    usage: {
      ...addUsage(planned.usage, picked.usage),
      modelCalls: planned.modelCalls + (picked.usage.modelCalls ?? 1),
    },
    ...(repairs.length ? { repairs } : {}),
    ...(questions.length ? { questions } : {}),
  };
}

/** The model's pick for the steps, with the small profile's narrowing and whole-file writes. */
async function modelPick(
  model: ModelClient,
  input: PickToolsInput,
  tools: readonly ToolDescriptor[],
  opts: { mayAsk?: boolean }
): Promise<PickToolsResult> {
  const stepIds = input.steps.map((s) => s.id);
  const byName = new Map(tools.map((t) => [t.qualifiedName, t]));
  const small = model.profile === 'small';
  const existing = input.listing?.complete ? input.listing.files : null;
  const fns = pickToolsFunctions(tools, stepIds);
  const steps = small ? input.steps.map((s) => ({ ...s, suggested: suggestedTools(tools, s, existing) })) : input.steps;
  const answer = await model.toolCalls(
    pickToolsPrompt({ ...input, steps }, { small }),
    small
      ? narrowPaths(fns, {
          existingFiles: existing,
          shownInFull: shownInFull(input.steps),
          newFiles: [...new Set(input.steps.flatMap((s) => s.newFiles ?? []))],
          planned: [...new Set(input.steps.flatMap((s) => plannedFiles(s)))],
        })
      : fns,
    { maxCalls: stepIds.length * MAX_CALLS_PER_STEP }
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
  // A small model's change to a file is written whole, from plain text (./file-content); in a repair round or the
  // first pick, a file the step's plan names that is still unchanged is written when the model's pick changes nothing,
  // and in a repair round after a failure, the file it is in (./repair-writes).
  // A write aimed at a folder the plan names makes the folder instead.
  // A file a step copies or moves is copied by a command, never written anew (./copy-writes), and a command that
  // moves the wrong files moves those the plan does (./move-commands).
  const folders = small ? foldersNotFiles(input.steps, calls, tools) : { calls, repairs: [] };
  const moves = small ? movesForCommands(input.steps, folders.calls, existing, input.request) : folders;
  const copies = small
    ? copiesForWrites(
        input.steps,
        writesForFailure(input.steps, writesForUnchanged(input.steps, moves.calls, input.request, input.earlierTurns)),
        tools,
        existing
      )
    : { calls: folders.calls, repairs: [] };
  const whole = small
    ? await withWholeFileWrites(model, input.steps, copies.calls, tools, {
        mayAsk: opts.mayAsk,
        request: input.request,
      })
    : { calls, usage: ZERO_USAGE, modelCalls: 0, rewritten: [], questions: [] };
  const usage = whole.modelCalls
    ? { ...addUsage(answer.usage, whole.usage), modelCalls: 1 + whole.modelCalls }
    : answer.usage;
  // Nor does it write over a file it has not seen.
  const seen = small
    ? readsBeforeBlindWrites(input.steps, whole.calls, tools, existing)
    : { calls: whole.calls, repairs: [] };
  const repairs = [
    ...folders.repairs,
    ...(small ? moves.repairs : []),
    ...copies.repairs,
    ...whole.rewritten.map((r) => ({
      stepId: r.stepId,
      repair: `${r.path}: written whole, from the content the model wrote for it in plain text${importsAdded(r.imports)}`,
    })),
    ...seen.repairs,
  ];
  return {
    calls: seen.calls,
    noSuitable,
    usage,
    ...(repairs.length ? { repairs } : {}),
    ...(whole.questions.length ? { questions: whole.questions } : {}),
  };
}

/** The import lines Klea added to a file written whole (./python-imports), for its repair line. */
const importsAdded = (lines?: string[]) =>
  lines?.length ? `, with the imports it left out: ${lines.map((l) => `\`${l}\``).join(', ')}` : '';
