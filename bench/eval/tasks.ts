/**
 * The eval's tasks: what a user would ask a coding agent on a small project, each with its fixture files, the
 * prompt as a user types it, and a checker that judges the real outcome (the files on disk afterwards, commands
 * run by the checker itself, the value in the answer). Each runs in a fresh project directory.
 */
import { parse as parseYaml } from 'yaml';
import {
  allOf,
  changedKeys,
  describeChanges,
  mentionsNumber,
  namesTheFile,
  nothingChanged,
  oneLine,
  onlyChanged,
  saysNoWriteAccess,
  solved,
  testFailure,
  unchanged,
  unsolved,
  type FileChanges,
  type Verdict,
} from './checks';
import type { RunResult } from './project';

/** What a checker sees of a finished task. */
export interface Outcome {
  status: string;
  /** The task's answer (null when it composed none). */
  answer: string | null;
  error: string | null;
  changes: FileChanges;
  /** A project file's content now, or undefined when it is not there. */
  read(rel: string): string | undefined;
  /** Runs a command in the project (the checker's own run, sandboxed). */
  run(argv: readonly string[]): Promise<RunResult>;
}

export interface EvalTask {
  id: string;
  /** What the task exercises, for the report. */
  covers: string;
  prompt: string;
  files: Readonly<Record<string, string>>;
  toolAccess?: 'full' | 'read_only';
  /** How the user answers any question the task asks (the fact the prompt leaves out, or "your call"). */
  answer?: string;
  /** `done`: the task must end done; `refused`: it must not do what was asked (done or failed both count). */
  expect: 'done' | 'refused';
  check(outcome: Outcome): Promise<Verdict> | Verdict;
}

/** The answer of a user who has nothing to add. */
export const DEFAULT_ANSWER = 'Use your best judgement: everything you need is in the project.';

const answerOf = (o: Outcome) => o.answer ?? '';

/** The output of a command the checker ran, for a reason line. */
const said = (r: RunResult) =>
  r.code === 0 ? `printed "${oneLine(r.stdout, 80)}"` : `exited ${r.code}: ${oneLine(r.stderr || r.stdout, 120)}`;

const CALC_TESTS = `import unittest

from calc import add, multiply


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
        self.assertEqual(add(-1, 1), 0)

    def test_multiply(self):
        self.assertEqual(multiply(4, 5), 20)


if __name__ == "__main__":
    unittest.main()
`;

const FRUITS = ['apple', 'banana', 'cherry', 'damson', 'elderberry', 'fig', 'grape', 'huckleberry'];
const DATA_LINES = 37;

const CONFIG_JSON = {
  name: 'inventory-service',
  port: 8080,
  debug: false,
  database: { host: 'localhost', name: 'inventory' },
};

const SETTINGS_YAML = `app:
  name: inventory-service
  workers: 2
logging:
  level: info
  file: logs/app.log
`;

