import { isPythonTestFile, pythonTestCommand, testChecks } from '../../activities/llm/plan-checks';
import { planOf, planStep as step } from '../support/plan-steps';

describe('a new Python test file a step writes is run by its check', () => {
  const files = ['wordcount.py', 'tests/test_old.py', 'README.md'];
  const checks = (p: ReturnType<typeof planOf>) => p.steps.map((s) => s.expect?.check);

  it('the step that writes it gets one, by pytest or by unittest as the sandbox has them, with a repair', () => {
    const p = planOf(
      step('s1', 'Write the tests.', { expect: { changes: ['test_wordcount.py'] } }),
      step('s2', 'Write more.', { expect: { changes: ['tests/wordcount_test.py', 'tests/words.txt'] } }),
      step('s3', 'Sum it up.', { needs_tool: false, depends_on: ['s1', 's2'] })
    );
    const out = testChecks(p, files);
    expect(checks(out.plan)).toEqual([
      pythonTestCommand('test_wordcount.py'),
      pythonTestCommand('tests/wordcount_test.py'),
      undefined,
    ]);
    expect(pythonTestCommand('t/test_a.py')).toBe(
      "if python3 -c 'import pytest' 2>/dev/null; then python3 -m pytest -q t/test_a.py; else python3 -m unittest t/test_a.py; fi"
    );
    expect(out.repairs[0]).toBe(
      'step "s1": it writes the test test_wordcount.py, which no check ran: it is run as its check'
    );
    expect(out.plan.steps[1]!.expect?.changes).toEqual(['tests/wordcount_test.py', 'tests/words.txt']);
  });

  it('the control: a test some check runs, a step with a check of its own, a test the project has, other files stay', () => {
    const p = planOf(
      step('s1', 'Write the tests.', { expect: { changes: ['test_a.py'] } }),
      step('s2', 'Run them.', { depends_on: ['s1'], expect: { check: 'python3 -m unittest test_a' } }),
      step('s3', 'Write and run.', { expect: { changes: ['test_b.py'], check: 'python3 wordcount.py' } }),
      step('s4', 'Fix the old test.', { expect: { changes: ['tests/test_old.py'] } }),
      step('s5', 'Write the module.', { expect: { changes: ['testing.py', 'contest_x.py', 'test_notes.md'] } }),
      step('s6', 'Read.')
    );
    expect(testChecks(p, files)).toEqual({ plan: p, repairs: [] });
  });

  it('a test written before the code it tests is run by the last step that writes the code', () => {
    const p = planOf(
      step('s1', 'Write the tests first.', { expect: { changes: ['test_stack.py'] } }),
      step('s2', 'Write the stack.', { expect: { changes: ['stack.py'] } }),
      step('s3', 'Write the queue.', { expect: { changes: ['queue_impl.py', 'README.md'] } }),
      step('s4', 'Document it.', { expect: { changes: ['docs/usage.md'] } })
    );
    const out = testChecks(p, files);
    expect(checks(out.plan)).toEqual([undefined, undefined, pythonTestCommand('test_stack.py'), undefined]);
    expect(out.repairs).toEqual([
      'step "s3": it writes the code the test test_stack.py of step "s1" tests, and no check ran the test: it is run as its check',
    ]);
    // Where that step has a check of its own, none is added.
    const own = planOf(p.steps[0]!, { ...p.steps[1]!, expect: { changes: ['stack.py'], check: 'python3 stack.py' } });
    expect(testChecks(own, files)).toEqual({ plan: own, repairs: [] });
  });

  it('a path that is not plainly a file’s is put in no command', () => {
    for (const bad of ['test_a b.py', 'test_a;id;aa.py', '-test_x.py', 'test_$(id).py']) {
      const p = planOf(step('s1', 'Write it.', { expect: { changes: [bad] } }));
      expect(testChecks(p, files)).toEqual({ plan: p, repairs: [] });
    }
  });

  it('knows test files by the runners’ conventions, by name only', () => {
    expect(['test_x.py', 'a/b/test_y.py', 'x_test.py'].every(isPythonTestFile)).toBe(true);
    expect(['test.py', 'tests.py', 'testing.py', 'test_x.js', 'mytest_x.py', 'test_/x.py'].some(isPythonTestFile)).toBe(
      false
    );
  });
});
