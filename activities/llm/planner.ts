/**
 * The Planner (`write_plan`, docs/architecture.md §7): the goal and a dependency graph of steps, for every model
 * alike. What the Planner writes is taken as written; a plan that copies the example of its instructions instead of
 * planning the request is asked again afresh, with the example left out (never patched over). A small model's plan
 * gets the help of ./plan-files and ./asked-changes with the files it is to change.
 */
import type { ToolAccess } from '../../common/config';
import { parentFolders } from '../../common/posix-path';
import { addUsage, ZERO_USAGE, type MeteredUsage } from '../../common/model-protocol';
import {
  isFolderEntry,
  keepPlannedChanges,
  MAX_CHECK_CHARS,
  plainPath,
  planSchema,
  SMALL_PLAN_BOUNDS,
  withExpect,
  type Plan,
} from '../../common/plan';
import type { StepResultView, Turn } from '../../common/task';
import type { ToolDescriptor } from '../../common/tools';
import type { ModelClient } from './model';
import type { ProjectListing } from '../project/listing';
import { keepAskedChanges, wantedChanges } from './asked-changes';
import {
  changesForFailedCheck,
  checksAfterChanges,
  followUpSteps,
  requestedNewFiles,
  sameFileSteps,
  thinkingSteps,
  unnamedChanges,
  valuesAsChanges,
} from './plan-files';
import { movesOfOtherKinds } from './move-commands';
import { exampleChecks } from './example-checks';
import { expectsNote, withoutPlanNotes } from './plan-notes';
import {
  boundedChecks,
  checkPaths,
  checkRunners,
  changingChecks,
  dataChecks,
  inlineChecks,
  pipedChecks,
  testChecks,
} from './plan-checks';
import { definedSection, filesSection, join, resultsText, section } from './prompt-text';
import { WRITE_FILE } from './small-model';
import { turnsText, untrusted, withUntrustedRule } from './untrusted';

export interface WritePlanInput {
  projectDir: string;
  toolAccess: ToolAccess;
  request: string;
  summary?: string;
  recentTurns?: Turn[];
  /** For a revision or a replan: the plan being replaced, and why. */
  previousPlan?: Plan;
  feedback?: string;
  /** Whose the feedback is: the user's (a revision, the default) or Klea's own (a replan after a failed step). */
  feedbackFrom?: 'user' | 'replan';
  /** For a replan after a step's check failed: that check (a new plan that changes nothing cannot make it pass). */
  failedCheck?: string;
  /** With `failedCheck`: the files the task's steps have changed so far. */
  changedFiles?: string[];
  /** Steps already finished (a replan keeps them); the new plan may depend on their ids. */
  finished?: StepResultView[];
  /** The project's listing (filled in by the activity). */
  listing?: ProjectListing;
  /** Where the names of code the request mentions are defined (../project/definitions; filled in by the activity). */
  defined?: string[];
}

/** The example the instructions show: a request from another project, and its plan. */
const EXAMPLE_REQUEST = 'Rename the column qty to quantity in orders.csv and report.py, then run report.py.';
const EXAMPLE_PLAN: Plan = {
  goal: 'Rename qty to quantity in orders.csv and report.py, and check that report.py still runs.',
  steps: [
    {
      id: 's1',
      title: 'Rename in orders.csv',
      instruction: 'In orders.csv, rename the column qty to quantity.',
      depends_on: [],
      needs_tool: true,
      questions: [],
      expect: { changes: ['orders.csv'] },
    },
    {
      id: 's2',
      title: 'Rename in report.py',
      instruction: 'In report.py, rename every use of the column qty to quantity.',
      depends_on: [],
      needs_tool: true,
      questions: [],
      expect: { changes: ['report.py'] },
    },
    {
      id: 's3',
      title: 'Run report.py',
      instruction: 'Run report.py and report what it prints.',
      depends_on: ['s1', 's2'],
      needs_tool: true,
      questions: [],
      expect: { check: 'python3 report.py' },
    },
  ],
  review: { before_work: false, after_step_ids: [] },
};

