/**
 * Plans (the `write_plan` node's output, docs/architecture.md §7) and their validation: unique step ids, known
 * dependencies, no cycle, review checkpoints that name real steps. Pure: used by the planner activity (as the
 * schema the model's output must satisfy, so an invalid plan is re-asked with the error) and by workflows.
 */
import { z } from 'zod';

export const StepIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,40}$/, 'step ids use letters, digits, _ and - (at most 40)');

/**
 * Every array and string a model writes is bounded: a model that starts repeating an item (at temperature 0 nothing
 * breaks the loop) goes on until it runs out of tokens, and a schema-constrained server stops it only at the bounds
 * the JSON schema carries.
 */
export const MAX_PLAN_STEPS = 500; // a long task runs hundreds of steps (its runs continue as new)

/** The longest `expect.check`: a command that long was closed by the bound, not by its writer (activities/llm/plan-checks). */
export const MAX_CHECK_CHARS = 500;

/**
 * What shows that a step worked (docs/architecture.md §7): the files it is to create or change, and a command Klea
 * runs itself in the sandbox after the step, which must exit 0. Optional; absent means no evidence is asked for
 * beyond the step's own calls.
 */
export const StepExpectSchema = z.strictObject({
  changes: z
    .array(z.string().min(1).max(500))
    .max(20)
    .optional()
    .describe('files (paths relative to the project) this step creates or changes'),
  check: z
    .string()
    .min(1)
    .max(MAX_CHECK_CHARS)
    .optional()
    .describe('a shell command that exits 0 only when the step worked: the test or script the request asks to run'),
});
export type StepExpect = z.infer<typeof StepExpectSchema>;

/** A path as the plan wrote it, as the project names it (no leading "./", no trailing "/"). */
export const plainPath = (p: string) =>
  p
    .trim()
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');

/** Whether an `expect.changes` entry names a folder (`logs/`): one made, removed or filled by the step. */
export const isFolderEntry = (p: string) => /\/\s*$/.test(p) && plainPath(p) !== '';

/** The files a step's plan says it creates or changes (its `expect.changes`), as the project names them. */
export const plannedFiles = (step: { expect?: StepExpect }): string[] =>
  (step.expect?.changes ?? [])
    .filter((c) => !isFolderEntry(c))
    .map(plainPath)
    .filter(Boolean);

/** The folders a step's plan says it creates, removes or puts files in (`expect.changes` entries ending in "/"). */
export const plannedFolders = (step: { expect?: StepExpect }): string[] =>
  (step.expect?.changes ?? []).filter(isFolderEntry).map(plainPath);

/** Whether a step's plan says it changes anything: a file or a folder. */
export const changesSomething = (step: { expect?: StepExpect }): boolean =>
  plannedFiles(step).length > 0 || plannedFolders(step).length > 0;

export const PlanStepSchema = z.strictObject({
  id: StepIdSchema.describe('short unique id, e.g. "s1"'),
  title: z.string().min(1).max(200).describe('a few words'),
  instruction: z.string().min(1).max(4000).describe('what exactly to do in this step'),
  depends_on: z.array(StepIdSchema).max(MAX_PLAN_STEPS).describe('ids of steps whose results this step needs'),
  needs_tool: z.boolean().describe('true when the step must use a tool (read files, search, run a command, write)'),
  questions: z
    .array(z.string().min(1).max(500))
    .max(5)
    .describe('questions for the user when a fact this step needs is missing; else []'),
  expect: StepExpectSchema.optional().describe(
    'what shows the step worked, when the step changes files or runs something'
  ),
});
export type PlanStep = z.infer<typeof PlanStepSchema>;

/**
 * The plan with each `expect.changes` entry that `keep` refuses left out (an `expect` left with nothing in it goes),
 * and a repair line for each step that lost one, saying `why`.
 */
