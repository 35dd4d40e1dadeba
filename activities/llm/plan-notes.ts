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
 * instruction that is nothing but notes stays as it is. A copy that ends the text cut short (by the schema's bound on
 * an instruction's length, or the output limit), its quotes swapped or not, is left out too.
 */
export function withoutPlanNotes(plan: Plan, previous: Plan): { plan: Plan; repairs: string[] } {
  const notes = [...new Set(previous.steps.map(expectsNote).filter(Boolean))].map((n) => ` (${n})`);
  const strip = (text: string) => {
    const out = withoutCutCopy(
      notes.reduce((t, n) => t.split(n).join(''), text),
      notes
    ).trim();
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

/** How much of a note a copy cut short must hold to count as one: more than ` (changes ` or ` (check \`` alone. */
const CUT_COPY_MIN = 12;

/**
 * `text` without a copy of one of `notes` that runs to its end cut short, `"` and `'` taken as one: with the 1.5B
 * model, a replan's instruction copied a note whose check was JSON in JavaScript, with its double quotes turned
 * single, and broke off inside it; another ran into the bound on an instruction's length in the middle of a check.
 */
function withoutCutCopy(text: string, notes: readonly string[]): string {
  const same = (t: string) => t.replace(/"/g, "'");
  const body = same(text);
  for (const note of notes.map(same)) {
    if (note.length <= CUT_COPY_MIN) continue;
    const start = note.slice(0, CUT_COPY_MIN);
    for (let at = body.indexOf(start); at >= 0; at = body.indexOf(start, at + 1)) {
      const tail = body.slice(at);
      if (tail.length < note.length && note.startsWith(tail)) return text.slice(0, at);
    }
  }
  return text;
}
