import { changingChecks } from '../../activities/llm/plan-checks';
import { changesFiles } from '../../activities/llm/shell-words';
import { planOf, planStep as step } from '../support/plan-steps';

describe('a check that changes files is the step’s work, not its check', () => {
  it('reads the shape of a command: file programs, in-place edits, deletes by find, redirects into files', () => {
    const changing = [
      "sed -i 's/a.png/img\\/a.png/g' index.html",
      'mkdir -p logs && mv *.log logs/',
      "find . -name '*.tmp' -delete",
      'find . -name x -exec rm {} +',
      'sudo rm -rf build',
      'LC_ALL=C cp a b',
      'echo done > status.txt',
      'cat a >> b',
      'python3 gen.py | tee out.txt',
      "perl -pi -e 's/a/b/' x.txt",
    ];
    const looking = [
      'python3 -m unittest test_calc',
      'node test/slug.test.js 2>&1',
      'grep -c WARN logs/a.log 2>/dev/null',
      'bash count.sh >/dev/null',
      'test -f logs/debug.log && ! test -e debug.log',
      "grep -q 'a > b' notes.md",
      "sed -n '1,5p' README.md",
      "python3 - <<'EOF'\nprint(1)\nEOF",
    ];
    expect(changing.filter((c) => !changesFiles(c))).toEqual([]);
    expect(looking.filter(changesFiles)).toEqual([]);
  });

  it('the command goes into the instruction and the files it names outside quotes into expect.changes; with a repair', () => {
    const files = ['index.html', 'hero.png', 'style.css', 'a.tmp'];
    const p = planOf(
      step('s1', 'Update the image paths in index.html.', {
        expect: { check: "sed -i 's/hero.png/assets\\/hero.png/g' index.html" },
      }),
      step('s2', 'Delete every .tmp file: run `find . -name "*.tmp" -delete`.', {
        expect: { changes: ['a.tmp'], check: 'find . -name "*.tmp" -delete' },
      })
    );
    const out = changingChecks(p, files);
    expect(out.plan.steps[0]).toMatchObject({
      instruction: "Update the image paths in index.html. Run `sed -i 's/hero.png/assets\\/hero.png/g' index.html`.",
      expect: { changes: ['index.html'] },
    });
    expect(out.plan.steps[0]!.expect?.check).toBeUndefined();
    expect(out.plan.steps[1]).toMatchObject({
      instruction: 'Delete every .tmp file: run `find . -name "*.tmp" -delete`.',
      expect: { changes: ['a.tmp'] },
    });
    expect(out.plan.steps[1]!.expect?.check).toBeUndefined();
    expect(out.repairs[0]).toBe(
      "step \"s1\": its check `sed -i 's/hero.png/assets\\/hero.png/g' index.html` changes files: made the step's work"
    );
    expect(out.repairs).toHaveLength(2);
  });

  it('the control: checks that only look stay as they are', () => {
    const p = planOf(
      step('s1', 'Fix calc.', { expect: { changes: ['calc.py'], check: 'python3 -m unittest test_calc' } }),
      step('s2', 'Move the logs.', { expect: { check: 'test -f logs/a.log' } }),
      step('s3', 'Read.')
    );
    expect(changingChecks(p, ['calc.py', 'test_calc.py', 'a.log'])).toEqual({ plan: p, repairs: [] });
  });
});