export function keepPlannedChanges<P extends { steps: PlanStep[] }>(
  plan: P,
  keep: (entry: string) => boolean,
  why: string
): { plan: P; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const changes = s.expect?.changes;
    const kept = changes?.filter(keep) ?? [];
    if (!changes || kept.length === changes.length) return s;
    const gone = changes.filter((c) => !kept.includes(c));
    repairs.push(
      `step "${s.id}": expect.changes named ${gone.map((g) => JSON.stringify(g)).join(', ')}, ${why}: left out`
    );
    const { changes: _changes, ...others } = s.expect ?? {};
    return withExpect(s, kept.length ? { ...others, changes: kept } : others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/** The step with `expect` as given; an `expect` with nothing in it is left out. */
export function withExpect(step: PlanStep, expect: StepExpect): PlanStep {
  const { expect: _expect, ...rest } = step;
  return Object.keys(expect).length ? { ...rest, expect } : rest;
}

export const PlanReviewSchema = z.strictObject({
  before_work: z.boolean().describe('ask the user to approve the plan before any step runs'),
  after_step_ids: z.array(StepIdSchema).max(MAX_PLAN_STEPS).describe('pause for review after these steps finish'),
});

/** A plan's structure (no cross-step checks): the shape events and the task state carry. */
export const PlanShape = z.strictObject({
  goal: z.string().min(1).max(2000).describe('what the user wants, in one or two sentences'),
  steps: z.array(PlanStepSchema).min(1).max(MAX_PLAN_STEPS),
  review: PlanReviewSchema,
});

export type Plan = z.infer<typeof PlanShape>;

/** Problems with a plan's structure; `knownIds` are ids of earlier steps that a revised plan may depend on. */
export function planProblems(plan: Plan, knownIds: readonly string[] = []): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const s of plan.steps) {
    if (knownIds.includes(s.id))
      problems.push(`step "${s.id}" has already finished: leave it out of the new plan (later steps may depend on it)`);
    else if (ids.has(s.id))
      problems.push(`step id "${s.id}" is used more than once: give each step its own id (s1, s2, s3, ...)`);
    ids.add(s.id);
  }
  const all = new Set([...ids, ...knownIds]);
  for (const s of plan.steps) {
    for (const d of s.depends_on) {
      if (!all.has(d)) problems.push(`step "${s.id}" depends on unknown step "${d}"`);
      if (d === s.id) problems.push(`step "${s.id}" depends on itself`);
    }
  }
  for (const r of plan.review.after_step_ids)
    if (!ids.has(r)) problems.push(`review.after_step_ids names unknown step "${r}"`);
  const cycle = findCycle(plan.steps);
  if (cycle)
    problems.push(
      `the dependencies form a cycle: ${cycle.join(' -> ')}; a step may depend only on steps that come before it`
    );
  return problems;
}

