/**
 * The small profile's help with the files a plan is to change (activities/llm/plan-files.ts): decided by the plan's
 * structure, the listing and the file names in the texts, in any language.
 */
import {
  changesForFailedCheck,
  checksAfterChanges,
  followUpSteps,
  requestedNewFiles,
  sameFileSteps,
  thinkingSteps,
  unnamedChanges,
  valuesAsChanges,
} from '../../activities/llm/plan-files';
import { fileChangesOnly } from '../../activities/llm/planner';
import { boundedChecks, checkPaths, dataChecks, inlineChecks, pipedChecks } from '../../activities/llm/plan-checks';
import { MAX_CHECK_CHARS, type Plan } from '../../common/plan';
import { planOf, planStep } from '../support/plan-steps';

const step = planStep;
const changes = (p: Plan) => p.steps.map((s) => s.expect?.changes ?? []);

describe('a new file the request names is planned by some step', () => {
  const files = ['orders.csv', 'notes/a.txt'];

  it('goes to the step that names it, else every tool step that is to change nothing and runs no check', () => {
    const named = planOf(
      step('s1', 'Read orders.csv.'),
      step('s2', 'Write top.py to print the top customer.'),
      step('s3', 'Run it.', { expect: { check: 'python3 top.py' } })
    );
    expect(changes(requestedNewFiles(named, 'Write a script top.py that reads orders.csv.', files).plan)).toEqual([
      [],
      ['top.py'],
      [],
    ]);

    const unnamed = planOf(
      step('s1', 'Think it over.', { needs_tool: false }),
      step('s2', 'Copy the .txt files from notes/ into backup/.', { expect: { check: 'ls backup' } }),
      step('s3', 'Only .txt files.')
    );
    const out = requestedNewFiles(unnamed, 'Write me a bash script called backup.sh that copies notes/*.txt.', files);
    expect(changes(out.plan)).toEqual([[], [], ['backup.sh']]);
    expect(out.repairs).toEqual(['step "s3": the request names the new file backup.sh, which no step was to create']);

    // The script's own steps, none naming it: each gets it, and then they are one step that writes it whole.
    const parts = planOf(
      step('s1', 'Create the folder backup/ if it does not exist.'),
      step('s2', 'Copy the .txt files from notes/ into backup/.', { depends_on: ['s1'] }),
      step('s3', 'Check it.', { depends_on: ['s2'], expect: { check: 'bash backup.sh' } })
    );
    const given = requestedNewFiles(parts, 'Write a script backup.sh that copies notes/*.txt into backup/.', files);
    expect(changes(given.plan)).toEqual([['backup.sh'], ['backup.sh'], []]);
    const joined = sameFileSteps(given.plan).plan;
    expect(joined.steps.map((s) => [s.id, s.depends_on])).toEqual([
      ['s1', []],
      ['s3', ['s1']],
    ]);
    expect(joined.steps[0].instruction).toBe(
      'Create the folder backup/ if it does not exist.\nCopy the .txt files from notes/ into backup/.'
    );
  });

  it('adds nothing the plan has, nothing that exists, and nothing for a question, in any script', () => {
    const p = planOf(step('s1', 'Write it.', { expect: { changes: ['top.py'] } }));
    expect(requestedNewFiles(p, 'Write top.py from orders.csv.', files).repairs).toEqual([]);
    const q = planOf(step('s1', 'Look.'));
    expect(requestedNewFiles(q, 'Why does main.py import helpers.py?', files).repairs).toEqual([]);
    expect(requestedNewFiles(q, 'helpers.py 在哪里？', files).repairs).toEqual([]);
    // The control: put as a request, the same file is planned.
    expect(changes(requestedNewFiles(q, 'Create helpers.py.', files).plan)).toEqual([['helpers.py']]);
  });
});

