import { checkRunners } from '../../activities/llm/plan-checks';
import { planOf, planStep as step } from '../support/plan-steps';

describe('a script a check runs is run by the program for its language', () => {
  const files = ['slug.js', 'test/slug.test.js', 'calc.py', 'run.sh', 'app.ts'];
  const checks = (p: ReturnType<typeof planOf>) => p.steps.map((s) => s.expect?.check);

  it('a script alone, or given to another language’s program, gets its own; with a repair', () => {
    const p = planOf(
      step('s1', 'Fix slugify.', { expect: { changes: ['slug.js'], check: 'test/slug.test.js' } }),
      step('s2', 'Run the test.', { expect: { check: 'python3 test/slug.test.js' } }),
      step('s3', 'Run calc.', { expect: { check: './calc.py --all' } }),
      step('s4', 'Run it.', { expect: { check: 'node run.sh' } }),
      step('s5', 'Write the tool.', { expect: { changes: ['tools/new.py'], check: 'tools/new.py' } })
    );
    const out = checkRunners(p, files);
    expect(checks(out.plan)).toEqual([
      'node test/slug.test.js',
      'node test/slug.test.js',
      'python3 ./calc.py --all',
      'bash run.sh',
      'python3 tools/new.py',
    ]);
    expect(out.repairs[0]).toBe(
      'step "s1": its check `test/slug.test.js` runs test/slug.test.js by its language: `node test/slug.test.js`'
    );
    expect(out.repairs).toHaveLength(5);
    expect(out.plan.steps[0]!.expect?.changes).toEqual(['slug.js']);
  });

  it('the control: a script given its own program, options first, several commands, other programs, unknown files stay', () => {
    const p = planOf(
      step('s1', 'Test.', { expect: { check: 'python3.11 calc.py' } }),
      step('s2', 'Test.', { expect: { check: 'sh run.sh' } }),
      step('s3', 'Test.', { expect: { check: 'python3 -m unittest calc.py' } }),
      step('s4', 'Test.', { expect: { check: 'test/slug.test.js && calc.py' } }),
      step('s5', 'Test.', { expect: { check: 'pytest calc.py' } }),
      step('s6', 'Test.', { expect: { check: 'missing.py' } }),
      step('s7', 'Test.', { expect: { check: 'node app.ts' } }),
      step('s8', 'Read.')
    );
    expect(checkRunners(p, files)).toEqual({ plan: p, repairs: [] });
  });
});
