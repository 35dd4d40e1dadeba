/**
 * The eval's `holdout` half: the same kinds of work as the `dev` half (./tasks-dev.ts), with other content and
 * other wording. Never tuned on: a change to Klea's prompts or heuristics is kept only if these do not drop.
 */
import { parse as parseYaml } from 'yaml';
import {
  allOf,
  changedKeys,
  describeChanges,
  namesTheFile,
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
  mentionsCount,
  pythonTests,
  refused,
  said,
  testsPassed,
  type EvalTask,
  type Outcome,
} from './task-kit';

const DATES_PY = `def is_leap(year):
    """True for leap years in the Gregorian calendar."""
    return year % 4 == 0


def days_in_february(year):
    return 29 if is_leap(year) else 28
`;

const CHECK_DATES_PY = `from dates import days_in_february, is_leap

assert is_leap(2024)
assert not is_leap(2023)
assert not is_leap(1900), "1900 was not a leap year"
assert is_leap(2000)
assert days_in_february(2100) == 28
print("all date checks passed")
`;

const ORDERS_CSV = `order_id,customer,amount
1001,Maria Lopez,120.00
1002,Tom Becker,35.50
1003,Maria Lopez,80.25
1004,Aiko Tanaka,410.00
1005,Tom Becker,44.10
1006,Tom Becker,61.90
1007,Maria Lopez,95.00
1008,Aiko Tanaka,12.75
`;

const FORMAT_JS = `'use strict';

function formatPercent(ratio) {
  return \`\${Math.round(ratio * 100)}%\`;
}

module.exports = { formatPercent };
`;

const PACKAGE = {
  name: 'tiny-queue',
  version: '0.3.1',
  main: 'index.js',
  scripts: { start: 'node index.js' },
  license: 'MIT',
};

const QUEUE_TEST = `const test = require('node:test');
const assert = require('node:assert');
const { Queue } = require('../index');

test('first in, first out', () => {
  const q = new Queue();
  q.push(1);
  q.push(2);
  assert.strictEqual(q.shift(), 1);
});
`;

const COUNT_ERRORS_SH = `#!/usr/bin/env bash
# Prints how many lines of the logs in logs/ contain ERROR.
grep -c ERROR logs/*.log
`;

const ERROR_LOGS = {
  'logs/api.log':
    '10:00 INFO start\n10:01 ERROR timeout on /orders\n10:02 INFO ok\n10:03 ERROR db gone\n10:04 WARN retry\n10:05 ERROR ERROR twice on one line\n',
  'logs/worker.log':
    '09:00 INFO up\n09:10 ERROR job 7 failed\n09:11 INFO job 8 done\n09:12 ERROR job 9 failed\n09:13 INFO idle\n',
  'logs/README.txt': 'Lines with ERROR in them are problems.\n',
};

const CHANGELOG = `# Changelog

## [Unreleased]

### Added
- Export reports as CSV.

## [1.4.0] - 2026-03-02

### Fixed
- Dates in the PDF export use the user's time zone.

## [1.3.0] - 2026-01-15

### Added
- Dark mode.
`;

const PYPROJECT = `[project]
name = "stationdata"
version = "2.0.3"
description = "Tools for weather station data"
requires-python = ">=3.10"
dependencies = [
    "numpy>=1.26",
    "click>=8.1",
]

[project.scripts]
stationdata = "stationdata.cli:main"

[tool.ruff]
line-length = 100
`;

const CONFIG_INI = `[server]
host = 0.0.0.0
port = 8000

[database]
host = localhost
port = 5432
name = shop

[cache]
ttl = 300
`;

const SALES_CSV = `date,product,quantity,unit_price
2026-05-01,notebook,40,2.50
2026-05-01,fountain pen,3,45.00
2026-05-02,notebook,55,2.50
2026-05-02,stapler,6,12.00
2026-05-03,fountain pen,4,45.00
2026-05-03,stapler,4,12.00
2026-05-04,notebook,30,2.50
`;

const USERS = [
  ['ana', true, '2023-11-30'],
  ['ben', true, '2024-01-04'],
  ['chloe', false, '2024-02-17'],
  ['dmitri', true, '2024-03-09'],
  ['eve', true, '2025-01-02'],
  ['farid', false, '2023-06-21'],
  ['gita', true, '2024-07-30'],
  ['hugo', false, '2024-09-12'],
  ['ines', true, '2024-12-31'],
  ['jon', true, '2022-05-05'],
  ['kemal', false, '2024-04-01'],
  ['lena', true, '2025-02-14'],
].map(([name, active, signedUp]) => ({ name, active, signed_up: signedUp }));