describe('a step that works over other steps’ results and names no file needs no tool', () => {
  const files = ['users.json', 'src/app.py'];
  const tools = (p: Plan) => p.steps.map((s) => s.needs_tool);

  it('after a step that names a file, and after such a step in turn, in any order the plan lists them', () => {
    const p = planOf(
      step('s3', 'Zähle sie.', { depends_on: ['s2'] }),
      step('s1', 'Read src/app.py.'),
      step('s2', 'Find the handlers in it.', { depends_on: ['s1'] })
    );
    const out = thinkingSteps(p, files);
    expect(tools(out.plan)).toEqual([false, true, false]);
    expect(out.repairs).toEqual([
      'step "s3" works over the results of s2 and names no file: no tool',
      'step "s2" works over the results of s1 and names no file: no tool',
    ]);
  });

  it('over a data file, such steps keep their tool and are one step, for one program', () => {
    const p = planOf(
      step('s1', 'Read users.json.'),
      step('s2', 'Filter the list to the active ones.', { depends_on: ['s1'] }),
      step('s3', 'Zähle sie.', { depends_on: ['s2'] }),
      step('s4', 'Report the count.', { depends_on: ['s3'] })
    );
    const out = thinkingSteps(p, files);
    expect(out.plan.steps.map((s) => [s.id, s.needs_tool, s.depends_on, s.instruction])).toEqual([
      ['s1', true, [], 'Read users.json.'],
      ['s2', true, ['s1'], 'Filter the list to the active ones.\nZähle sie.\nReport the count.'],
    ]);
    expect(out.repairs).toEqual([
      'steps "s2" and "s3" work over the same data: one step, for one program',
      'steps "s2" and "s4" work over the same data: one step, for one program',
    ]);
  });

  it('not one that names a file, expects changes or a check, depends on nothing, or follows a step that names none', () => {
    const p = planOf(
      step('s1', 'Read users.json.'),
      step('s2', 'Edit src/app.py to match.', { depends_on: ['s1'] }),
      step('s3', 'Save the count.', { depends_on: ['s1'], expect: { changes: ['count.txt'] } }),
      step('s4', 'Run the tests.', { depends_on: ['s1'], expect: { check: 'pytest' } }),
      step('s5', 'Search the code for TODOs.'),
      step('s6', 'Search again, wider.', { depends_on: ['s5'] })
    );
    const out = thinkingSteps(p, files);
    expect(tools(out.plan)).toEqual([true, true, true, true, true, true]);
    expect(out.repairs).toEqual([]);
  });
});

