/**
 * The Planner (activities/llm/planner.ts): a replan is shown its previous plan as a list of steps; a first plan that
 * leaves out a file the request names is found.
 */
import { requestFilesLeftOut, writePlanPrompt, type WritePlanInput } from '../../activities/llm/planner';
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

describe('a first plan that leaves out every file the request names (the small profile asks again)', () => {
  const files = ['count.sh', 'logs/', 'logs/a.log', 'src/tools/fmt.py', 'README.md'];
  const request = 'count.sh prints a line per file in logs/; it should print the total. Fix it.';

  it('names the files, as the reason', () => {
    const looked = planOf(
      step('s1', 'Find the log files in logs/.'),
      step('s2', 'Count the lines with ERROR in each file.', { depends_on: ['s1'] })
    );
    expect(requestFilesLeftOut(looked, request, files)).toBe(
      'the request names count.sh, but no step of the plan names it: plan what the request asks of it'
    );
    expect(requestFilesLeftOut(planOf(step('s1', 'Do it.')), 'Fix count.sh and README.md.', files)).toBe(
      'the request names count.sh, README.md, but no step of the plan names any of them: plan what the request ' +
        'asks of them'
    );
    // A new file the request names counts as well.
    expect(requestFilesLeftOut(planOf(step('s1', 'Write the tests.')), 'Add tests in test_fmt.py.', files)).toMatch(
      /^the request names test_fmt\.py, but/
    );
  });

  it('a step names one in its instruction, its files to change or its check (by path or by its name alone)', () => {
    expect(requestFilesLeftOut(planOf(step('s1', 'In count.sh, print the sum.')), request, files)).toBeNull();
    const changes = step('s1', 'Make the script print the sum.', { expect: { changes: ['./count.sh'] } });
    expect(requestFilesLeftOut(planOf(changes), request, files)).toBeNull();
    const check = step('s1', 'Make the script print the sum.', { expect: { check: 'bash count.sh' } });
    expect(requestFilesLeftOut(planOf(check), request, files)).toBeNull();
    const nested = 'Tidy src/tools/fmt.py, please.';
    expect(requestFilesLeftOut(planOf(step('s1', 'In fmt.py, sort the imports.')), nested, files)).toBeNull();
    expect(requestFilesLeftOut(planOf(step('s1', 'Sort the imports.')), nested, files)).toMatch(
      /^the request names src\/tools\/fmt\.py, but/
    );
  });

  it('one of them named is enough; a request that names no file, or only a folder, is not asked about', () => {
    const tests = planOf(step('s1', 'Create test_fmt.py with two tests.'));
    expect(requestFilesLeftOut(tests, 'Test src/tools/fmt.py in test_fmt.py.', files)).toBeNull();
    expect(requestFilesLeftOut(planOf(step('s1', 'Do it.')), 'Tidy up the logs/ folder.', files)).toBeNull();
    expect(requestFilesLeftOut(planOf(step('s1', 'Do it.')), 'Make it faster.', files)).toBeNull();
  });
});
