import { changingChecks } from '../../activities/llm/plan-checks';
import { fileChanges, simpleCommands } from '../../activities/llm/shell-words';
import { planOf, planStep as step } from '../support/plan-steps';

describe('a check that changes files is the step’s work, not its check', () => {
  const files = ['index.html', 'a.txt', 'b.txt', 'logs/a.log', 'it s.md', '.gitignore', 'calc.py'];

  it('reads a shell line as its simple commands: quotes and escapes off, redirects apart, here-documents left out', () => {
    expect(simpleCommands(`sed -i 's/a/b/' "it s.md" && grep -c x a\\ b.txt 2>&1 | tee log.txt > out.txt`)).toEqual([
      ['sed', '-i', 's/a/b/', 'it s.md'],
      ['grep', '-c', 'x', 'a b.txt'],
      ['tee', 'log.txt', '\u0000>', 'out.txt'],
    ]);
    expect(simpleCommands("python3 - <<'EOF'\nif n > 3 and it's: print(n)\nEOF")).toEqual([['python3', '-']]);
  });

  it('its first command changes files: file programs, in-place edits, deletes, output into a file of the project', () => {
    const changing = [
      "sed -i 's/a.png/img\\/a.png/g' index.html",
      'mkdir -p logs && mv *.log logs/',
      "find . -name '*.tmp' -delete",
      'find . -name x -execdir rm {} +',
      'sudo rm -rf build',
      'LC_ALL=C cp a.txt b.txt',
      'echo node_modules >> .gitignore',
      'cat a.txt &> b.txt',
      "perl -pi -e 's/a/b/' a.txt",
      'git mv a.txt b.txt',
      'ls *.tmp | xargs rm',
      'cd logs && rm a.log',
    ];
    const looking = [
      'python3 -m unittest test_calc',
      'node test/slug.test.js 2>&1',
      'grep -c WARN logs/a.log 2>/dev/null',
      'bash count.sh >/dev/null',
      'test -f logs/a.log && ! test -e a.txt',
      "grep -q 'a > b' index.html",
      "sed -n '1,5p' calc.py",
      "python3 - <<'EOF'\nif n > 3: print(open('a.txt').read())\nEOF",
      'python3 -m pytest && rm -rf .pytest_cache',
      'npm test > test.log 2>&1; tail test.log',
      "perl -Mstrict -e 'print 1'",
      'diff <(sort a.txt) b.txt',
      '[ $(wc -l < a.txt) -gt 3 ]',
      'python3 calc.py >&2',
    ];
    expect(changing.filter((c) => !fileChanges(c, files).first)).toEqual([]);
    expect(looking.filter((c) => fileChanges(c, files).first)).toEqual([]);
  });

  it('the files it writes, moves or deletes: never one it only reads', () => {
    const written = (c: string) => fileChanges(c, files).written;
    expect(written(`sed -i 's/x/y/' "it s.md" ./index.html`)).toEqual(['it s.md', 'index.html']);
    expect(written('cp a.txt b.txt')).toEqual(['b.txt']);
    expect(written('mv a.txt logs/')).toEqual(['a.txt']);
    expect(written('sort a.txt > b.txt')).toEqual(['b.txt']);
    expect(written('python3 calc.py | tee a.txt')).toEqual(['a.txt']);
    expect(written('python3 calc.py > new.txt')).toEqual([]);
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