describe('steps that are to change the same files are one step', () => {
  const ids = (p: Plan) => p.steps.map((s) => [s.id, s.depends_on]);

  it('a chain that opens, changes and saves one file: one step, its instructions in order, its dependents kept', () => {
    const p = planOf(
      step('s1', 'Create hello.py.', { title: 'Create', expect: { changes: ['hello.py'] } }),
      step('s2', 'Write the print into it.', {
        title: 'Fill',
        depends_on: ['s1'],
        expect: { changes: ['./hello.py'] },
      }),
      step('s3', 'Run hello.py.', { depends_on: ['s2'], expect: { check: 'python3 hello.py' } })
    );
    const out = sameFileSteps({ ...p, review: { before_work: false, after_step_ids: ['s2'] } });
    expect(ids(out.plan)).toEqual([
      ['s1', []],
      ['s3', ['s1']],
    ]);
    expect(out.plan.steps[0]).toMatchObject({
      title: 'Create; Fill',
      instruction: 'Create hello.py.\nWrite the print into it.',
      expect: { changes: ['hello.py'] },
    });
    expect(out.plan.review.after_step_ids).toEqual(['s1']);
    expect(out.repairs).toEqual(['steps "s1" and "s2" change the same files (hello.py): one step']);
  });

  it('steps side by side on one file, with checks and questions: one step with both checks and every question', () => {
    const p = planOf(
      step('s1', 'Set the version.', { expect: { changes: ['a.toml', 'b.toml'], check: 'test -s a.toml' } }),
      step('s2', 'Add the dependency.', { expect: { changes: ['b.toml', 'a.toml'], check: 'test -s b.toml' } }),
      step('s3', 'Set the owner.', { questions: ['Who?'], expect: { changes: ['a.toml', 'b.toml'] } })
    );
    const out = sameFileSteps(p);
    expect(out.plan.steps).toHaveLength(1);
    expect(out.plan.steps[0].expect).toEqual({
      changes: ['a.toml', 'b.toml'],
      check: '(test -s a.toml) && (test -s b.toml)',
    });
    expect(out.plan.steps[0].questions).toEqual(['Who?']);
    expect(out.plan.steps[0].instruction).toBe('Set the version.\nAdd the dependency.\nSet the owner.');
  });

  it('not steps on other files, nor a step whose order the plan fixed through another step', () => {
    const p = planOf(
      step('s1', 'Change a.py.', { expect: { changes: ['a.py'] } }),
      step('s2', 'Change a.py and b.py.', { expect: { changes: ['a.py', 'b.py'] } }),
      step('s3', 'Run a.py.', { depends_on: ['s1'], expect: { check: 'python3 a.py' } }),
      // After the run: joined into s1, it would run before the run it waits for.
      step('s4', 'Change a.py again.', { depends_on: ['s3'], expect: { changes: ['a.py'] } }),
      step('s5', 'Read a.py.'),
      step('s6', 'Read a.py again.')
    );
    const out = sameFileSteps(p);
    expect(out.plan).toEqual(p);
    expect(out.repairs).toEqual([]);
  });

  it('not a first step that waits for the later one through another step (no cycle)', () => {
    const p = planOf(
      step('s1', 'Change a.py after s2.', { depends_on: ['s2'], expect: { changes: ['a.py'] } }),
      step('s2', 'Read the notes.', { depends_on: ['s3'] }),
      step('s3', 'Change a.py first.', { expect: { changes: ['a.py'] } })
    );
    expect(sameFileSteps(p).repairs).toEqual([]);
  });
});

describe('a check is run once the change it is evidence of is made', () => {
  const test = 'python3 test_calc.py';

  it('a step before the fix, with the fix’s check, is left without it; the fix and the run after it keep theirs', () => {
    const p = planOf(
      step('s1', 'Find the failing test.', { expect: { check: test } }),
      step('s2', 'Fix calc.py.', { depends_on: ['s1'], expect: { changes: ['calc.py'], check: ` ${test}` } }),
      step('s3', 'Run the tests again.', { depends_on: ['s2'], expect: { check: test } })
    );
    const out = checksAfterChanges(p);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([
      undefined,
      { changes: ['calc.py'], check: ` ${test}` },
      { check: test },
    ]);
    expect(out.repairs).toEqual([
      'step "s1": its check is that of step "s2", which is to make it pass: left to that step',
    ]);
  });

  it('a step beside the fix, or beside the change a later run of its check waits for, is left without it', () => {
    const p = planOf(
      step('s1', 'Find the failing test.', { expect: { check: test } }),
      step('s2', 'Fix calc.py.', { expect: { changes: ['calc.py'] } }),
      step('s3', 'Run the tests again.', { depends_on: ['s1', 's2'], expect: { check: test } }),
      step('s4', 'Run them once more.', { depends_on: ['s1'], expect: { check: test } })
    );
    const out = checksAfterChanges(p);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([
      undefined,
      { changes: ['calc.py'] },
      { check: test },
      undefined,
    ]);
    expect(out.repairs).toEqual([
      'step "s1": its check is that of step "s3", run after step "s2" changes files: left to that step',
      'step "s4": its check is that of step "s3", run after step "s2" changes files: left to that step',
    ]);
    const parallel = planOf(
      step('s1', 'Run the tests.', { expect: { check: test } }),
      step('s2', 'Fix calc.py.', { expect: { changes: ['calc.py'], check: test } })
    );
    expect(checksAfterChanges(parallel).repairs).toEqual([
      'step "s1": its check is that of step "s2", which is to make it pass: left to that step',
    ]);
  });

  it('not a check of its own, nor one after every change, nor one no changed step is checked by', () => {
    const p = planOf(
      step('s1', 'Fix calc.py.', { expect: { changes: ['calc.py'], check: test } }),
      step('s2', 'Run the tests again.', { depends_on: ['s1'], expect: { check: test } }),
      step('s3', 'And again.', { depends_on: ['s2'], expect: { check: test } }),
      step('s4', 'Lint.', { expect: { check: 'ruff check .' } }),
      step('s5', 'Run it.', { expect: { check: 'python3 calc.py' } }),
      step('s6', 'Add a docstring.', { expect: { changes: ['calc.py'], check: 'python3 -m doctest calc.py' } })
    );
    expect(checksAfterChanges(p)).toEqual({ plan: p, repairs: [] });
  });
});

