/**
 * The Planner's replans (activities/llm/planner.ts): shown its previous plan as a list of steps.
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

describe('the names the request mentions', () => {
  it('the Planner is told where they are defined, fenced as untrusted, after the listing; nothing when none is', () => {
    const ask = {
      projectDir: '/p',
      toolAccess: 'full' as const,
      request: "Where's send_invoice defined?",
      listing: { text: 'app.py\nbilling/\nbilling/mailer.py', files: ['app.py', 'billing/mailer.py'], complete: true },
    };
    const defined = ['send_invoice: a function in billing/mailer.py, line 4'];
    const text = String(writePlanPrompt({ ...ask, defined }, [], '').messages[0]);
    expect(text).toContain(
      `## Where the names the request mentions are defined\n<untrusted source="the project's code">\n${defined[0]}`
    );
    expect(text.indexOf(defined[0])).toBeGreaterThan(text.indexOf('billing/mailer.py\n'));
    expect(String(writePlanPrompt(ask, [], '').messages[0])).not.toContain('Where the names');
  });
});
