/**
 * What a revised plan changed (pure): the `diff` on the `plan` and `review_requested` events of a revised plan
 * (docs/architecture.md §8), against the plan the user reviewed before it. Steps are matched by id: new ids are added,
 * missing ids removed, and a step whose title, instruction, dependencies, tool need, questions or expected evidence differ is changed.
 */
import { z } from 'zod';
import type { Plan, PlanStep } from './plan';

export const PLAN_STEP_FIELDS = ['title', 'instruction', 'depends_on', 'needs_tool', 'questions', 'expect'] as const;
export type PlanStepField = (typeof PLAN_STEP_FIELDS)[number];

export const PlanDiffSchema = z.object({
  added: z.array(z.string()).describe('ids of steps the revised plan adds'),
  removed: z.array(z.string()).describe('ids of steps the revised plan drops'),
  changed: z
    .array(z.object({ stepId: z.string(), fields: z.array(z.enum(PLAN_STEP_FIELDS)) }))
    .describe('steps kept under the same id whose fields differ'),
  goalChanged: z.boolean().optional().describe('whether the goal differs'),
});
export type PlanDiff = z.infer<typeof PlanDiffSchema>;

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export function planDiff(before: Plan, after: Plan): PlanDiff {
  const old = new Map(before.steps.map((s) => [s.id, s] as const));
  const next = new Set(after.steps.map((s) => s.id));
  const added: string[] = [];
  const changed: PlanDiff['changed'] = [];
  for (const s of after.steps) {
    const prev: PlanStep | undefined = old.get(s.id);
    if (!prev) {
      added.push(s.id);
      continue;
    }
    const fields = PLAN_STEP_FIELDS.filter((f) => !same(prev[f], s[f]));
    if (fields.length) changed.push({ stepId: s.id, fields });
  }
  const removed = before.steps.filter((s) => !next.has(s.id)).map((s) => s.id);
  return { added, removed, changed, goalChanged: before.goal !== after.goal };
}