describe('a file of the project that no text of the task names is not asked of a step as a change', () => {
  const files = ['app.py', 'src/config.py', 'README.md'];

  it('left out with a repair; a file the request, the goal or the step names stays, and so does a new file', () => {
    const p = {
      ...planOf(
        step('s1', 'Create .gitignore with __pycache__ and *.pyc.', { expect: { changes: ['app.py', '.gitignore'] } }),
        step('s2', 'Fix the port in config.py.', { expect: { changes: ['src/config.py', './app.py'] } }),
        step('s3', 'Update the docs.', { expect: { changes: ['README.md'], check: 'test -s README.md' } })
      ),
      goal: 'Ignore caches and fix the port.',
    };
    const out = unnamedChanges(p, 'Add a .gitignore for Python caches, and fix the port.', files);
    expect(changes(out.plan)).toEqual([['.gitignore'], ['src/config.py'], []]);
    expect(out.plan.steps[2].expect).toEqual({ check: 'test -s README.md' });
    expect(out.repairs).toEqual([
      'step "s1": expect.changes named app.py, which neither the request nor the step names: left out',
      'step "s2": expect.changes named app.py, which neither the request nor the step names: left out',
      'step "s3": expect.changes named README.md, which neither the request nor the step names: left out',
    ]);
    // The control: named by the request (in another language) or by the goal, the same files stay.
    const kept = unnamedChanges({ ...p, goal: 'Update README.md.' }, 'Ajoute app.py au .gitignore.', files);
    expect(changes(kept.plan)).toEqual([['app.py', '.gitignore'], ['src/config.py', './app.py'], ['README.md']]);
  });
});

describe('a file named without its extension is named', () => {
  const files = ['README.md', 'requirements.txt', 'app.py', 'src/app_test.py'];

  it('a request that says "our readme" names README.md: the change the Planner planned to it stays', () => {
    const p = planOf(
      step('s1', 'Add an Installation section.', { expect: { changes: ['README.md', 'requirements.txt'] } })
    );
    const out = unnamedChanges(
      p,
      'Our readme lacks an install section: say to run pip install -r requirements.txt.',
      files
    );
    expect(changes(out.plan)).toEqual([['README.md', 'requirements.txt']]);
    expect(out.repairs).toEqual([]);
    // The control: a name inside another word or path, or another file's stem, names nothing.
    const unnamed = unnamedChanges(
      planOf(step('s1', 'Fix the tests.', { expect: { changes: ['README.md', 'app.py'] } })),
      'Fix src/app_test.py; readmes elsewhere are fine.',
      files
    );
    expect(changes(unnamed.plan)).toEqual([[]]);
  });
});