function findCycle(steps: readonly PlanStep[]): string[] | null {
  const deps = new Map(steps.map((s) => [s.id, s.depends_on]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done' || !deps.has(id)) return null;
    if (state.get(id) === 'visiting') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'visiting');
    stack.push(id);
    for (const d of deps.get(id) ?? []) {
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(id, 'done');
    return null;
  };
  for (const s of steps) {
    const c = visit(s.id);
    if (c) return c;
  }
  return null;
}

/** A plan after its unambiguous mistakes were repaired, and what was repaired (told with the plan, never silent). */
export interface RepairedPlan {
  plan: Plan;
  repairs: string[];
}

/**
 * Repairs what is unambiguous in a plan, rather than asking the model again (at temperature 0, a model asked the same
 * way answers the same way): a step that repeats a finished step (same id) is dropped and the finished result kept; a
 * step that repeats an earlier one word for word (same instruction, tool need and dependencies) is dropped, its
 * dependents depending on the earlier one; a dependency on something that is no step (a tool name, say) or on the step
 * itself is dropped, as is a review checkpoint after an unknown step; a step that expects files changed or a check
 * run needs a tool, whatever `needs_tool` says; a cycle loses, of its dependencies, the one on a step listed after
 * the step that depends on it (the rule the Planner is given: a step depends only on steps that come before it, so
 * the list's order is the order it meant). What stays ambiguous (ids used twice) is left to `planProblems`. A
 * replan that only repeats finished steps leaves no step: the work is done.
 */
export function repairPlan(plan: Plan, knownIds: readonly string[] = []): RepairedPlan {
  const repairs: string[] = [];
  /** A step left out as a copy of another: its dependents depend on that one instead. */
  const sameAs = new Map<string, string>();
  const kept: PlanStep[] = [];
  for (const s of plan.steps) {
    if (knownIds.includes(s.id)) {
      repairs.push(`step "${s.id}" repeated a finished step: left out, its result kept`);
      continue;
    }
    // The same work twice (same instruction, tool need and dependencies) would run twice on the same files.
    const twin = kept.find(
      (k) =>
        k.id !== s.id &&
        k.instruction.trim() === s.instruction.trim() &&
        k.needs_tool === s.needs_tool &&
        canonicalJson([...k.depends_on].sort()) === canonicalJson([...s.depends_on].sort())
    );
    if (twin) {
      sameAs.set(s.id, twin.id);
      repairs.push(`step "${s.id}" repeated step "${twin.id}" word for word: left out`);
      continue;
    }
    kept.push(s);
  }
  const steps = kept.map((s) =>
    s.depends_on.some((d) => sameAs.has(d))
      ? { ...s, depends_on: [...new Set(s.depends_on.map((d) => sameAs.get(d) ?? d))] }
      : s
  );
  const ids = new Set([...steps.map((s) => s.id), ...knownIds]);
  const repaired = steps.map((s) => {
    const depends_on = [...new Set(s.depends_on)].filter((d) => {
      if (d === s.id) repairs.push(`step "${s.id}" depended on itself: dependency dropped`);
      else if (!ids.has(d)) repairs.push(`step "${s.id}" depended on "${d}", which is no step: dependency dropped`);
      else return true;
      return false;
    });
    const fixed = depends_on.length === s.depends_on.length ? s : { ...s, depends_on };
    // What a step is to change or run is done with a tool: a step that thinks it over changes and runs nothing.
    if (!s.needs_tool && (s.expect?.changes?.length || s.expect?.check?.trim())) {
      repairs.push(`step "${s.id}" expects files changed or a check run, which takes a tool: needs_tool set true`);
      return { ...fixed, needs_tool: true };
    }
    return fixed;
  });
  const acyclic = withoutCycles(repaired, repairs);
  const stepIds = new Set(steps.map((s) => s.id));
  const after = [...new Set(plan.review.after_step_ids.map((id) => sameAs.get(id) ?? id))].filter((id) => {
    if (stepIds.has(id)) return true;
    repairs.push(`review after "${id}", which is no step of the plan: dropped`);
    return false;
  });
  const review =
    canonicalJson(after) === canonicalJson(plan.review.after_step_ids)
      ? plan.review
      : { ...plan.review, after_step_ids: after };
  return { plan: { ...plan, steps: acyclic, review }, repairs };
}

/**
 * The steps with every cycle broken where it goes against the list's order: in each cycle, the dependency of a step
 * on one listed at or after it is dropped (a cycle always holds one). With the 0.5B model, a plan whose step that
 * finds a file and step that reads it depended on each other was asked for three times, came back so three times,
 * and the task failed before any step ran. Steps whose ids are used twice are left as they are (`planProblems`).
 */
function withoutCycles(steps: PlanStep[], repairs: string[]): PlanStep[] {
  if (new Set(steps.map((s) => s.id)).size !== steps.length) return steps;
  const order = new Map(steps.map((s, i) => [s.id, i]));
  let out = steps;
  for (let cycle = findCycle(out); cycle; cycle = findCycle(out)) {
    // The cycle is [a, b, …, a], each depending on the next.
    const at = cycle.findIndex((id, i) => i < cycle.length - 1 && order.get(cycle[i + 1]!)! >= order.get(id)!);
    if (at < 0) break;
    const [from, to] = [cycle[at]!, cycle[at + 1]!];
    repairs.push(
      `step "${from}" depended on "${to}", which comes after it (a cycle: ${cycle.join(' -> ')}): dependency dropped`
    );
    out = out.map((s) => (s.id === from ? { ...s, depends_on: s.depends_on.filter((d) => d !== to) } : s));
  }
  return out;
}

/**
 * The schema the planner's output must satisfy: its structure, repaired (`repairPlan`), then checked. A plan whose
 * repair leaves no step is refused unless it is a replan (finished steps exist).
 */
const repairedPlan = (knownIds: readonly string[], shape: z.ZodType<Plan> = PlanShape) =>
  shape
    .transform((plan) => repairPlan(plan, knownIds))
    .superRefine((r, ctx) => {
      if (!r.plan.steps.length && !knownIds.length) ctx.addIssue({ code: 'custom', message: 'the plan has no step' });
      for (const message of planProblems(r.plan, knownIds)) ctx.addIssue({ code: 'custom', message });
    });

/**
 * A small model's plan (`model.profile: small`) is held to tighter bounds, which a server that holds answers to the
 * schema enforces as it writes. Over 256 plans of the 0.5B and 1.5B models in the eval's runs, none that the model
 * finished had more than 5 steps or an instruction over 400 characters, and 3 had a check over 200; the 25 cut off
 * at the server's output limit ran on in just these (a check of regex escapes, an instruction listing values
 * without end, step after step), and the plan asked again to be shorter lost the step that changed the file.
 */
export const SMALL_PLAN_BOUNDS = { steps: 5, instruction: 400, check: 200 } as const;
const SmallPlanShape = PlanShape.extend({
  steps: z
    .array(
      PlanStepSchema.extend({
        instruction: PlanStepSchema.shape.instruction.max(SMALL_PLAN_BOUNDS.instruction),
        expect: StepExpectSchema.extend({
          check: StepExpectSchema.shape.check
            .unwrap()
            .max(SMALL_PLAN_BOUNDS.check)
            .optional()
            .describe(StepExpectSchema.shape.check.description ?? ''),
        })
          .optional()
          .describe(PlanStepSchema.shape.expect.description ?? ''),
      })
    )
    .min(1)
    .max(SMALL_PLAN_BOUNDS.steps),
});

export const PlanSchema = repairedPlan([]);
const SmallPlanSchema = repairedPlan([], SmallPlanShape);
/** A first plan shares `PlanSchema` (or its small twin), whose JSON Schema a model request converts once per worker. */
export function planSchema(knownIds: readonly string[] = [], small = false) {
  const shape = small ? SmallPlanShape : PlanShape;
  return knownIds.length ? repairedPlan(knownIds, shape) : small ? SmallPlanSchema : PlanSchema;
}

/** A short deterministic content hash (hex) of a plan, to tie review decisions to the plan they saw. */
export function planHash(plan: Plan): string {
  const text = canonicalJson(plan);
  // Two 32-bit FNV-1a lanes with different seeds: collision-resistant enough to tell plan revisions apart.
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  return h1.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0');
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export const EvaluateStepOutputSchema = z.strictObject({
  verdict: z
    .enum(['move_on', 'retry', 'replan'])
    .describe('move_on: accept the result; retry: run the step again; replan: the plan must change'),
  reason: z.string().min(1).max(1000),
});
export type EvaluateStepOutput = z.infer<typeof EvaluateStepOutputSchema>;

/**
 * Whether `s` is the only step of a task's first plan that changes anything, as a pick's step carries it:
 * `{ soleChange: true }`, or nothing. Its change is then all the request asks of the project's files, unless the task
 * is a follow-up of a session (its request, "Yes, do that.", means what the earlier turns say) or the plan is a
 * revised or new one (it says what the request does not).
 */
export function soleChangeOf(
  steps: readonly PlanStep[],
  s: PlanStep,
  task: { firstPlan: boolean; summary?: string; recentTurns?: readonly unknown[] }
): { soleChange?: true } {
  if (!task.firstPlan || task.summary || task.recentTurns?.length) return {};
  return changesSomething(s) && !steps.some((g) => g.id !== s.id && changesSomething(g)) ? { soleChange: true } : {};
}

/** How much of each turn `earlierTurnsOf` passes on. */
export const EARLIER_TURN_CHARS = 2000;

/**
 * What a session's follow-up answers, as a pick carries it: `{ earlierTurns }`, the text of the last turn of Klea's
 * before the request and the user's turn it answered (each cut to `EARLIER_TURN_CHARS`), or nothing for a task with no
 * earlier turns. "Yes, do that." names no file; the turn that offered the change does.
 */
export function earlierTurnsOf(turns: ReadonlyArray<{ role: 'user' | 'assistant'; text: string }> | undefined): {
  earlierTurns?: string[];
} {
  const last = turns ? turns.map((t) => t.role).lastIndexOf('assistant') : -1;
  if (!turns || last < 0) return {};
  const asked = last > 0 && turns[last - 1].role === 'user' ? [turns[last - 1]] : [];
  return { earlierTurns: [...asked, turns[last]].map((t) => t.text.slice(0, EARLIER_TURN_CHARS)) };
}

/**
 * The checks of the steps that depend on `s` (their plans' `expect.check`), what is to pass once `s` is done, as a
 * pick's step carries them: `{ laterChecks }`, or nothing when there are none.
 */
export function laterChecksOf(steps: readonly PlanStep[], s: PlanStep): { laterChecks?: string[] } {
  const later = steps.filter((g) => g.depends_on.includes(s.id)).flatMap((g) => g.expect?.check?.trim() || []);
  return later.length ? { laterChecks: later } : {};
}
