/**
 * `make eval`'s pure parts: what its checkers read in an answer and in a project's files, how a task is judged
 * from its end and its checker, and the report it writes.
 */
import {
  changedKeys,
  diffSnapshots,
  mentionsFile,
  mentionsNumber,
  numbersIn,
  namesTheFile,
  saysNoWriteAccess,
  testFailure,
  type FileChanges,
} from '../../bench/eval/checks';
import { judge, renderMarkdown, summarise, type EvalRun, type TaskRecord } from '../../bench/eval/report';
import { selectTasks, TASKS, type Outcome } from '../../bench/eval/tasks';

const NO_CHANGES: FileChanges = { added: [], removed: [], modified: [] };

/** A finished task as a checker sees it: the project's files after it, and a command runner that must not run. */
function outcome(over: Partial<Outcome> & { files?: Record<string, string> } = {}): Outcome {
  const files = over.files ?? {};
  return {
    status: 'done',
    answer: null,
    error: null,
    changes: NO_CHANGES,
    read: (rel) => files[rel],
    run: () => Promise.reject(new Error('this checker was not expected to run a command')),
    ...over,
  };
}

const taskById = (id: string) => TASKS.find((t) => t.id === id)!;

function record(over: Partial<TaskRecord>): TaskRecord {
  return {
    id: 't',
    covers: 'c',
    prompt: 'p',
    toolAccess: 'full',
    solved: true,
    reason: 'ok',
    status: 'done',
    error: null,
    answer: null,
    seconds: 10,
    modelCalls: 3,
    inputTokens: 100,
    outputTokens: 20,
    toolCalls: 1,
    questions: 0,
    permissions: 0,
    ...over,
  };
}

describe('eval checkers read answers', () => {
  it('finds numbers as numbers, not inside others', () => {
    expect(numbersIn('add(2, 3) returns -1; the file has 1,024 lines and 42.5 on average')).toEqual([
      2, 3, -1, 1024, 42.5,
    ]);
    expect(mentionsNumber('data.txt has 37 lines.', 37)).toBe(true);
    expect(mentionsNumber('data.txt has 137 lines, or 3.7 per page', 37)).toBe(false);
  });

  it('finds a file named as a word, with or without its folder', () => {
    expect(mentionsFile('It is in `src/shapes.py`.', 'shapes.py')).toBe(true);
    expect(mentionsFile('see old_shapes.py', 'shapes.py')).toBe(false);
  });

  it('tells an answer that says it may not write from one that claims success or gives another reason', () => {
    expect(saysNoWriteAccess('I cannot edit notes.txt: the session is read-only.')).toBe(true);
    expect(saysNoWriteAccess('I was not allowed to write to notes.txt.')).toBe(true);
    expect(saysNoWriteAccess('notes.txt could not be changed: no write access.')).toBe(true);
    expect(saysNoWriteAccess("I added 'buy milk' to notes.txt.")).toBe(false);
    expect(saysNoWriteAccess('The request was denied because the steps did not produce any results.')).toBe(false);
  });

  it('an answer that names every file has not found the one', () => {
    expect(
      namesTheFile('Circle is defined in src/shapes.py (app.py uses it).', 'shapes.py', ['app.py', 'report.py'])
    ).toMatchObject({ solved: true });
    expect(namesTheFile('Files: shapes.py, app.py, report.py', 'shapes.py', ['app.py', 'report.py'])).toEqual({
      solved: false,
      reason: 'answer names every file, shapes.py among them',
    });
  });
});

describe('eval checkers read test output', () => {
  it("names unittest's summary and the first assertion", () => {
    const output = [
      'F.',
      '======================================================================',
      'FAIL: test_add (test_calc.CalcTest.test_add)',
      '----------------------------------------------------------------------',
      'Traceback (most recent call last):',
      '  File "/p/test_calc.py", line 8, in test_add',
      '    self.assertEqual(add(2, 3), 5)',
      'AssertionError: -1 != 5',
      '',
      'Ran 2 tests in 0.001s',
      '',
      'FAILED (failures=1)',
    ].join('\n');

    expect(testFailure(output)).toBe('FAILED (failures=1): AssertionError: -1 != 5');
    expect(testFailure("ModuleNotFoundError: No module named 'calc'")).toBe(
      "ModuleNotFoundError: No module named 'calc'"
    );
  });
});