describe('a new plan after a failed check changes something before it runs the check again', () => {
  const files = ['units.py', 'test_units.py', 'data/rates.json'];
  const check = 'python3 test_units.py';
  const request = 'Die Umrechnung in units.py ist falsch. Repariere sie und führe test_units.py aus.';

  it('the steps that rerun the check are to change the files the request names, other than what the check runs', () => {
    const p = planOf(
      step('s1', 'Look at the output.', {}),
      step('s2', 'Run test_units.py and check it passes.', { depends_on: ['s1'], expect: { check } })
    );
    const out = changesForFailedCheck(p, ` ${check}`, request, files);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([undefined, { check, changes: ['units.py'] }]);
    expect(out.repairs).toEqual([
      `step "s2": its check \`${check}\` failed before and the plan changes no file: it is to change units.py, which the request names`,
    ]);
  });

  it('not when the plan changes a file, the request is a question, names no other file, or no step reruns the check', () => {
    const fixing = planOf(
      step('s1', 'Fix units.py.', { expect: { changes: ['units.py'] } }),
      step('s2', 'Run the test.', { depends_on: ['s1'], expect: { check } })
    );
    expect(changesForFailedCheck(fixing, check, request, files)).toEqual({ plan: fixing, repairs: [] });
    const rerun = planOf(step('s1', 'Run the test.', { expect: { check } }));
    expect(changesForFailedCheck(rerun, check, 'Why does test_units.py fail in units.py?', files).repairs).toEqual([]);
    expect(changesForFailedCheck(rerun, check, 'Run test_units.py until it passes.', files).repairs).toEqual([]);
    expect(changesForFailedCheck(rerun, 'python3 -m pytest', request, files).repairs).toEqual([]);
    // The control: the same plan, check and request get the change.
    expect(changesForFailedCheck(rerun, check, request, files).repairs).toHaveLength(1);
  });

  it('the files the task has changed come first: what it wrote is what fails', () => {
    const rerun = planOf(step('s1', 'Run the tests.', { expect: { check: 'python3 -m unittest discover tests' } }));
    const request = 'Add tests for convert() in units.py to tests/test_convert.py.';
    const after = [...files, 'tests/test_convert.py'];
    const out = changesForFailedCheck(rerun, 'python3 -m unittest discover tests', request, after, [
      './tests/test_convert.py',
      'gone.txt',
    ]);
    expect(out.plan.steps[0].expect?.changes).toEqual(['tests/test_convert.py']);
    expect(out.repairs[0]).toMatch(/it is to change tests\/test_convert.py, which the task changed$/);
    // Without changes of its own, the request's files (here the code under test: the case the task's changes avoid).
    const before = changesForFailedCheck(rerun, 'python3 -m unittest discover tests', request, after);
    expect(before.plan.steps[0].expect?.changes).toEqual(['units.py', 'tests/test_convert.py']);
  });
});

describe('a check that only reads data files is not a check', () => {
  const files = ['sales.csv', 'report.py', 'notes.txt'];

  it('left out of a step that changes nothing; then such steps are one step, for a program', () => {
    const p = planOf(
      step('s1', 'Read sales.csv.', { expect: { check: 'cat sales.csv' } }),
      step('s2', 'Sum quantity times price per product.', {
        depends_on: ['s1'],
        expect: { check: "awk -F, '{print $2, $3 * $4}' sales.csv | sort -k2nr | head -n 1" },
      }),
      step('s3', 'Report the best product.', { depends_on: ['s2'], expect: { check: 'echo "$(head -1 sales.csv)"' } })
    );
    const out = dataChecks(p, files);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([undefined, undefined, undefined]);
    expect(out.repairs[0]).toBe('step "s1": its check `cat sales.csv` only reads sales.csv: left out');
    expect(thinkingSteps(out.plan, files).plan.steps.map((s) => [s.id, s.needs_tool])).toEqual([
      ['s1', true],
      ['s2', true],
    ]);
  });

  it('kept when it runs anything but a reader, names no file, reads other files, or the step changes files', () => {
    const p = planOf(
      step('s1', 'Run the report.', { expect: { check: 'python3 report.py sales.csv' } }),
      step('s2', 'Count.', { expect: { check: 'python3 -c "print(1)"' } }),
      step('s3', 'Add milk.', { expect: { changes: ['notes.txt'], check: 'grep -q milk notes.txt' } }),
      step('s4', 'Install.', { expect: { check: 'pip install -r notes.txt' } }),
      step('s5', 'Count.', { expect: { check: 'cat notes.txt | python3 report.py' } })
    );
    expect(dataChecks(p, files)).toEqual({ plan: p, repairs: [] });
  });
});

