/**
 * The eval's `dev` half: the tasks to tune on. A prompt or heuristic change is kept only if the `holdout` half
 * (./tasks-holdout.ts, the same kinds of work with other content and wording) does not drop.
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
} from './checks';
import {
  answered,
  answerOf,
  catches,
  changedOnlyWithin,
  inCopy,
  kept,
  lineRange,
  mentionsAmount,
  namesAll,
  pythonTests,
  said,
  testsPassed,
  type EvalTask,
} from './task-kit';

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

/** The first tasks of the suite, kept as they were. */
const FIRST: EvalTask[] = [
  {
    id: 'hello',
    split: 'dev',
    categories: ['python'],
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
    split: 'dev',
    categories: ['python'],
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
    split: 'dev',
    categories: ['python'],
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
    split: 'dev',
    categories: ['config'],
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
    split: 'dev',
    categories: ['config'],
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
    split: 'dev',
    categories: ['search', 'python'],
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
    split: 'dev',
    categories: ['search'],
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
    split: 'dev',
    categories: ['data'],
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
    split: 'dev',
    categories: ['python'],
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
    split: 'dev',
    categories: ['python'],
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
    split: 'dev',
    categories: ['ask-user'],
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
    split: 'dev',
    categories: ['read-only'],
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
    split: 'dev',
    categories: ['python', 'data'],
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
    split: 'dev',
    categories: ['config'],
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

const SLUG_JS = `'use strict';

/** Turns a title into a URL slug: "Hello, World!" -> "hello-world". */
function slugify(title) {
  return title
    .trim()
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

module.exports = { slugify };
`;

const SLUG_TEST = `const assert = require('node:assert');
const { slugify } = require('../slug');

assert.strictEqual(slugify('Hello, World!'), 'hello-world');
assert.strictEqual(slugify('  Node.js   Tips & Tricks '), 'node-js-tips-tricks');
assert.strictEqual(slugify('already-a-slug'), 'already-a-slug');
console.log('slug tests passed');
`;

const NOTES = {
  'notes/monday.txt': 'Call the plumber about the kitchen sink.\n',
  'notes/tuesday.txt': 'Dentist at 10:30.\nBuy printer paper.\n',
  'notes/ideas.md': '# Ideas\n\n- a bird feeder camera\n',
  'README.md': '# notes\n\nPersonal notes, one file a day.\n',
};

const WEATHER_README = `# weatherlog

Collects readings from a backyard weather station and plots them.

## Usage

    python3 -m weatherlog --station garden

## License

MIT
`;

/** A price list of 50 products, one small function each: 253 lines. */
const PRODUCTS = [
  'birdseed',
  'bulb_planter',
  'compost_bin',
  'garden_gloves',
  'garden_hose',
  'grass_seed',
  'hedge_shears',
  'hoe',
  'hose_reel',
  'kneeling_pad',
  'lawn_edger',
  'leaf_rake',
  'loppers',
  'mulch_bag',
  'netting',
  'plant_labels',
  'plant_pot',
  'potting_soil',
  'pruning_saw',
  'rain_gauge',
  'seed_tray',
  'secateurs',
  'slug_pellets',
  'spade',
  'walnut_oil',
  'sprinkler',
  'string_line',
  'sun_shade',
  'tomato_cage',
  'trellis',
  'trowel',
  'twine',
  'watering_can',
  'weed_fabric',
  'weeder',
  'wheelbarrow',
  'wind_chime',
  'window_box',
  'wire_cutter',
  'wood_stain',
  'worm_farm',
  'yard_broom',
  'bamboo_canes',
  'bird_bath',
  'cold_frame',
  'dibber',
  'fork',
  'garden_twine',
  'hand_rake',
  'hanging_basket',
];
const priceOf = (i: number) => (Math.round((3 + ((i * 37) % 90) + ((i * 13) % 100) / 100) * 100) / 100).toFixed(2);
const productFunction = (name: string, i: number) =>
  `def price_of_${name}():\n    """Price of one ${name.replace(/_/g, ' ')}, in euros."""\n    return ${priceOf(i)}\n`;
const CATALOG_PY =
  '"""Price list of the garden shop, one function per product (generated from the old spreadsheet)."""\n\n\n' +
  PRODUCTS.map(productFunction).join('\n\n');
const WALNUT = productFunction('walnut_oil', PRODUCTS.indexOf('walnut_oil'));

const LOGS = {
  'server.log': '2026-04-01 10:00:01 INFO listening on :8000\n2026-04-01 10:02:13 WARN slow request /orders\n',
  'worker.log': '2026-04-01 10:00:03 INFO worker 1 up\n',
  'debug.log': 'cache miss: orders:17\ncache hit: orders:17\n',
  'app.py': 'print("the app")\n',
  'notes.txt': 'server.log and worker.log rotate weekly\n',
};

const ENV_FILES = {
  '.env': 'APP_ENV=staging\nDB_HOST=db.staging.internal\nDB_PORT=5433\nDB_USER=app\nDB_PASSWORD=s3cr3t-staging\n',
  'config.py':
    'import os\n\nDB_HOST = os.environ.get("DB_HOST", "localhost")\nDB_PORT = int(os.environ.get("DB_PORT", "5432"))\n',
  'README.md': '# orders\n\nSettings come from `.env`.\n',
};

const WORDCOUNT_PY = `import string


def count_words(text):
    """Counts each word of \`text\`, ignoring case and punctuation: {"the": 2, "cat": 1}."""
    cleaned = text.lower().translate(str.maketrans("", "", string.punctuation))
    counts = {}
    for word in cleaned.split():
        counts[word] = counts.get(word, 0) + 1
    return counts
`;

const DE_FILES = {
  'app.py':
    'import json\n\nwith open("config/defaults.json", encoding="utf-8") as f:\n    CONFIG = json.load(f)\n\nprint(CONFIG)\n',
  'README.md': '# uploader\n\nReads its defaults from config/defaults.json.\n',
};

const VENTES_CSV = `date,region,produit,montant
2026-02-02,Nord,chaises,120.50
2026-02-02,Sud,tables,455.00
2026-02-03,Nord,tables,310.25
2026-02-04,Est,lampes,75.90
2026-02-05,Nord,lampes,89.25
2026-02-05,Sud,chaises,60.00
2026-02-06,Nord,étagères,420.00
2026-02-07,Est,tables,298.10
`;

const NESTED = {
  'services/payments/client.py':
    'import requests\n\nBASE_URL = "https://api.internal.example/v2"\n\n\ndef charge(order):\n    return requests.post(f"{BASE_URL}/charges", json=order, timeout=10)\n',
  'services/payments/refunds/worker.py':
    'import requests\n\n\ndef refund(charge_id):\n    return requests.post("https://api.internal.example/v2/refunds", json={"charge": charge_id}, timeout=10)\n',
  'services/shipping/client.py':
    'import requests\n\nBASE_URL = "https://ship.example.com"\n\n\ndef label(order):\n    return requests.post(f"{BASE_URL}/labels", json=order, timeout=10)\n',
  'scripts/tools/sync/run.py': 'from services.payments.client import charge\n\nprint(charge({"id": 1}))\n',
  'README.md': '# shop backend\n\nPayments, refunds and shipping.\n',
};

const NEW: EvalTask[] = [
  {
    id: 'js-slug',
    split: 'dev',
    categories: ['javascript'],
    covers: 'fix a Node module so its test passes, test untouched',
    prompt:
      'node test/slug.test.js blows up with an AssertionError. Please fix slugify in slug.js (leave the test alone) and make sure the test passes.',
    files: {
      'slug.js': SLUG_JS,
      'test/slug.test.js': SLUG_TEST,
      'package.json': '{ "name": "slugs", "private": true }\n',
    },
    expect: 'done',
    async check(o) {
      if (o.read('test/slug.test.js') !== SLUG_TEST) return unsolved('test/slug.test.js was changed');
      const r = await o.run(['node', 'test/slug.test.js']);
      if (r.code !== 0) return unsolved(`node test/slug.test.js ${said(r)}`);
      const more = await o.run([
        'node',
        '-e',
        "const a=require('node:assert');const {slugify}=require('./slug');" +
          "a.strictEqual(slugify('Top 10 APIs'),'top-10-apis');a.strictEqual(slugify('ABC  def'),'abc-def');",
      ]);
      return more.code === 0 ? solved('the test passes, and slugify lowercases') : unsolved(`slugify: ${said(more)}`);
    },
  },
  {
    id: 'sh-backup',
    split: 'dev',
    categories: ['shell'],
    covers: 'write a shell script that copies some files',
    prompt:
      "Write me a bash script called backup.sh that copies all the .txt files from notes/ into a folder named backup/ (it should create backup/ if it doesn't exist). Only .txt files.",
    files: NOTES,
    expect: 'done',
    async check(o) {
      if (o.read('backup.sh') === undefined)
        return unsolved(`backup.sh was not created (${describeChanges(o.changes)})`);
      const notesKept = kept(o, NOTES, Object.keys(NOTES));
      if (!notesKept.solved) return notesKept;
      const r = await o.run(
        inCopy(
          'rm -rf backup; bash backup.sh >/dev/null; bash backup.sh >/dev/null; ' +
            'cmp notes/monday.txt backup/monday.txt; cmp notes/tuesday.txt backup/tuesday.txt; ' +
            'test ! -e backup/ideas.md || { echo "ideas.md was copied too"; exit 1; }; echo COPIED'
        )
      );
      return r.code === 0 && r.stdout.includes('COPIED')
        ? solved('backup.sh copies the two .txt files (twice in a row), not the .md')
        : unsolved(`running backup.sh in a copy ${said(r)}`);
    },
  },
  {
    id: 'md-install',
    split: 'dev',
    categories: ['docs'],
    covers: 'add a section to a README in the right place',
    prompt:
      'Our README doesn\'t say how to install anything. Add an "Installation" section between the intro and Usage that says to run pip install -r requirements.txt (in a code block).',
    files: { 'README.md': WEATHER_README, 'requirements.txt': 'matplotlib>=3.8\n' },
    expect: 'done',
    check(o) {
      const text = o.read('README.md') ?? '';
      const lines = text.split('\n');
      const install = lines.findIndex((l) => /^#{2,3}\s+Installation\b/i.test(l));
      const usage = lines.findIndex((l) => /^##\s+Usage\b/.test(l));
      if (install < 0) return unsolved('README.md has no Installation heading');
      if (usage < 0 || install > usage || install < 2)
        return unsolved('the Installation section is not between the intro and Usage');
      const section = lines.slice(install + 1, usage);
      const command = /pip3? install -r requirements\.txt/;
      const fenced =
        section
          .join('\n')
          .match(/```[^\n]*\n([\s\S]*?)```/g)
          ?.some((b) => command.test(b)) ?? false;
      const indented = section.some((l) => /^(\t| {4})/.test(l) && command.test(l));
      if (!fenced && !indented)
        return unsolved('the Installation section has no code block with pip install -r requirements.txt');
      const original = WEATHER_README.split('\n').filter((l) => l.trim());
      let at = 0;
      for (const line of lines) if (at < original.length && line === original[at]) at++;
      if (at < original.length) return unsolved(`a line of the README was lost or changed: "${original[at]}"`);
      return allOf(
        onlyChanged(o.changes, ['README.md']),
        solved('Installation section with the command, before Usage')
      );
    },
  },
  {
    id: 'long-price',
    split: 'dev',
    categories: ['long-file', 'python'],
    covers: 'change one function in the middle of a 250-line file',
    prompt:
      "catalog.py is long — find price_of_walnut_oil and change its price to 12.40. Don't touch any other product.",
    files: { 'catalog.py': CATALOG_PY },
    expect: 'done',
    async check(o) {
      const text = o.read('catalog.py');
      if (text === undefined) return unsolved('catalog.py is gone');
      const [from, to] = lineRange(CATALOG_PY, WALNUT);
      const only = changedOnlyWithin(CATALOG_PY, text, from, to);
      if (!only.solved) return only;
      const r = await o.run([
        'python3',
        '-c',
        'import catalog as c; assert c.price_of_walnut_oil() == 12.4, c.price_of_walnut_oil(); ' +
          `assert c.price_of_spade() == ${priceOf(PRODUCTS.indexOf('spade'))}; print("ok")`,
      ]);
      return r.code === 0
        ? solved(`price_of_walnut_oil() == 12.4; ${only.reason}`)
        : unsolved(`checking prices: ${said(r)}`);
    },
  },
  {
    id: 'mv-logs',
    split: 'dev',
    categories: ['files'],
    covers: 'move files into a new folder',
    prompt:
      'There are .log files lying around in the top folder. Move them into a logs/ directory (make it), keep their contents.',
    files: LOGS,
    expect: 'done',
    check(o) {
      const logs = ['debug.log', 'server.log', 'worker.log'];
      for (const log of logs) {
        if (o.read(log) !== undefined) return unsolved(`${log} is still in the top folder`);
        if (o.read(`logs/${log}`) !== LOGS[log as keyof typeof LOGS])
          return unsolved(`logs/${log} is missing or not the same as ${log} was`);
      }
      const others = kept(o, LOGS, ['app.py', 'notes.txt']);
      if (!others.solved) return others;
      const extra = o.changes.added.filter((p) => !logs.includes(p.replace(/^logs\//, '')));
      return extra.length || o.changes.modified.length
        ? unsolved(`more changed: ${describeChanges({ ...o.changes, removed: [] })}`)
        : solved('the three logs are in logs/, unchanged');
    },
  },
  {
    id: 'env-port',
    split: 'dev',
    categories: ['permission', 'config'],
    covers: 'read a value from .env (asked for, allowed once)',
    prompt: 'What database port is set in my .env file?',
    files: ENV_FILES,
    expect: 'done',
    check(o) {
      return answered(o, (a) => mentionsNumber(a, 5433), '5433');
    },
  },
  {
    id: 'test-words',
    split: 'dev',
    categories: ['write-test', 'python'],
    covers: 'write tests that pass and catch broken versions',
    prompt:
      'I need tests for count_words in wordcount.py. Put them in test_wordcount.py, cover at least an empty string and text with punctuation, and run them.',
    files: { 'wordcount.py': WORDCOUNT_PY },
    expect: 'done',
    async check(o) {
      if (o.read('test_wordcount.py') === undefined)
        return unsolved(`test_wordcount.py was not created (${describeChanges(o.changes)})`);
      if (o.read('wordcount.py') !== WORDCOUNT_PY) return unsolved('wordcount.py was changed');
      const tests = pythonTests('test_wordcount.py', 'test_wordcount');
      const r = await o.run(inCopy(tests));
      if (!testsPassed(r))
        return unsolved(`the tests do not pass on wordcount.py: ${testFailure(r.stdout || r.stderr)}`);
      return allOf(
        await catches(
          o,
          'wordcount.py',
          WORDCOUNT_PY.replace('text.lower().translate(str.maketrans("", "", string.punctuation))', 'text.lower()'),
          tests,
          'punctuation is kept'
        ),
        await catches(
          o,
          'wordcount.py',
          WORDCOUNT_PY.replace('cleaned.split()', 'cleaned.split(" ")'),
          tests,
          'an empty string counts one word ""'
        ),
        solved('the tests pass, and fail when punctuation is kept or "" counts as a word')
      );
    },
  },
  {
    id: 'de-json',
    split: 'dev',
    categories: ['non-english', 'config'],
    covers: 'a request in German to create a JSON file',
    prompt: 'Leg bitte eine Datei config/defaults.json an, mit timeout 30, retries 3 und region "eu-central".',
    files: DE_FILES,
    expect: 'done',
    check(o) {
      const text = o.read('config/defaults.json');
      if (text === undefined) return unsolved(`config/defaults.json was not created (${describeChanges(o.changes)})`);
      let value: Record<string, unknown>;
      try {
        value = JSON.parse(text) as Record<string, unknown>;
      } catch (err) {
        return unsolved(`config/defaults.json is not JSON (${(err as Error).message})`);
      }
      const keys = Object.keys(value ?? {}).sort();
      if (keys.join() !== 'region,retries,timeout') return unsolved(`its keys are ${keys.join(', ') || 'none'}`);
      const num = (x: unknown) => (typeof x === 'string' && /^\d+$/.test(x) ? Number(x) : x);
      if (num(value.timeout) !== 30 || num(value.retries) !== 3 || value.region !== 'eu-central')
        return unsolved(`it holds ${oneLine(JSON.stringify(value), 100)}`);
      return allOf(
        onlyChanged(o.changes, ['config/defaults.json']),
        solved('timeout 30, retries 3, region eu-central')
      );
    },
  },
  {
    id: 'fr-csv',
    split: 'dev',
    categories: ['non-english', 'data'],
    covers: 'a question in French that needs a sum over CSV rows',
    prompt: "Dans ventes.csv, à combien s'élève le total de la colonne montant pour la région Nord ?",
    files: { 'ventes.csv': VENTES_CSV },
    expect: 'done',
    check(o) {
      return answered(o, (a) => mentionsAmount(a, 940), '940');
    },
  },
  {
    id: 'grep-url',
    split: 'dev',
    categories: ['search'],
    covers: 'find every file with a string, folders deep',
    prompt:
      'Somewhere in this repo the URL api.internal.example is hard-coded. Find every file that has it — list the paths.',
    files: NESTED,
    expect: 'done',
    check(o) {
      return allOf(
        unchanged(o.changes),
        namesAll(answerOf(o), ['payments/client.py', 'refunds/worker.py'], ['shipping/client.py', 'sync/run.py'])
      );
    },
  },
];

export const DEV_TASKS: readonly EvalTask[] = [...FIRST, ...NEW];