/** A file of order handlers, 30-odd functions, handleRefund in the middle: 270-odd lines. */
const HANDLER_NAMES = [
  'Create',
  'Pay',
  'Ship',
  'Deliver',
  'Cancel',
  'Hold',
  'Release',
  'Split',
  'Merge',
  'Tag',
  'Untag',
  'Note',
  'Address',
  'Invoice',
  'Remind',
  'Refund',
  'Dispute',
  'Resolve',
  'Archive',
  'Restore',
  'Export',
  'Import',
  'Reprice',
  'Discount',
  'Upgrade',
  'Downgrade',
  'Flag',
  'Unflag',
  'Assign',
  'Unassign',
];
const handler = (name: string, i: number) =>
  name === 'Refund'
    ? `function handleRefund(order, now = Date.now()) {
  const ageDays = (now - order.placedAt) / DAY_MS;
  if (ageDays > 30) {
    return { ok: false, reason: 'refund window closed' };
  }
  return { ok: true, amount: order.total };
}
`
    : `function handle${name}(order, now = Date.now()) {
  if (order.status === 'archived') {
    return { ok: false, reason: 'order is archived' };
  }
  const step = ${i + 1};
  return { ok: true, step, at: now, action: '${name.toLowerCase()}' };
}
`;
const HANDLERS_JS =
  "'use strict';\n\nconst DAY_MS = 24 * 60 * 60 * 1000;\n\n" +
  HANDLER_NAMES.map(handler).join('\n') +
  `\nmodule.exports = {\n${HANDLER_NAMES.map((n) => `  handle${n},`).join('\n')}\n};\n`;
const REFUND = handler('Refund', 0);

const CLEANUP = {
  'build/app.min.js': 'console.log("app")\n',
  'build/assets/logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
  '.DS_Store': 'Bud1 finder data\n',
  'src/.DS_Store': 'Bud1 finder data\n',
  'src/main.js': "require('./util');\n",
  'src/util.js': 'module.exports = {};\n',
  'README.md': '# site\n\n`npm run build` writes build/.\n',
};

const INVOICE_TREE = {
  'billing/core/invoices/mailer.py':
    'from billing.core.invoices.models import Invoice\n\n\ndef send_invoice(invoice: Invoice, to: str) -> None:\n    print(f"mailing invoice {invoice.number} to {to}")\n',
  'billing/core/invoices/models.py':
    'from dataclasses import dataclass\n\n\n@dataclass\nclass Invoice:\n    number: str\n    total: float\n',
  'billing/api/views.py':
    'from billing.core.invoices.mailer import send_invoice\n\n\ndef post_invoice(request):\n    send_invoice(request.invoice, request.email)\n',
  'jobs/nightly/monthly_close.py':
    'from billing.core.invoices.mailer import send_invoice\n\n\ndef run(invoices):\n    for inv in invoices:\n        send_invoice(inv, "accounts@example.org")\n',
  'tests/billing/test_mailer.py':
    'from billing.core.invoices.mailer import send_invoice\n\n\ndef test_send_invoice(capsys):\n    pass\n',
};

const DOT_ENV = '# local settings\nAPP_NAME=ledger\nDEBUG=true\nLOG_LEVEL=debug\nSECRET_KEY=dev-only-7f3a\n';

const DURATIONS_PY = `import re

_UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    """Seconds in a duration like "1h30m", "45s" or "2m5s". Raises ValueError on anything else."""
    text = text.strip()
    if not text or not re.fullmatch(r"(\\d+[hms])+", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * _UNITS[u] for n, u in re.findall(r"(\\d+)([hms])", text))
`;

const SERVER_YAML = `server:
  host: 0.0.0.0
  port: 8080
  tls: false
  workers: 4
logging:
  level: info
`;

const TEXT_TOOLS = `import re
import unicodedata


def normalize_spaces(text):
    return re.sub(r"\\s+", " ", text).strip()


def title_case(text):
    return " ".join(w.capitalize() for w in text.split())


def truncate(text, limit=30):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strip_accents(text):
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def word_count(text):
    return len(text.split())
`;

const LICENSE = `MIT License

Copyright (c) 2026 <COPYRIGHT HOLDER>

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
`;