describe('a step that is only to run a program is checked by the program', () => {
  it('cuts a check that pipes the run into other commands to the run', () => {
    const p = planOf(
      step('s1', 'Run stats.py and report what it prints.', {
        expect: { check: "python3 stats.py | awk '{print $1}' | bc -l" },
      })
    );
    const out = pipedChecks(p);
    expect(out.plan.steps[0].expect).toEqual({ check: 'python3 stats.py' });
    expect(out.repairs).toEqual([
      'step "s1": its check `python3 stats.py | awk \'{print $1}\' | bc -l` pipes the run into other commands: ' +
        '`python3 stats.py` is its check',
    ]);
  });

  it('keeps a pipe inside quotes, `||`, a pipeline that starts by reading text, and a step that changes files', () => {
    const p = planOf(
      step('s1', 'Run it.', { expect: { check: 'node -e "console.log(1 | 2)"' } }),
      step('s2', 'Run it.', { expect: { check: 'make test || exit 1' } }),
      step('s3', 'Count.', { expect: { check: 'cat notes.txt | python3 report.py' } }),
      step('s4', 'Fix.', { expect: { changes: ['a.py'], check: 'python3 a.py | grep -q ok' } })
    );
    expect(pipedChecks(p)).toEqual({ plan: p, repairs: [] });
  });
});

describe('a step after a change that names only the changed files, and changes and checks nothing, joins it', () => {
  const files = ['config.json', 'app.py'];

  it('joins "write it back" into the change, and what depended on it depends on the change', () => {
    const p = planOf(
      step('s1', 'Change the port from 8080 to 9090 in config.json.', { expect: { changes: ['config.json'] } }),
      step('s3', 'Write the modified contents of config.json back to the file.', { depends_on: ['s1'] }),
      step('s4', 'Run app.py.', { depends_on: ['s3'], expect: { check: 'python3 app.py' } })
    );
    const out = followUpSteps(p, files);
    expect(out.plan.steps.map((s) => [s.id, s.depends_on])).toEqual([
      ['s1', []],
      ['s4', ['s1']],
    ]);
    expect(out.plan.steps[0].instruction).toBe(
      'Change the port from 8080 to 9090 in config.json.\nWrite the modified contents of config.json back to the file.'
    );
    expect(out.repairs).toEqual([
      'steps "s1" and "s3" name only files step "s1" changes, and the other is to change and check nothing: one step',
    ]);
  });

  it('joins "read the file" before the change into it: the joined step is to change the file', () => {
    const p = planOf(
      step('s1', 'Read the contents of config.json.'),
      step('s2', 'Change the port to 9090 in config.json.', {
        depends_on: ['s1'],
        expect: { changes: ['config.json'] },
      }),
      step('s3', 'Write config.json back.', { depends_on: ['s2'] })
    );
    const out = followUpSteps(p, files);
    expect(out.plan.steps.map((s) => [s.id, s.expect, s.depends_on])).toEqual([
      ['s1', { changes: ['config.json'] }, []],
    ]);
    expect(out.plan.steps[0].instruction.split('\n')).toHaveLength(3);
    expect(out.repairs[0]).toBe(
      'steps "s1" and "s2" name only files step "s2" changes, and the other is to change and check nothing: one step'
    );
  });

  it('keeps a later step that checks, changes, names another file or none, or needs no tool', () => {
    const change = step('s1', 'Change config.json.', { expect: { changes: ['config.json'] } });
    const later = (more: Partial<Parameters<typeof step>[2]>, text = 'Show config.json.') =>
      planOf(change, step('s2', text, { depends_on: ['s1'], ...more }));
    for (const p of [
      later({ expect: { check: 'python3 -m json.tool config.json' } }),
      later({ expect: { changes: ['config.json'] } }),
      later({}, 'Show config.json and app.py.'),
      later({}, 'Tell me what changed.'),
      later({ needs_tool: false }),
    ])
      expect(followUpSteps(p, files)).toEqual({ plan: p, repairs: [] });
    // Control: the same later step, to show config.json only, joins.
    expect(followUpSteps(later({}), files).plan.steps).toHaveLength(1);
  });
});

