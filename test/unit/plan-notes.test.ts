import { expectsNote, withoutPlanNotes } from '../../activities/llm/plan-notes';
import { planOf, planStep as step } from '../support/plan-steps';

describe("Klea's notes on a failed plan's steps are not words of the new plan's steps", () => {
  const previous = planOf(
    step('s1', 'Fix slugify in slug.js.', { expect: { changes: ['slug.js'] } }),
    step('s2', 'Run the test.', { depends_on: ['s1'], expect: { check: 'node test/slug.test.js' } }),
    step('s3', 'Both.', { expect: { changes: ['a.py', 'b.py'], check: 'python3 a.py' } }),
    step('s4', 'Read it.')
  );

  it('notes are what each step was to change and run', () => {
    expect(previous.steps.map(expectsNote)).toEqual([
      'changes slug.js',
      'check `node test/slug.test.js`',
      'changes a.py, b.py; check `python3 a.py`',
      '',
    ]);
  });

  it('a note copied into a title or an instruction, once or twice, is left out, with a repair', () => {
    const copied = planOf(
      step('s1', 'Fix slugify in slug.js. (changes slug.js) (changes slug.js)', { expect: { changes: ['slug.js'] } }),
      {
        ...step('s2', 'Run the test. (check `node test/slug.test.js`)'),
        title: 'Run the test (check `node test/slug.test.js`)',
      },
      step('s3', 'Change slug.js (changes slug.js) and more.')
    );
    const out = withoutPlanNotes(copied, previous);
    expect(out.plan.steps.map((s) => [s.title, s.instruction])).toEqual([
      ['s1', 'Fix slugify in slug.js.'],
      ['Run the test', 'Run the test.'],
      ['s3', 'Change slug.js and more.'],
    ]);
    expect(out.plan.steps[0]!.expect).toEqual({ changes: ['slug.js'] });
    expect(out.repairs).toEqual([
      `step "s1": Klea's notes on the previous plan, copied into its words, left out`,
      `step "s2": Klea's notes on the previous plan, copied into its words, left out`,
      `step "s3": Klea's notes on the previous plan, copied into its words, left out`,
    ]);
  });

  it('a copy cut short at the end of an instruction, its double quotes made single or not, is left out', () => {
    const failed = planOf(
      step('s1', 'Add toUnits to units.js.', {
        expect: {
          changes: ['units.js'],
          check: 'node -e \'import("./units.js").then(m=>process.exit(m.toUnits(2)==="2 u"?0:1))\'',
        },
      }),
      step('s2', 'Test it.', { expect: { check: 'python3 -m unittest tests/test_units.py' } })
    );
    const copied = planOf(
      step('s1', "Add toUnits to units.js. (changes units.js; check `node -e 'import('./units.js').then(m=>", {
        expect: { changes: ['units.js'] },
      }),
      step('s2', 'Write the tests. (check `python3 -m unittest tests/test_un')
    );
    const out = withoutPlanNotes(copied, failed);
    expect(out.plan.steps.map((s) => s.instruction)).toEqual(['Add toUnits to units.js.', 'Write the tests.']);
    expect(out.repairs).toHaveLength(2);
  });

  it('the control: a cut copy too short to tell, or one that goes on otherwise, stays', () => {
    const plan = planOf(
      step('s1', 'Fix it (changes s'),
      step('s2', 'Run (check `node test/other.test.js`'),
      step('s3', 'Fix (changes slug.js and then more words')
    );
    expect(withoutPlanNotes(plan, previous)).toEqual({ plan, repairs: [] });
  });

  it('the control: words that are not a note of the previous plan, and a text that is only a note, stay', () => {
    const plan = planOf(step('s1', 'Fix it (changes other.py).'), step('s2', 'Run (check `python3 b.py`).'), {
      ...step('s3', 'Fix slugify.'),
      title: '(changes slug.js)',
    });
    expect(withoutPlanNotes(plan, previous)).toEqual({ plan, repairs: [] });
  });
});
