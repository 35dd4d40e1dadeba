/**
 * Klea's notes on the steps of a plan that failed, as a new plan's Planner is shown them, and a new plan with the
 * notes it copied left out of its steps' words.
 */
import type { Plan, PlanStep } from '../../common/plan';

/** What a step was to change and run, as the Planner is shown a failed plan's steps: "changes a.py; check `x`". */
export function expectsNote(step: PlanStep): string {
  return [
    step.expect?.changes?.length ? `changes ${step.expect.changes.join(', ')}` : '',
    step.expect?.check ? `check \`${step.expect.check}\`` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/**
 * The plan with each of Klea's notes on the previous plan's steps (` (changes …)`, as `expectsNote` writes them)
 * left out of its steps' titles and instructions, where the Planner copied it: a small model copied the notes into
 * about two new plans in five, a note now and then twice over, and a step's instruction then told its pick to run the
 * failed plan's check. What a step is to change and run is its `expect`, which the notes were made from. A title or
 * instruction that is nothing but notes stays as it is.
 */
export function withoutPlanNotes(plan: Plan, previous: Plan): { plan: Plan; repairs: string[] } {
  const notes = [...new Set(previous.steps.map(expectsNote).filter(Boolean))].map((n) => ` (${n})`);
  const strip = (text: string) => {
    const out = notes.reduce((t, n) => t.split(n).join(''), text).trim();
    return out || text;
  };
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const title = strip(s.title);
    const instruction = strip(s.instruction);
    if (title === s.title && instruction === s.instruction) return s;
    repairs.push(`step "${s.id}": Klea's notes on the previous plan, copied into its words, left out`);
    return { ...s, title, instruction };
  });
  return { plan: { ...plan, steps }, repairs };
}