export const TASKS: readonly EvalTask[] = [
  {
    id: 'hello',
    covers: 'create a file and run it',
    prompt: 'Create hello.py that prints hello world, then run it.',
    files: { 'README.md': '# scratch\n' },
    expect: 'done',
    async check(o) {
      if (o.read('hello.py') === undefined) return unsolved(`hello.py was not created (${describeChanges(o.changes)})`);
      const r = await o.run(['python3', 'hello.py']);
      return /^hello,? world!?$/i.test(r.stdout.trim())
        ? solved('python3 hello.py prints hello world')
        : unsolved(`python3 hello.py ${said(r)}`);
    },
  },
  {
    id: 'calc',
    covers: 'fix a bug so its test passes, and run the test',
    prompt: 'The tests in test_calc.py fail. Fix the bug in calc.py so that they pass, then run the tests.',
    files: {
      'calc.py': 'def add(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n',
      'test_calc.py': CALC_TESTS,
    },
    expect: 'done',
    async check(o) {
      if (o.read('test_calc.py') !== CALC_TESTS) return unsolved('test_calc.py was changed (the bug is in calc.py)');
      const r = await o.run(['python3', '-m', 'unittest', '-q', 'test_calc']);
      return r.code === 0
        ? solved('the tests pass')
        : unsolved(`the tests still fail: ${testFailure(r.stderr || r.stdout)}`);
    },
  },
  {
    id: 'rename',
    covers: 'an edit across two files, then run',
    prompt:
      'Rename the function greet to welcome in greetings.py and main.py, then run main.py to check it still works.',
    files: {
      'greetings.py': 'def greet(name):\n    return f"Hello, {name}!"\n',
      'main.py': 'from greetings import greet\n\nprint(greet("Ada"))\n',
    },
    expect: 'done',
    async check(o) {
      const left = ['greetings.py', 'main.py'].filter((f) => /\bgreet\b/.test(o.read(f) ?? 'greet'));
      if (left.length) return unsolved(`greet is still in ${left.join(' and ')} (or the file is gone)`);
      if (!/def welcome\(/.test(o.read('greetings.py') ?? '')) return unsolved('greetings.py defines no welcome()');
      const r = await o.run(['python3', 'main.py']);
      return r.stdout.trim() === 'Hello, Ada!'
        ? solved('renamed in both files; main.py prints Hello, Ada!')
        : unsolved(`python3 main.py ${said(r)}`);
    },
  },
  {
    id: 'json',
    covers: 'edit a JSON file',
    prompt: 'Change the port in config.json to 9090.',
    files: { 'config.json': `${JSON.stringify(CONFIG_JSON, null, 2)}\n`, 'app.py': 'import json\n' },
    expect: 'done',
    check(o) {
      let value: unknown;
      try {
        value = JSON.parse(o.read('config.json') ?? '');
      } catch (err) {
        return unsolved(`config.json is not valid JSON any more (${(err as Error).message})`);
      }
      const changed = changedKeys(CONFIG_JSON, value);
      if ((value as { port?: unknown }).port !== 9090)
        return unsolved(`port is ${JSON.stringify((value as { port?: unknown }).port)}, not 9090`);
      if (changed.join() !== 'port') return unsolved(`other keys changed too: ${changed.join(', ')}`);
      return allOf(onlyChanged(o.changes, ['config.json']), solved('port is 9090, nothing else changed'));
    },
  },
  {
    id: 'yaml',
    covers: 'edit a YAML file',
    prompt: 'Set the logging level in settings.yaml to debug.',
    files: { 'settings.yaml': SETTINGS_YAML },
    expect: 'done',
    check(o) {
      let value: unknown;
      try {
        value = parseYaml(o.read('settings.yaml') ?? '');
      } catch (err) {
        return unsolved(`settings.yaml is not valid YAML any more (${oneLine((err as Error).message, 80)})`);
      }
      const changed = changedKeys(parseYaml(SETTINGS_YAML), value);
      const level = (value as { logging?: { level?: unknown } } | null)?.logging?.level;
      if (level !== 'debug') return unsolved(`logging.level is ${JSON.stringify(level)}, not "debug"`);
      if (changed.join() !== 'logging.level') return unsolved(`other keys changed too: ${changed.join(', ')}`);
      return solved('logging.level is debug, nothing else changed');
    },
  },
  {
    id: 'find-class',
    covers: 'find where something is defined',
    prompt: 'Which file defines the class Circle?',
    files: {
      'src/shapes.py':
        'import math\n\n\nclass Circle:\n    def __init__(self, r):\n        self.r = r\n\n    def area(self):\n        return math.pi * self.r ** 2\n\n\nclass Square:\n    def __init__(self, side):\n        self.side = side\n',
      'src/app.py': 'from shapes import Circle\n\nprint(Circle(2).area())\n',
      'src/report.py': 'def describe(shape):\n    return f"{type(shape).__name__} with area {shape.area():.2f}"\n',
    },
    expect: 'done',
    check(o) {
      return allOf(unchanged(o.changes), namesTheFile(answerOf(o), 'shapes.py', ['app.py', 'report.py']));
    },
  },
  {
    id: 'todo',
    covers: 'search the files for a TODO',
    prompt: 'Is there a TODO left anywhere in this project? Tell me which file it is in.',
    files: {
      'parser.py': 'def parse(text):\n    # TODO: handle empty input\n    return text.split(",")\n',
      'report.py': 'def report(rows):\n    return "\\n".join(rows)\n',
      'utils.py': 'def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n',
    },
    expect: 'done',
    check(o) {
      return allOf(unchanged(o.changes), namesTheFile(answerOf(o), 'parser.py', ['report.py', 'utils.py']));
    },
  },
  {
    id: 'count',
    covers: 'count the lines of a file',
    prompt: 'How many lines are in data.txt?',
    files: {
      'data.txt': Array.from({ length: DATA_LINES }, (_, i) => FRUITS[(i * 5) % FRUITS.length]).join('\n') + '\n',
    },
    expect: 'done',
    check(o) {
      return allOf(
        unchanged(o.changes),
        mentionsNumber(answerOf(o), DATA_LINES)
          ? solved(`answer says ${DATA_LINES}`)
          : unsolved(`answer does not say ${DATA_LINES}: "${oneLine(answerOf(o), 100)}"`)
      );
    },
  },
  {
    id: 'explain',
    covers: 'read code and explain what it does',
    prompt: 'Read calc.py and tell me what add(2, 3) returns.',
    files: { 'calc.py': 'def add(a, b):\n    total = a + b\n    return total * 2\n' },
    expect: 'done',
    check(o) {
      return allOf(
        unchanged(o.changes),
        mentionsNumber(answerOf(o), 10)
          ? solved('answer says 10')
          : unsolved(`answer does not say 10: "${oneLine(answerOf(o), 100)}"`)
      );
    },
  },
  {
    id: 'add-function',
    covers: 'add a function and check it',
    prompt: 'Add a function cube(x) to mathutils.py that returns x cubed, and check that cube(3) gives 27.',
    files: { 'mathutils.py': 'def square(x):\n    return x * x\n' },
    expect: 'done',
    async check(o) {
      const r = await o.run([
        'python3',
        '-c',
        'import mathutils as m; assert m.cube(3) == 27 and m.cube(-2) == -8 and m.square(4) == 16; print("ok")',
      ]);
      return allOf(
        onlyChanged(o.changes, ['mathutils.py']),
        r.code === 0 ? solved('cube(3) == 27, cube(-2) == -8, square kept') : unsolved(`checking cube: ${said(r)}`)
      );
    },
  },
  {
    id: 'ask-name',
    covers: 'a fact only the user knows (the answer comes through clarify)',
    prompt: 'Create a file owner.txt that contains my full name.',
    files: { 'README.md': '# team tools\n\nScripts for the team.\n' },
    answer: 'My full name is Ada Lovelace.',
    expect: 'done',
    check(o) {
      const text = o.read('owner.txt');
      if (text === undefined) return unsolved(`owner.txt was not created (${describeChanges(o.changes)})`);
      return /ada lovelace/i.test(text)
        ? solved('owner.txt holds Ada Lovelace')
        : unsolved(`owner.txt holds "${oneLine(text, 60)}"`);
    },
  },
  {
    id: 'read-only',
    covers: 'a write that read-only access must refuse',
    prompt: "Add 'buy milk' to my shopping list in notes.txt.",
    files: { 'notes.txt': 'Shopping list:\n- bread\n- eggs\n' },
    toolAccess: 'read_only',
    expect: 'refused',
    check(o) {
      if (!nothingChanged(o.changes)) return unsolved(`files changed under read_only: ${describeChanges(o.changes)}`);
      const told = `${o.answer ?? ''}\n${o.error ?? ''}`;
      return saysNoWriteAccess(told)
        ? solved('nothing changed, and it says it has no write access')
        : unsolved(`nothing changed, but the answer does not say it may not write: "${oneLine(told, 120)}"`);
    },
  },
  {
    id: 'run-script',
    covers: 'run a script and report its output',
    prompt: 'Run stats.py and tell me the average it prints.',
    files: { 'stats.py': 'readings = [38, 41, 45, 46]\nprint("average:", sum(readings) / len(readings))\n' },
    expect: 'done',
    check(o) {
      return allOf(
        unchanged(o.changes),
        mentionsNumber(answerOf(o), 42.5)
          ? solved('answer says 42.5')
          : unsolved(`answer does not say 42.5: "${oneLine(answerOf(o), 100)}"`)
      );
    },
  },
  {
    id: 'gitignore',
    covers: 'create a config file from a description',
    prompt: "Add a .gitignore that ignores Python's __pycache__ folders and .pyc files.",
    files: { 'app.py': 'print("app")\n' },
    expect: 'done',
    check(o) {
      const text = o.read('.gitignore');
      if (text === undefined) return unsolved(`.gitignore was not created (${describeChanges(o.changes)})`);
      const lines = text.split('\n').map((l) => l.trim());
      const cache = lines.some((l) => /^(\*\*\/)?\/?__pycache__(\/(\*\*?)?)?$/.test(l));
      const pyc = lines.some((l) => /^(\*\*\/)?\*\.py(c|\[[cdo]+\])$/.test(l));
      if (!cache || !pyc)
        return unsolved(
          `.gitignore ${cache ? '' : 'misses __pycache__'}${!cache && !pyc ? ' and ' : ''}${pyc ? '' : 'misses *.pyc'}`
        );
      return allOf(onlyChanged(o.changes, ['.gitignore']), solved('.gitignore ignores __pycache__ and *.pyc'));
    },
  },
];

/** The tasks named in `list` (comma-separated ids; empty: all), or an error naming the unknown ids. */
export function selectTasks(list: string | undefined, all: readonly EvalTask[] = TASKS): readonly EvalTask[] {
  const ids = (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!ids.length) return all;
  const unknown = ids.filter((id) => !all.some((t) => t.id === id));
  if (unknown.length)
    throw new Error(`unknown eval task(s): ${unknown.join(', ')} (known: ${all.map((t) => t.id).join(', ')})`);
  return all.filter((t) => ids.includes(t.id));
}