describe('a check closed by its bound is no check', () => {
  const runOn = `grep -qP '${'\\(\\w+\\)\\s*'.repeat(60)}' docs/api.md`;

  it('leaves out a check as long as a check may be: the grammar closed it, not the model', () => {
    const p = planOf(
      step('s1', 'Make the table.', { expect: { changes: ['docs/api.md'], check: runOn.slice(0, MAX_CHECK_CHARS) } }),
      step('s2', 'Run it.', { expect: { check: runOn.slice(0, MAX_CHECK_CHARS) } })
    );
    const out = boundedChecks(p);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([{ changes: ['docs/api.md'] }, undefined]);
    expect(out.repairs[1]).toMatch(
      /^step "s2": its check `grep -qP .*…` reached the longest a check may be: left out$/
    );
  });

  it('keeps a check shorter than that', () => {
    const closed = `grep -qP '${'a'.repeat(MAX_CHECK_CHARS - 1 - "grep -qP '' docs/api.md".length)}' docs/api.md`;
    const p = planOf(
      step('s1', 'Run the tests.', { expect: { check: 'python3 -m pytest -q' } }),
      step('s2', 'Run it.', { expect: { check: closed } })
    );
    expect(closed).toHaveLength(MAX_CHECK_CHARS - 1);
    expect(boundedChecks(p)).toEqual({ plan: p, repairs: [] });
  });

  it('leaves out a check with a quote left open, which the shell refuses whole; a closed one stays', () => {
    // The 0.5B Planner's copy of an example check, single quotes inside single quotes.
    const copied = `node -e 'import('./format.js').then(m=>{for(const[f,a,w]of[["`;
    const p = planOf(step('s1', 'Add formatBytes.', { expect: { changes: ['format.js'], check: copied } }));
    const out = boundedChecks(p);
    expect(out.plan.steps[0]!.expect).toEqual({ changes: ['format.js'] });
    expect(out.repairs).toEqual([
      `step "s1": its check \`${copied}\` leaves a quote open, and the shell cannot run it: left out`,
    ]);
    for (const check of [
      `node -e 'import("./format.js").then((m) => console.log(m.f(1)))'`,
      `python3 -c "print('it''s')" # don't mind this comment`,
      `grep -c "a \\"b\\"" notes.txt && echo \`date\``,
      `cat <<'EOF'\nit's a here-document\nEOF`,
    ]) {
      const kept = planOf(step('s1', 'Run it.', { expect: { check } }));
      expect(boundedChecks(kept)).toEqual({ plan: kept, repairs: [] });
    }
  });
});

describe('a step whose planned changes are values, not files, changes the files its instruction names', () => {
  const files = ['.env', 'app.py', 'count_errors.sh', 'logs/api.log'];
  const request = 'Switch DEBUG off in my .env, and make count_errors.sh print one total.';

  it('the files its instruction names become its changes, with a repair; other steps stay as planned', () => {
    const before = planOf(
      step('s1', 'In .env, set DEBUG to false.', { expect: { changes: ['DEBUG = false'] } }),
      step('s2', 'In count_errors.sh, sum the ERROR lines of logs/*.log.', { expect: { changes: ['logs/*.log'] } }),
      step('s3', 'Read app.py.'),
      step('s4', 'Print the total.', { expect: { changes: ['total'] } })
    );
    const checked = fileChangesOnly(before, files, request);
    expect(changes(checked.plan)).toEqual([[], [], [], []]);
    const out = valuesAsChanges(before, checked.plan, request, files);
    // A glob names files, not a value: the step that is to change "logs/*.log" is left as it is.
    expect(changes(out.plan)).toEqual([['.env'], [], [], []]);
    expect(out.repairs).toEqual([
      'step "s1": expect.changes named "DEBUG = false", no file; its instruction names .env: to change',
    ]);
    // The control: a step that kept a file of its own, or a request put as a question, is left as it is.
    const kept = planOf(step('s1', 'In .env, set DEBUG to false.', { expect: { changes: ['DEBUG', 'app.py'] } }));
    const keptChecked = fileChangesOnly(kept, files, request).plan;
    expect(changes(valuesAsChanges(kept, keptChecked, request, files).plan)).toEqual([['app.py']]);
    expect(valuesAsChanges(before, checked.plan, 'Is DEBUG on in my .env?', files).plan).toEqual(checked.plan);
  });
});