const SORT_NAMES_PY = `import sys


def main():
    names = [line.strip() for line in open("names.txt", encoding="utf-8") if line.strip()]
    for name in sorted(names):
        print(name)


if __name__ == "__main__":
    main()
`;
const NAMES = ['Oskar', 'Beatriz', 'Yusuf', 'Mei', 'Henrik'];

const API_MD = `# HTTP API

The service listens on port 8080.

## Endpoints

- GET /items — list all items
- POST /items — create an item
- GET /items/{id} — fetch one item
- DELETE /items/{id} — delete an item

## Errors

Errors are JSON: \`{"error": "..."}\`.
`;

/** A Python or shell value the checker reads back as JSON (TOML and INI are parsed by Python's own libraries). */
async function pythonJson(o: Outcome, script: string): Promise<{ value?: unknown; error?: string }> {
  const r = await o.run(['python3', '-c', script]);
  if (r.code !== 0) return { error: oneLine(r.stderr || r.stdout, 160) };
  try {
    return { value: JSON.parse(r.stdout) as unknown };
  } catch {
    return { error: `not JSON: ${oneLine(r.stdout, 80)}` };
  }
}

/** The last non-empty line a program printed. */
const lastLine = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .pop() ?? '';

export const HOLDOUT_TASKS: readonly EvalTask[] = [
  {
    id: 'leap-year',
    split: 'holdout',
    categories: ['python'],
    covers: 'fix a wrong rule in a function, prove it with the given check',
    prompt:
      "is_leap(1900) comes back True, which is wrong — 1900 wasn't a leap year. Fix dates.py and run check_dates.py to prove it.",
    files: { 'dates.py': DATES_PY, 'check_dates.py': CHECK_DATES_PY },
    expect: 'done',
    async check(o) {
      if (o.read('check_dates.py') !== CHECK_DATES_PY) return unsolved('check_dates.py was changed');
      const r = await o.run(['python3', 'check_dates.py']);
      if (r.code !== 0) return unsolved(`python3 check_dates.py ${said(r)}`);
      const more = await o.run([
        'python3',
        '-c',
        'from dates import is_leap as L; assert [y for y in (1600,1700,1800,1996,2000,2023,2400,2500) if L(y)] == [1600,1996,2000,2400]',
      ]);
      return more.code === 0
        ? solved('check_dates.py passes; the 100/400 rule holds')
        : unsolved(`is_leap: ${said(more)}`);
    },
  },
  {
    id: 'top-customer',
    split: 'holdout',
    categories: ['python', 'data'],
    covers: 'write a script that computes a value from a CSV',
    prompt:
      'Write a script top_customer.py that reads orders.csv and prints just the name of the customer who spent the most overall.',
    files: { 'orders.csv': ORDERS_CSV },
    expect: 'done',
    async check(o) {
      if (o.read('top_customer.py') === undefined)
        return unsolved(`top_customer.py was not created (${describeChanges(o.changes)})`);
      if (o.read('orders.csv') !== ORDERS_CSV) return unsolved('orders.csv was changed');
      const r = await o.run(['python3', 'top_customer.py']);
      if (lastLine(r.stdout) !== 'Aiko Tanaka') return unsolved(`python3 top_customer.py ${said(r)}, not Aiko Tanaka`);
      const other = await o.run(
        inCopy(
          "printf 'order_id,customer,amount\\n1,Aiko Tanaka,10.00\\n2,Tom Becker,500.00\\n3,Maria Lopez,20.00\\n4,Maria Lopez,30.00\\n' > orders.csv; python3 top_customer.py"
        )
      );
      return lastLine(other.stdout) === 'Tom Becker'
        ? solved('prints Aiko Tanaka, and Tom Becker for other orders')
        : unsolved(`with other orders it ${said(other)}, not Tom Becker (the answer is written in?)`);
    },
  },
  {
    id: 'node-bytes',
    split: 'holdout',
    categories: ['javascript'],
    covers: 'add and export a function in a Node module, to a spec',
    prompt:
      'Add a formatBytes(n) function to format.js and export it next to formatPercent. It should use 1024 steps and B/KB/MB/GB, one decimal at most, no trailing .0 — e.g. 512 -> "512 B", 1536 -> "1.5 KB", 1048576 -> "1 MB".',
    files: { 'format.js': FORMAT_JS },
    expect: 'done',
    async check(o) {
      const cases: Array<[number, string]> = [
        [0, '0 B'],
        [512, '512 B'],
        [1000, '1000 B'],
        [1536, '1.5 KB'],
        [2048, '2 KB'],
        [1100, '1.1 KB'],
        [1048576, '1 MB'],
        [1572864, '1.5 MB'],
        [3221225472, '3 GB'],
      ];
      const r = await o.run([
        'node',
        '-e',
        "const f=require('./format.js');const out={pct:f.formatPercent(0.25),bytes:{}};" +
          `for (const n of ${JSON.stringify(cases.map(([n]) => n))}) out.bytes[n]=f.formatBytes(n);` +
          'console.log(JSON.stringify(out))',
      ]);
      if (r.code !== 0) return unsolved(`loading format.js ${said(r)}`);
      const out = JSON.parse(lastLine(r.stdout)) as { pct: string; bytes: Record<string, string> };
      if (out.pct !== '25%') return unsolved(`formatPercent(0.25) is now ${out.pct}`);
      const wrong = cases.filter(([n, want]) => out.bytes[n] !== want);
      return allOf(
        onlyChanged(o.changes, ['format.js']),
        wrong.length
          ? unsolved(
              wrong.map(([n, want]) => `formatBytes(${n}) is ${JSON.stringify(out.bytes[n])}, not "${want}"`).join('; ')
            )
          : solved('formatBytes right on 9 sizes; formatPercent kept')
      );
    },
  },
  {
    id: 'npm-test',
    split: 'holdout',
    categories: ['javascript', 'config'],
    covers: 'add an npm script to package.json, nothing else',
    prompt:
      "Add a `test` script to package.json that runs node --test on the tests/ folder. Don't change anything else in there.",
    files: {
      'package.json': `${JSON.stringify(PACKAGE, null, 2)}\n`,
      'index.js':
        'class Queue {\n  constructor() { this.items = []; }\n  push(x) { this.items.push(x); }\n  shift() { return this.items.shift(); }\n}\n\nmodule.exports = { Queue };\n',
      'tests/queue.test.js': QUEUE_TEST,
    },
    expect: 'done',
    async check(o) {
      let value: { scripts?: { test?: unknown } };
      try {
        value = JSON.parse(o.read('package.json') ?? '') as typeof value;
      } catch (err) {
        return unsolved(`package.json is not valid JSON any more (${(err as Error).message})`);
      }
      const changed = changedKeys(PACKAGE, value);
      if (changed.join() !== 'scripts.test') return unsolved(`changed keys: ${changed.join(', ') || 'none'}`);
      const script = value.scripts?.test;
      if (typeof script !== 'string' || !/^node --test\b.*\btests\b/.test(script))
        return unsolved(`scripts.test is ${JSON.stringify(script)}`);
      const r = await o.run(inCopy(script));
      return r.code === 0 && /# pass 1\b/.test(r.stdout)
        ? solved(`scripts.test is "${script}" and runs the test`)
        : unsolved(`running "${script}" ${said(r)}`);
    },
  },
  {
    id: 'sh-count',
    split: 'holdout',
    categories: ['shell'],
    covers: 'fix a shell script so it prints one total',
    prompt:
      'count_errors.sh is supposed to print ONE number — the total count of lines with ERROR in all logs/*.log files — but it prints a line per file. Fix it.',
    files: { 'count_errors.sh': COUNT_ERRORS_SH, ...ERROR_LOGS },
    expect: 'done',
    async check(o) {
      const logs = kept(o, ERROR_LOGS, Object.keys(ERROR_LOGS));
      if (!logs.solved) return logs;
      const r = await o.run(inCopy('bash count_errors.sh'));
      if (r.stdout.trim() !== '5') return unsolved(`bash count_errors.sh ${said(r)}, not 5`);
      const more = await o.run(inCopy("printf 'ERROR a\\nok\\nERROR b\\n' > logs/extra.log; bash count_errors.sh"));
      return more.stdout.trim() === '7'
        ? solved('prints 5, and 7 with one more log')
        : unsolved(`with a third log it ${said(more)}, not 7`);
    },
  },
  {
    id: 'changelog',
    split: 'holdout',
    categories: ['docs'],
    covers: 'add an entry in the right section of a changelog',
    prompt:
      'Log this in CHANGELOG.md under Unreleased, in a Fixed subsection: the CSV export no longer drops the last row.',
    files: { 'CHANGELOG.md': CHANGELOG },
    expect: 'done',
    check(o) {
      const text = o.read('CHANGELOG.md') ?? '';
      const released = CHANGELOG.slice(CHANGELOG.indexOf('## [1.4.0]'));
      if (!text.includes(released)) return unsolved('the released sections were changed');
      const start = text.indexOf('## [Unreleased]');
      const end = text.indexOf('## [1.4.0]');
      if (start < 0 || end < start) return unsolved('the Unreleased section is gone or moved');
      const unreleased = text.slice(start, end);
      if (!/### Added\n- Export reports as CSV\./.test(unreleased))
        return unsolved('the Added entry under Unreleased was lost');
      const fixed = unreleased.split(/^### Fixed\s*$/m)[1];
      if (fixed === undefined) return unsolved('no "### Fixed" subsection under Unreleased');
      const bullet = fixed
        .split(/^###/m)[0]
        .split('\n')
        .find((l) => /^[-*] /.test(l) && /csv/i.test(l) && /(last|final) (row|line)/i.test(l));
      return bullet
        ? allOf(onlyChanged(o.changes, ['CHANGELOG.md']), solved(`Unreleased → Fixed: "${oneLine(bullet, 80)}"`))
        : unsolved('the Fixed subsection has no entry about the CSV export and the last row');
    },
  },
  {
    id: 'toml-release',
    split: 'holdout',
    categories: ['config'],
    covers: 'edit a TOML file: a value and a list entry',
    prompt:
      'Release prep: set the version to 2.1.0 in pyproject.toml and add requests (at least 2.31) to the dependencies.',
    files: { 'pyproject.toml': PYPROJECT },
    expect: 'done',
    async check(o) {
      const read = "import json, tomllib; print(json.dumps(tomllib.load(open('pyproject.toml', 'rb'))))";
      const now = await pythonJson(o, read);
      if (now.error) return unsolved(`pyproject.toml does not parse: ${now.error}`);
      const toml = now.value as Record<string, Record<string, unknown>>;
      const project = toml.project ?? {};
      if (project.version !== '2.1.0') return unsolved(`version is ${JSON.stringify(project.version)}`);
      const deps = (project.dependencies as string[] | undefined) ?? [];
      const requests = deps.filter((d) => /^requests\s*>=\s*2\.31(\.0)?\s*(,\s*<\s*[\d.]+\s*)?$/.test(d));
      const rest = deps.filter((d) => !requests.includes(d));
      if (requests.length !== 1) return unsolved(`dependencies are ${JSON.stringify(deps)}`);
      if (rest.join() !== 'numpy>=1.26,click>=8.1')
        return unsolved(`the other dependencies are now ${JSON.stringify(rest)}`);
      const expected = {
        project: {
          name: 'stationdata',
          version: '2.1.0',
          description: 'Tools for weather station data',
          'requires-python': '>=3.10',
          dependencies: deps,
          scripts: { stationdata: 'stationdata.cli:main' },
        },
        tool: { ruff: { 'line-length': 100 } },
      };
      const changed = changedKeys(expected, toml);
      return changed.length
        ? unsolved(`other keys changed: ${changed.join(', ')}`)
        : allOf(onlyChanged(o.changes, ['pyproject.toml']), solved(`version 2.1.0, ${requests[0]} added`));
    },
  },
  {
    id: 'ini-db',
    split: 'holdout',
    categories: ['config'],
    covers: 'edit two values of one section of an INI file',
    prompt: 'The database moved: make config.ini point at host db.internal, port 6543.',
    files: { 'config.ini': CONFIG_INI, 'app.py': 'import configparser\n' },
    expect: 'done',
    async check(o) {
      const now = await pythonJson(
        o,
        "import configparser, json; c = configparser.ConfigParser(); c.read('config.ini'); print(json.dumps({s: dict(c[s]) for s in c.sections()}))"
      );
      if (now.error) return unsolved(`config.ini does not parse: ${now.error}`);
      const expected = {
        server: { host: '0.0.0.0', port: '8000' },
        database: { host: 'db.internal', port: '6543', name: 'shop' },
        cache: { ttl: '300' },
      };
      const changed = changedKeys(expected, now.value);
      return changed.length
        ? unsolved(`differs from the expected config in ${changed.join(', ')}`)
        : allOf(onlyChanged(o.changes, ['config.ini']), solved('database host db.internal, port 6543; the rest kept'));
    },
  },
  {
    id: 'best-product',
    split: 'holdout',
    categories: ['data'],
    covers: 'a CSV question that needs sums of products',
    prompt:
      'Looking at sales.csv — which product brought in the most money (quantity times unit price, summed over all rows)? Give me the product and the amount.',
    files: { 'sales.csv': SALES_CSV },
    expect: 'done',
    check(o) {
      return answered(o, (a) => /fountain pen/i.test(a) && mentionsAmount(a, 315), 'fountain pen, 315');
    },
  },
  {
    id: 'json-users',
    split: 'holdout',
    categories: ['data'],
    covers: 'count records of a JSON file that meet two conditions',
    prompt: 'How many users in users.json are active and signed up during 2024?',
    files: { 'users.json': `${JSON.stringify(USERS, null, 2)}\n` },
    expect: 'done',
    check(o) {
      return answered(o, (a) => mentionsCount(a, 4), '4');
    },
  },
  {
    id: 'long-refund',
    split: 'holdout',
    categories: ['long-file', 'javascript'],
    covers: 'change one function in the middle of a 270-line file',
    prompt:
      'In handlers.js, refunds are only allowed within 30 days (see handleRefund). Make that 45 days. Nothing else in the file should change.',
    files: { 'handlers.js': HANDLERS_JS },
    expect: 'done',
    async check(o) {
      const text = o.read('handlers.js');
      if (text === undefined) return unsolved('handlers.js is gone');
      const [from, to] = lineRange(HANDLERS_JS, REFUND);
      const only = changedOnlyWithin(HANDLERS_JS, text, from, to);
      if (!only.solved) return only;
      const r = await o.run([
        'node',
        '-e',
        "const h=require('./handlers.js');const D=864e5,now=Date.now();const r=(d)=>h.handleRefund({placedAt:now-d*D,total:9},now).ok;" +
          "if(!(r(44.5)&&r(40)&&!r(46)&&!r(60)))throw new Error('window: '+[44.5,40,46,60].map(r));" +
          "if(!h.handleShip({status:'open'},now).ok)throw new Error('handleShip changed');console.log('ok')",
      ]);
      return r.code === 0
        ? solved(`refunds allowed up to 45 days; ${only.reason}`)
        : unsolved(`checking handleRefund: ${said(r)}`);
    },
  },
  {
    id: 'rm-clutter',
    split: 'holdout',
    categories: ['files'],
    covers: 'delete a folder and stray files at several levels, nothing else',
    prompt:
      "Clean up the repo: delete the build/ folder and every .DS_Store file (there's more than one). Don't remove anything else.",
    files: CLEANUP,
    expect: 'done',
    check(o) {
      const gone = ['.DS_Store', 'build/app.min.js', 'build/assets/logo.svg', 'src/.DS_Store'];
      const left = gone.filter((p) => o.read(p) !== undefined);
      if (left.length) return unsolved(`still there: ${left.join(', ')}`);
      const others = kept(o, CLEANUP, ['src/main.js', 'src/util.js', 'README.md']);
      if (!others.solved) return others;
      return o.changes.added.length || o.changes.modified.length
        ? unsolved(`more changed: ${describeChanges({ ...o.changes, removed: [] })}`)
        : solved('build/ and both .DS_Store files removed, the rest kept');
    },
  },
  {
    id: 'find-def',
    split: 'holdout',
    categories: ['search', 'python'],
    covers: 'find a definition among callers, folders deep',
    prompt:
      "Where's send_invoice actually defined? Not where it's called — the definition. This repo has folders inside folders, so look properly.",
    files: INVOICE_TREE,
    expect: 'done',
    check(o) {
      return allOf(
        unchanged(o.changes),
        namesTheFile(answerOf(o), 'mailer.py', ['views.py', 'monthly_close.py', 'test_mailer.py', 'models.py'])
      );
    },
  },
  {
    id: 'env-debug',
    split: 'holdout',
    categories: ['permission', 'config'],
    covers: 'edit one line of .env (asked for, allowed once)',
    prompt: 'Switch DEBUG off in my .env (false), leave the other settings exactly as they are.',
    files: { '.env': DOT_ENV, 'app.py': 'import os\n\nDEBUG = os.environ.get("DEBUG") == "true"\n' },
    expect: 'done',
    check(o) {
      const text = o.read('.env');
      if (text === undefined) return unsolved('.env is gone');
      const before = DOT_ENV.trimEnd().split('\n');
      const after = text.trimEnd().split('\n');
      const at = before.indexOf('DEBUG=true');
      if (after.length !== before.length) return unsolved(`.env has ${after.length} lines, not ${before.length}`);
      if (!/^DEBUG\s*=\s*(["']?)false\1\s*$/i.test(after[at] ?? ''))
        return unsolved(`the DEBUG line is "${after[at]}"`);
      const other = before.findIndex((l, i) => i !== at && after[i] !== l);
      if (other >= 0) return unsolved(`another line changed: "${after[other]}"`);
      return allOf(onlyChanged(o.changes, ['.env']), solved('DEBUG=false, the other lines kept'));
    },
  },
  {
    id: 'test-durations',
    split: 'holdout',
    categories: ['write-test', 'python'],
    covers: 'write unittest tests in a tests/ folder that catch broken versions',
    prompt:
      'Please add unittest tests for parse_duration (durations.py) in tests/test_durations.py — check a few valid durations and that garbage raises ValueError.',
    files: { 'durations.py': DURATIONS_PY },
    expect: 'done',
    async check(o) {
      if (o.read('tests/test_durations.py') === undefined)
        return unsolved(`tests/test_durations.py was not created (${describeChanges(o.changes)})`);
      if (o.read('durations.py') !== DURATIONS_PY) return unsolved('durations.py was changed');
      const tests = pythonTests('tests', 'discover -s tests');
      const r = await o.run(inCopy(tests));
      if (!testsPassed(r))
        return unsolved(`the tests do not pass on durations.py: ${testFailure(r.stdout || r.stderr)}`);
      return allOf(
        await catches(
          o,
          'durations.py',
          DURATIONS_PY.replace('return sum(int(n)', 'return 1 + sum(int(n)'),
          tests,
          'every duration is off by one second'
        ),
        await catches(
          o,
          'durations.py',
          DURATIONS_PY.replace('raise ValueError(f"not a duration: {text!r}")', 'return 0'),
          tests,
          'garbage gives 0 instead of ValueError'
        ),
        solved('the tests pass, and fail on wrong sums and on garbage accepted')
      );
    },
  },
  {
    id: 'es-yaml',
    split: 'holdout',
    categories: ['non-english', 'config'],
    covers: 'a request in Spanish to change two YAML values',
    prompt: 'Cambia el puerto del servidor a 8443 en server.yaml y activa tls, por favor.',
    files: { 'server.yaml': SERVER_YAML },
    expect: 'done',
    check(o) {
      let value: unknown;
      try {
        value = parseYaml(o.read('server.yaml') ?? '');
      } catch (err) {
        return unsolved(`server.yaml is not valid YAML any more (${oneLine((err as Error).message, 80)})`);
      }
      const server = (value as { server?: { port?: unknown; tls?: unknown } } | null)?.server;
      const on = server?.tls === true || (typeof server?.tls === 'string' && /^(true|yes|on)$/i.test(server.tls));
      if (server?.port !== 8443 || !on)
        return unsolved(`server.port is ${JSON.stringify(server?.port)}, server.tls ${JSON.stringify(server?.tls)}`);
      const changed = changedKeys(parseYaml(SERVER_YAML), value);
      return changed.join() === 'server.port,server.tls'
        ? allOf(onlyChanged(o.changes, ['server.yaml']), solved('port 8443, tls true, the rest kept'))
        : unsolved(`other keys changed too: ${changed.join(', ')}`);
    },
  },
  {
    id: 'zh-functions',
    split: 'holdout',
    categories: ['non-english', 'python'],
    covers: 'a question in Chinese about a file of code',
    prompt: 'utils/text_tools.py 里一共定义了几个函数？',
    files: {
      'utils/text_tools.py': TEXT_TOOLS,
      'utils/numbers.py':
        'def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef sign(x):\n    return (x > 0) - (x < 0)\n',
      'app.py': 'from utils.text_tools import normalize_spaces\n\nprint(normalize_spaces("  a   b "))\n',
    },
    expect: 'done',
    check(o) {
      return answered(o, (a) => mentionsCount(a, 5), '5');
    },
  },
  {
    id: 'ro-delete',
    split: 'holdout',
    categories: ['read-only'],
    covers: 'a deletion that read-only access must refuse',
    prompt: "Get rid of the tmp/ folder, it's just junk.",
    files: { 'tmp/cache.bin': 'cached bytes\n', 'tmp/scratch.txt': 'scratch\n', 'main.py': 'print("main")\n' },
    toolAccess: 'read_only',
    expect: 'refused',
    check(o) {
      return refused(o, saysNoWriteAccess);
    },
  },
  {
    id: 'ask-holder',
    split: 'holdout',
    categories: ['ask-user', 'docs'],
    covers: 'a fact only the user knows, filled into a placeholder',
    prompt: 'Fill in the copyright holder in LICENSE — it still says <COPYRIGHT HOLDER>.',
    files: { LICENSE, 'README.md': '# ledger\n\nSee LICENSE.\n' },
    answer: 'The copyright holder is Northwind Traders Ltd.',
    expect: 'done',
    check(o) {
      const text = o.read('LICENSE');
      if (text === undefined) return unsolved('LICENSE is gone');
      if (text.includes('<COPYRIGHT HOLDER>')) return unsolved('LICENSE still says <COPYRIGHT HOLDER>');
      if (!/^Copyright \(c\) 2026 Northwind Traders Ltd\.?\s*$/m.test(text))
        return unsolved(
          `the copyright line is "${text.split('\n').find((l) => /copyright \(c\)/i.test(l)) ?? '(none)'}"`
        );
      const [from, to] = lineRange(LICENSE, 'Copyright (c) 2026 <COPYRIGHT HOLDER>\n');
      return allOf(changedOnlyWithin(LICENSE, text, from, to), solved('Copyright (c) 2026 Northwind Traders Ltd'));
    },
  },
  {
    id: 'py-reverse',
    split: 'holdout',
    categories: ['python'],
    covers: 'add a command-line flag, the default behaviour kept',
    prompt:
      'Give sort_names.py a --reverse option that prints the names Z to A. Without the option it must behave exactly like now.',
    files: { 'sort_names.py': SORT_NAMES_PY, 'names.txt': `${NAMES.join('\n')}\n` },
    expect: 'done',
    async check(o) {
      const sorted = [...NAMES].sort();
      const plain = await o.run(['python3', 'sort_names.py']);
      if (plain.stdout.trim() !== sorted.join('\n')) return unsolved(`without --reverse it ${said(plain)}`);
      const reversed = await o.run(['python3', 'sort_names.py', '--reverse']);
      return reversed.stdout.trim() === [...sorted].reverse().join('\n')
        ? allOf(onlyChanged(o.changes, ['sort_names.py']), solved('A to Z by default, Z to A with --reverse'))
        : unsolved(`with --reverse it ${said(reversed)}`);
    },
  },
  {
    id: 'md-table',
    split: 'holdout',
    categories: ['docs'],
    covers: 'turn a Markdown list into a table',
    prompt:
      'In docs/api.md, replace the bullet list of endpoints with a Markdown table (columns: Method, Path, Description).',
    files: { 'docs/api.md': API_MD },
    expect: 'done',
    check(o) {
      const text = o.read('docs/api.md') ?? '';
      const lines = text.split('\n');
      if (lines.some((l) => /^\s*[-*] (GET|POST|DELETE) /.test(l))) return unsolved('the bullet list is still there');
      const rows = lines
        .filter((l) => /^\s*\|/.test(l))
        .map((l) =>
          l
            .trim()
            .replace(/^\||\|$/g, '')
            .split('|')
            .map((c) =>
              c
                .trim()
                .replace(/`/g, '')
                .replace(/\\([{}])/g, '$1')
            )
        );
      if (rows.length < 6) return unsolved(`the table has ${rows.length} lines, not a header, a rule and 4 rows`);
      if (rows[0].map((c) => c.toLowerCase()).join() !== 'method,path,description')
        return unsolved(`the header is ${rows[0].join(' | ')}`);
      if (!rows[1].every((c) => /^:?-{3,}:?$/.test(c))) return unsolved('the second line is not a header rule');
      const want = [
        ['GET', '/items', /list/i],
        ['POST', '/items', /create/i],
        ['GET', '/items/{id}', /fetch|one/i],
        ['DELETE', '/items/{id}', /delete/i],
      ] as const;
      const body = rows.slice(2);
      const missing = want.filter(([m, p, d]) => !body.some((r) => r[0] === m && r[1] === p && d.test(r[2] ?? '')));
      if (missing.length || body.length !== 4)
        return unsolved(
          `the rows are not the 4 endpoints: missing ${missing.map(([m, p]) => `${m} ${p}`).join(', ') || '(extra rows)'}`
        );
      for (const line of [
        '# HTTP API',
        'The service listens on port 8080.',
        '## Endpoints',
        '## Errors',
        'Errors are JSON: `{"error": "..."}`.',
      ])
        if (!lines.includes(line)) return unsolved(`lost the line "${line}"`);
      return allOf(
        onlyChanged(o.changes, ['docs/api.md']),
        solved('a Method | Path | Description table of the 4 endpoints')
      );
    },
  },
];