const WRITE_PLAN_RULES = `You are the Planner of Klea, a coding agent. You write the plan for the user's request and call the
function write_plan with it. You never answer the request yourself.
- goal: what the user wants, in one sentence.
- steps: the work as a dependency graph. A step is one job (find, read, change, create, delete, run); it may
  make several tool calls. Separate jobs get separate steps. A step that needs another step's result lists it in
  depends_on; steps that do not need each other do not depend on each other.
- instruction: exactly what the step does, with the file names, names, values and commands the request gives.
- expect, for a step that changes files or runs something: "changes" lists the files it creates, changes or
  deletes; "check" is a shell command that exits 0 only if the step worked (the test or script the request asks
  to run). Leave expect out for a step that only reads or searches.
- questions: [] unless the step needs a fact only the user knows (their own name, a secret, a choice of theirs).
- needs_tool: false only for a step that just thinks over the results of the steps it depends on.
- review: before_work false and after_step_ids [] unless the request asks to review the plan or results.
- A new plan after a failed step still does what the request asks: plan only what is left, another way.`;

export const WRITE_PLAN_SYSTEM = `${WRITE_PLAN_RULES}

Example, from another project. Request: "${EXAMPLE_REQUEST}"
${JSON.stringify(EXAMPLE_PLAN)}`;

/** File names of the example (orders.csv, report.py): a plan that names one the task never did copied it. */
const EXAMPLE_MARKS = [...new Set(EXAMPLE_REQUEST.match(/[\w-]+\.[A-Za-z]\w{0,7}\b/g) ?? [])];

/**
 * What the plan took from the instructions' example rather than from the task: an example file name that no text
 * of the task holds (the request, the conversation, the listing, the project context, the earlier plan and
 * results). Null when it took nothing.
 */
export function copiedFromExample(plan: Plan, taskText: string): string | null {
  const planText = JSON.stringify(plan);
  const copied = EXAMPLE_MARKS.filter((m) => planText.includes(m) && !taskText.includes(m));
  return copied.length
    ? `the plan names ${copied.join(', ')}, from the example in the instructions, not from this request: ` +
        'write the plan for the request itself, with the files of this project'
    : null;
}

/**
 * What the Planner is told of the tools: only what differs from the usual (the workspace server with write
 * access). A catalogue of tools would become a plan of tool names; the pick sees the tools themselves.
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

/**
 * The Planner's prompt; `withExample: false` leaves out the example plan, for asking afresh after a plan copied it
 * (asked again with the example and its own copy in view, a small model copies it again).
 */
export function writePlanPrompt(
  input: WritePlanInput,
  tools: readonly ToolDescriptor[],
  projectContext: string,
  withExample = true
) {
  const toolList = toolAbilities(tools);
  const turns = input.recentTurns && turnsText(input.recentTurns);
  const user = join(
    section('Request', input.request),
    section('Project context (from the project instruction file)', projectContext),
    section('Summary of the earlier conversation', input.summary && untrusted('the running summary', input.summary)),
    section('Recent conversation', turns),
    filesSection(input.listing?.text),
    definedSection(input.defined),
    toolList ? section('Tools', toolList) : '',
    input.previousPlan ? section('Previous plan', previousPlanText(input.previousPlan, input.feedbackFrom)) : '',
    input.finished?.length
      ? section('Steps already finished (leave them out; you may depend on their ids)', resultsText(input.finished))
      : '',
    input.feedback
      ? section(
          input.feedbackFrom === 'replan' ? 'Why the plan must change' : "The user's feedback on the previous plan",
          input.feedback
        )
      : '',
    input.previousPlan ? 'The new plan does what the request above asks.' : ''
  );
  const system = withUntrustedRule(withExample ? WRITE_PLAN_SYSTEM : WRITE_PLAN_RULES);
  return { node: 'write_plan' as const, system, messages: [user] };
}

/**
 * The plan a revision or a replan replaces. The user revises the plan as they saw it (its JSON); a replan is shown
 * Klea's own plan as a list of its steps: shown the JSON, a small model answered with it again, word for word.
 */
function previousPlanText(plan: Plan, from: WritePlanInput['feedbackFrom']): string {
  if (from !== 'replan') return JSON.stringify(plan, null, 2);
  return [
    `Goal: ${plan.goal}`,
    ...plan.steps.map((s) => `- ${s.id}: ${s.instruction}${expectsNote(s) ? ` (${expectsNote(s)})` : ''}`),
  ].join('\n');
}

/** Everything of the task the Planner was shown, for `copiedFromExample`. */
function taskText(input: WritePlanInput, projectContext: string): string {
  return [
    input.request,
    input.summary ?? '',
    ...(input.recentTurns ?? []).map((t) => t.text),
    input.listing?.text ?? '',
    ...(input.defined ?? []),
    projectContext,
    input.previousPlan ? JSON.stringify(input.previousPlan) : '',
    ...(input.finished ?? []).map((f) => `${f.title} ${f.instruction ?? ''} ${f.result ?? ''}`),
    input.feedback ?? '',
  ].join('\n');
}