describe('eval checkers read files', () => {
  it('names added, removed and modified files', () => {
    const before = new Map([
      ['a.py', '1'],
      ['b.py', '2'],
    ]);
    const after = new Map([
      ['a.py', '1!'],
      ['c.py', '3'],
    ]);

    expect(diffSnapshots(before, after)).toEqual({ added: ['c.py'], removed: ['b.py'], modified: ['a.py'] });
  });

  it('names the changed keys of a config, nested ones dotted', () => {
    expect(changedKeys({ a: 1, b: { c: 2, d: 3 } }, { a: 1, b: { c: 5, d: 3 }, e: true })).toEqual(['b.c', 'e']);
  });

  it('the JSON task is solved by the port alone, and not when another key changed too', () => {
    const check = taskById('json').check;
    const config = {
      name: 'inventory-service',
      port: 9090,
      debug: false,
      database: { host: 'localhost', name: 'inventory' },
    };
    const changes = { ...NO_CHANGES, modified: ['config.json'] };

    expect(check(outcome({ changes, files: { 'config.json': JSON.stringify(config) } }))).toMatchObject({
      solved: true,
    });
    expect(check(outcome({ changes, files: { 'config.json': JSON.stringify({ ...config, debug: true }) } }))).toEqual({
      solved: false,
      reason: 'other keys changed too: debug, port',
    });
  });

  it('the YAML task is solved when logging.level is debug, and says what it is otherwise', () => {
    const check = taskById('yaml').check;
    const yaml = (level: string) =>
      `app:\n  name: inventory-service\n  workers: 2\nlogging:\n  level: ${level}\n  file: logs/app.log\n`;

    expect(check(outcome({ files: { 'settings.yaml': yaml('debug') } }))).toMatchObject({ solved: true });
    expect(check(outcome({ files: { 'settings.yaml': yaml('info') } }))).toEqual({
      solved: false,
      reason: 'logging.level is "info", not "debug"',
    });
  });

  it('a question is not solved by an answer that changed the files, however right', () => {
    const check = taskById('count').check;

    expect(check(outcome({ answer: 'data.txt has 37 lines.' }))).toMatchObject({ solved: true });
    expect(
      check(outcome({ answer: 'data.txt has 37 lines.', changes: { ...NO_CHANGES, modified: ['data.txt'] } }))
    ).toEqual({ solved: false, reason: 'files changed: modified data.txt' });
  });

  it('the read-only task needs both: nothing changed, and an answer that says it could not', () => {
    const check = taskById('read-only').check;

    expect(check(outcome({ answer: 'I cannot write to notes.txt: this session is read-only.' }))).toMatchObject({
      solved: true,
    });
    expect(check(outcome({ answer: "Added 'buy milk' to notes.txt." }))).toMatchObject({ solved: false });
  });

  it('the .gitignore task accepts the usual spellings', () => {
    const check = taskById('gitignore').check;
    const changes = { ...NO_CHANGES, added: ['.gitignore'] };

    expect(check(outcome({ changes, files: { '.gitignore': '__pycache__/\n*.py[cod]\n' } }))).toMatchObject({
      solved: true,
    });
    expect(check(outcome({ changes, files: { '.gitignore': '__pycache__/\n' } }))).toEqual({
      solved: false,
      reason: '.gitignore misses *.pyc',
    });
  });
});

describe('eval judgement and report', () => {
  it('a task that did its work but ended failed is not solved, and says both', () => {
    const verdict = { solved: true, reason: 'the tests pass' };

    expect(
      judge('done', { status: 'failed', error: 'ModelOutputInvalid: bad plan', timedOut: false }, verdict)
    ).toEqual({
      solved: false,
      reason: 'ended failed: ModelOutputInvalid: bad plan; the tests pass',
    });
    expect(judge('refused', { status: 'failed', error: 'read-only', timedOut: false }, verdict)).toEqual(verdict);
    expect(judge('done', { status: 'cancelled', error: null, timedOut: true }, verdict).solved).toBe(false);
  });

  it('the target is met at 80 % solved with every task under 5 minutes', () => {
    const five = (solvedCount: number, seconds = 60) =>
      Array.from({ length: 5 }, (_, i) => record({ id: `t${i}`, solved: i < solvedCount, seconds }));

    expect(summarise(five(4))).toMatchObject({ solved: 4, percent: 80, withinTime: 5, met: true });
    expect(summarise(five(3)).met).toBe(false);
    expect(summarise(five(5, 301))).toMatchObject({ withinTime: 0, met: false });
  });

  it('EVAL.md has the model, the machine, a row per task and the total', () => {
    const run: EvalRun = {
      date: '2026-01-02T03:04:05.000Z',
      commit: 'abc1234',
      model: { name: 'Qwen', file: 'q.gguf', sha256: 'f00d' },
      server: { name: "llama.cpp's server", threads: 2, ctx: 8192, nPredict: 512 },
      machine: { cores: 2, cpu: 'cpu', memGiB: 8, node: 'v20', loadStart: 6, loadEnd: 1 },
      subset: null,
      tasks: [
        record({ id: 'hello', solved: true, reason: 'prints hello world' }),
        record({ id: 'calc', solved: false, reason: 'ended failed: x | y', status: 'failed' }),
      ],
    };

    const md = renderMarkdown(run);

    expect(md).toContain('`q.gguf` (sha256 `f00d`)');
    expect(md).toContain('2 cores');
    expect(md).toContain('shared with other work');
    expect(md).toContain('| calc | c | no | ended failed: x \\| y | failed | 10 | 3 | 100 / 20 |');
    expect(md).toContain('**Solved 1 of 2 (50 %)**');
    expect(md).toContain('Target met: **no**');
  });

  it('a subset is chosen by id, and an unknown id is named', () => {
    expect(selectTasks('calc, hello').map((t) => t.id)).toEqual(['hello', 'calc']);
    expect(selectTasks('').length).toBe(TASKS.length);
    expect(() => selectTasks('hello,nope')).toThrow(/unknown eval task\(s\): nope/);
  });

  it('the suite covers at least 12 tasks with distinct ids', () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(12);
    expect(new Set(TASKS.map((t) => t.id)).size).toBe(TASKS.length);
  });
});
