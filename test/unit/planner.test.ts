/**
 * The Planner's prompt (activities/llm/planner.ts): the files its request names, as they are now; a replan shown its
 * previous plan as a list of steps.
 */
import { writePlanPrompt, type WritePlanInput } from '../../activities/llm/planner';
import type { Plan, PlanStep } from '../../common/plan';
import { planOf as plainPlan, planStep } from '../support/plan-steps';

const step = planStep;
const planOf = (...steps: PlanStep[]): Plan => ({ ...plainPlan(...steps), goal: 'Fix dates.py' });

const look = step('s1', 'In dates.py, check if 1900 is a leap year.', { expect: { check: 'python3 dates.py' } });
const run = step('s2', 'Run check_dates.py.', { depends_on: ['s1'], expect: { check: 'python3 check_dates.py' } });
const replan: WritePlanInput = {
  projectDir: '/p',
  toolAccess: 'full',
  request: 'Fix dates.py and run check_dates.py to prove it.',
  previousPlan: planOf(look, run),
  feedback: 'step s2 (Run check_dates.py.): not achieved: AssertionError',
  feedbackFrom: 'replan',
  finished: [{ id: 's1', title: 's1', status: 'done', result: 'exit code: 0' }],
};

describe('a replan', () => {
  it('shows the previous plan as a list of its steps; a revision shows the JSON the user saw', () => {
    const text = (input: WritePlanInput) => String(writePlanPrompt(input, [], '').messages[0]);
    const replanText = text(replan);
    expect(replanText).toContain(
      '## Previous plan\nGoal: Fix dates.py\n- s1: In dates.py, check if 1900 is a leap year. (check `python3 dates.py`)\n' +
        '- s2: Run check_dates.py. (check `python3 check_dates.py`)'
    );
    expect(replanText).not.toContain('"steps"');
    expect(text({ ...replan, feedbackFrom: 'user' })).toContain('"steps": [');
  });
});

describe('the files the request names', () => {
  const first: WritePlanInput = {
    projectDir: '/p',
    toolAccess: 'full',
    request: 'Which product in sales.csv brought in the most?',
    listing: { text: 'sales.csv', files: ['sales.csv'], complete: true },
    files: [{ path: 'sales.csv', text: 'date,product,quantity,unit_price\n2026-05-01,notebook,40,2.50\n' }],
  };

  it('are shown to the Planner after the listing, fenced as untrusted, with their line counts', () => {
    const text = String(writePlanPrompt(first, [], '').messages[0]);
    expect(text).toContain(
      '## Files the request names, as they are now\n#### sales.csv (2 lines)\n' +
        '<untrusted source="sales.csv">\ndate,product,quantity,unit_price'
    );
    expect(text.indexOf('## Files in the project')).toBeLessThan(text.indexOf('## Files the request names'));
    // Control: none read (a file behind the permission gate is never among them), no section.
    expect(String(writePlanPrompt({ ...first, files: undefined }, [], '').messages[0])).not.toContain(
      'as they are now'
    );
  });
});