/** A path as a step's `expect.changes` may name it: a file of the project, or a file name (a new file). */
const FILE_NAME = /^(?:\.\/)?(?:[\w.-]+\/)*(?:[\w-]+\.[A-Za-z]\w{0,7}|\.[A-Za-z][\w.-]*)$/;

/** A folder as a step's `expect.changes` may name it: a path ending in "/" (`logs/`, `src/utils/`). */
const FOLDER_NAME = /^(?:\.\/)?(?:(?!\.\.?\/)[\w.-]+\/)+$/;

/** A folder a text names with its "/" (`logs/`, `src/utils/`), between spaces, quotes or brackets. */
const FOLDER_IN_TEXT = /(?<![\w./-])((?:[\w.-]+\/)+)(?=[\s`'"),;:!?]|\.(?:\s|$)|$)/g;

/**
 * The plan with each `expect.changes` entry that names neither a file (of the listing, or a file name) nor a folder
 * (a folder of the listing, or a path ending in "/") left out: a value such as "5432" could never change, and its
 * step would be judged not done whatever it did. A folder named without its "/" is written with it, so it is judged
 * as a folder (something made, removed or changed in it), not as a file: a folder of the listing, one the plan puts
 * files in, or one the request names with its "/" (a small model planned the folder a request named with its "/"
 * as a bare name in `changes`, which was dropped, and its step then wrote a file where the folder was to be).
 */
export function fileChangesOnly(
  plan: Plan,
  listed: readonly string[],
  request = ''
): { plan: Plan; repairs: string[] } {
  const known = new Set(listed);
  const parents = (f: string) => parentFolders(plainPath(f));
  const folders = new Set([
    ...listed.flatMap(parents),
    ...plan.steps.flatMap((s) => s.expect?.changes ?? []).flatMap(parents),
    ...[...request.matchAll(FOLDER_IN_TEXT)].map((m) => plainPath(m[1]).replace(/\/+$/, '')),
  ]);
  const asFolder = (c: string) =>
    !isFolderEntry(c) && !known.has(plainPath(c)) && folders.has(plainPath(c)) ? `${plainPath(c)}/` : c;
  const steps = plan.steps.map((s) =>
    s.expect?.changes?.some((c) => asFolder(c) !== c)
      ? withExpect(s, { ...s.expect, changes: s.expect.changes.map(asFolder) })
      : s
  );
  return keepPlannedChanges(
    { ...plan, steps },
    (c) => known.has(c.replace(/^\.\//, '')) || FILE_NAME.test(c.trim()) || FOLDER_NAME.test(c.trim()),
    'no file'
  );
}

export async function writePlan(
  model: ModelClient,
  input: WritePlanInput,
  tools: readonly ToolDescriptor[],
  projectContext: string
): Promise<{ plan: Plan; usage: MeteredUsage; repairs?: string[] }> {
  const knownIds = input.finished?.map((f) => f.id) ?? [];
  const shown = taskText(input, projectContext);
  // A small model's plan is held to tighter bounds (common/plan.ts, `SMALL_PLAN_BOUNDS`).
  const bounds = model.profile === 'small' ? SMALL_PLAN_BOUNDS : null;
  const { value, usage } = await model.structured(
    writePlanPrompt(input, tools, projectContext),
    planSchema(knownIds, bounds !== null),
    'Record the plan: the goal, the steps as a dependency graph, and where the user should review.',
    {
      check: (v) => copiedFromExample(v.plan, shown),
      // A plan that copied the example is asked again without it.
      afresh: writePlanPrompt(input, tools, projectContext, false),
    }
  );
  // A new plan after a failure is shown the failed one with Klea's notes on its steps (`previousPlanText`).
  const noted =
    input.previousPlan && input.feedbackFrom === 'replan'
      ? withoutPlanNotes(value.plan, input.previousPlan)
      : { plan: value.plan, repairs: [] };
  const bounded = boundedChecks(noted.plan, bounds?.check ?? MAX_CHECK_CHARS);
  const checked = fileChangesOnly(bounded.plan, input.listing?.files ?? [], input.request);
  const files = input.listing?.complete ? input.listing.files : null;
  const small = model.profile === 'small' && files;
  // A small model's plan creates the new files the request names, changes only files some text of the task names
  // (./plan-files) and, for a question, only those the request asks to change (./asked-changes). It changes each
  // file in one step, and runs a check only once the change it checks is made (./plan-files). A new plan after a
  // failed check changes something before it runs the check again.
  const changing = small ? changingChecks(checked.plan, files) : { plan: checked.plan, repairs: [] };
  const inline = small ? inlineChecks(changing.plan, files) : { plan: changing.plan, repairs: [] };
  const fixing =
    small && input.failedCheck
      ? changesForFailedCheck(inline.plan, input.failedCheck, input.request, files, input.changedFiles)
      : { plan: inline.plan, repairs: [] };
  const valued = small
    ? valuesAsChanges(bounded.plan, fixing.plan, input.request, files)
    : { plan: fixing.plan, repairs: [] };
  const requested = small ? requestedNewFiles(valued.plan, input.request, files) : { plan: valued.plan, repairs: [] };
  const named = small ? unnamedChanges(requested.plan, input.request, files) : { plan: requested.plan, repairs: [] };
  const kinds = small ? movesOfOtherKinds(named.plan, input.request, files) : { plan: named.plan, repairs: [] };
  const asked = small
    ? await keepAskedChanges(model, input.request, kinds.plan, files)
    : { plan: named.plan, usage: ZERO_USAGE, modelCalls: 0, repairs: [], notAsked: [] };
  const joined = small ? sameFileSteps(asked.plan) : { plan: asked.plan, repairs: [] };
  const tested = small ? testChecks(joined.plan, files) : { plan: joined.plan, repairs: [] };
  const awaited = small ? checksAfterChanges(tested.plan) : { plan: tested.plan, repairs: [] };
  const reading = small ? dataChecks(awaited.plan, files) : { plan: awaited.plan, repairs: [] };
  const running = small ? pipedChecks(reading.plan) : { plan: reading.plan, repairs: [] };
  const following = small ? followUpSteps(running.plan, files) : { plan: running.plan, repairs: [] };
  const thinking = small ? thinkingSteps(following.plan, files) : { plan: following.plan, repairs: [] };
  const pathed = small ? checkPaths(thinking.plan, files) : { plan: thinking.plan, repairs: [] };
  const runners = small ? checkRunners(pathed.plan, files) : { plan: pathed.plan, repairs: [] };
  const examples = small ? exampleChecks(runners.plan, input.request, files) : { plan: runners.plan, repairs: [] };
  const repairs = [
    ...value.repairs,
    ...noted.repairs,
    ...bounded.repairs,
    ...checked.repairs,
    ...changing.repairs,
    ...inline.repairs,
    ...fixing.repairs,
    ...valued.repairs,
    ...requested.repairs,
    ...named.repairs,
    ...kinds.repairs,
    ...asked.repairs,
    ...joined.repairs,
    ...tested.repairs,
    ...awaited.repairs,
    ...reading.repairs,
    ...running.repairs,
    ...following.repairs,
    ...thinking.repairs,
    ...pathed.repairs,
    ...runners.repairs,
    ...examples.repairs,
  ];
  let spent: MeteredUsage = asked.modelCalls
    ? { ...addUsage(usage, asked.usage), modelCalls: 1 + asked.modelCalls }
    : usage;
  const spend = (more: MeteredUsage) => {
    spent = { ...addUsage(spent, more), modelCalls: (spent.modelCalls ?? 1) + (more.modelCalls ?? 1) };
  };
  // A first plan that changes nothing, for a request whose files the user wants changed (./asked-changes), is asked
  // for once more, with the reason: a small Planner planned rewriting a document as reading it.
  const wanted =
    small && !input.previousPlan && tools.some((t) => t.qualifiedName === WRITE_FILE)
      ? await wantedChanges(model, input.request, examples.plan, files, asked.notAsked)
      : null;
  if (wanted?.modelCalls) spend({ ...wanted.usage, modelCalls: wanted.modelCalls });
  if (!wanted?.files.length) return { plan: examples.plan, usage: spent, ...(repairs.length ? { repairs } : {}) };
  const list = wanted.files.join(', ');
  const again = await writePlan(
    model,
    {
      ...input,
      previousPlan: examples.plan,
      feedbackFrom: 'replan',
      feedback:
        `The request asks to change ${list}, and no step of this plan changes anything: plan the change itself, ` +
        `with ${list} in the expect.changes of the step that makes it.`,
    },
    tools,
    projectContext
  );
  spend(again.usage);
  const why = `the plan changed nothing, though the request wants ${list} changed: planned again`;
  return { plan: again.plan, usage: spent, repairs: [...repairs, why, ...(again.repairs ?? [])] };
}