describe('a file a check names by a path the project does not have', () => {
  const files = ['durations.py', 'src/app.js', 'lib/app.js', 'README.md'];

  it('is named by the one path the project or the plan has for it', () => {
    const p = planOf(
      step('s1', 'Write the tests.', {
        expect: { changes: ['tests/test_durations.py'], check: 'python3 -m unittest test_durations.py' },
      }),
      step('s2', 'Run it.', { expect: { check: 'python3 ./durations.py && node app.js' } })
    );
    const out = checkPaths(p, files);
    expect(out.plan.steps.map((s) => s.expect?.check)).toEqual([
      'python3 -m unittest tests/test_durations.py',
      // The project has two app.js: which one is meant is not known, and the name stays.
      'python3 ./durations.py && node app.js',
    ]);
    expect(out.repairs).toEqual([
      'step "s1": its check `python3 -m unittest test_durations.py` names files by paths the project has: ' +
        '`python3 -m unittest tests/test_durations.py`',
    ]);
  });

  it('the control: a check that changes its folder, or names only paths there are, stays', () => {
    const p = planOf(
      step('s1', 'Write the tests.', {
        expect: { changes: ['tests/test_durations.py'], check: 'cd tests && python3 -m unittest test_durations.py' },
      }),
      step('s2', 'Test.', { expect: { check: 'python3 -m unittest tests/test_durations.py durations.py' } })
    );
    expect(checkPaths(p, files)).toEqual({ plan: p, repairs: [] });
  });
});

describe('a check that is a program of its own, given inline', () => {
  const files = ['orders.csv', 'calc.py', 'README.md'];

  it('of a step that changes nothing, when it reads no file of the project, is left out: it sees nothing the step did', () => {
    const p = planOf(
      step('s1', 'Find the customer who spent the most.', {
        expect: { check: "python3 -c 'print(max(customers, key=customers.get))'" },
      }),
      step('s2', 'Print it.', { expect: { check: 'node -e "console.log(total)"' } })
    );
    const out = inlineChecks(p, files);
    expect(out.plan.steps.map((s) => s.expect)).toEqual([undefined, undefined]);
    expect(out.repairs).toEqual([
      'step "s1": its check `python3 -c \'print(max(customers, key=customers.get))\'` is a program that reads no file of the project: left out',
      'step "s2": its check `node -e "console.log(total)"` is a program that reads no file of the project: left out',
    ]);
  });

  it('the control: one that reads a file of the project or imports one, one of a step that changes files, a script, stay', () => {
    const p = planOf(
      step('s1', 'Sum.', { expect: { check: `python3 -c 'import csv; print(len(list(open("orders.csv"))))'` } }),
      step('s2', 'Add.', { expect: { check: "python3 -c 'from calc import add; assert add(2, 3) == 5'" } }),
      step('s3', 'Fix.', { expect: { changes: ['calc.py'], check: "python3 -c 'print(total)'" } }),
      step('s4', 'Run.', { expect: { check: 'python3 report.py' } })
    );
    expect(inlineChecks(p, files)).toEqual({ plan: p, repairs: [] });
  });
});
