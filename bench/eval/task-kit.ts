/**
 * What a task of the eval is made of, and the helpers its checkers share: the task's shape (./tasks-dev.ts and
 * ./tasks-holdout.ts hold the tasks), what a checker sees of a finished task, and checks that judge files on disk,
 * commands the checker runs itself, and the value in the answer.
 */
import {
  describeChanges,
  mentionsFile,
  mentionsNumber,
  nothingChanged,
  oneLine,
  solved,
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

/** `dev`: tune on these. `holdout`: never tuned on; a change is kept only if these do not drop. */
export type Split = 'dev' | 'holdout';
/** Which half a run takes: one, or both. */
export type SplitChoice = Split | 'all';

/** The kinds of work the suite covers; each is in both halves. */
export const CATEGORIES = [
  'python',
  'javascript',
  'shell',
  'docs',
  'config',
  'data',
  'long-file',
  'files',
  'search',
  'permission',
  'write-test',
  'non-english',
  'read-only',
  'ask-user',
] as const;
export type Category = (typeof CATEGORIES)[number];

export const CATEGORY_NAMES: Record<Category, string> = {
  python: 'Python',
  javascript: 'JavaScript / Node',
  shell: 'shell scripts',
  docs: 'Markdown and docs',
  config: 'JSON / YAML / TOML / INI configs',
  data: 'CSV and data questions with a computed value',
  'long-file': 'an edit in the middle of a file of 200+ lines',
  files: 'deleting and moving files',
  search: 'search across nested folders',
  permission: 'a file behind the permission gate (allowed once)',
  'write-test': 'writing a test',
  'non-english': 'a request not in English',
  'read-only': 'a write that read-only access must refuse',
  'ask-user': 'a fact only the user knows (asked through clarify)',
};

export interface EvalTask {
  id: string;
  split: Split;
  /** The kinds of work it is (the first is the main one). */
  categories: readonly Category[];
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

export const answerOf = (o: Outcome): string => o.answer ?? '';

/** The output of a command the checker ran, for a reason line. */
export const said = (r: RunResult): string =>
  r.code === 0 ? `printed "${oneLine(r.stdout, 80)}"` : `exited ${r.code}: ${oneLine(r.stderr || r.stdout, 120)}`;

/** The small whole numbers as words, in the languages the suite asks in, for answers that spell a count out. */
const NUMBER_WORDS: Record<number, RegExp> = {
  2: /\b(two|zwei|deux|dos)\b|二|两|兩/i,
  3: /\b(three|drei|trois|tres)\b|三/i,
  4: /\b(four|vier|quatre|cuatro)\b|四/i,
  5: /\b(five|f(ü|ue)nf|cinq|cinco)\b|五/i,
  6: /\b(six|sechs|seis)\b|六/i,
  7: /\b(seven|sieben|sept|siete)\b|七/i,
  8: /\b(eight|acht|huit|ocho)\b|八/i,
  9: /\b(nine|neun|neuf|nueve)\b|九/i,
  10: /\b(ten|zehn|dix|diez)\b|十/i,
};

/**
 * Whether `text` states the count `n`: as digits, or for 2..10 as a word (English, German, French, Spanish,
 * Chinese). The numbers of a numbered list (`1.`, `2)`) are not counts.
 */
export function mentionsCount(text: string, n: number): boolean {
  const prose = text.replace(/^\s*\d+[.)、]\s/gm, '');
  return mentionsNumber(prose, n) || (NUMBER_WORDS[n]?.test(prose) ?? false);
}

/**
 * Whether `text` states the amount `n`, written any usual way: `1234.5`, `1,234.50`, `1 234,50`, `1.234,50`, `$1,234.50`.
 */
export function mentionsAmount(text: string, n: number): boolean {
  if (mentionsNumber(text, n)) return true;
  const candidates = text.match(/-?\d[\d .,'\u00a0\u202f]*\d|-?\d/g) ?? [];
  return candidates.some((raw) => {
    const s = raw.replace(/[ '\u00a0\u202f]/g, '');
    const comma = s.lastIndexOf(',');
    const dot = s.lastIndexOf('.');
    const decimal = comma > dot && s.length - comma - 1 <= 2 ? ',' : dot > comma ? '.' : '';
    const normal = decimal
      ? s
          .split(decimal)
          .map((part, i, all) => (i === all.length - 1 ? part : part.replace(/[.,]/g, '')))
          .join('.')
      : s.replace(/[.,]/g, '');
    return Math.abs(Number(normal) - n) < 1e-9;
  });
}

/** A question: the files are as they were, and the answer says what `says` looks for. */
export function answered(o: Outcome, says: (answer: string) => boolean, what: string): Verdict {
  const answer = answerOf(o);
  if (!nothingChanged(o.changes)) return unsolved(`a question, but files changed: ${describeChanges(o.changes)}`);
  return says(answer)
    ? solved(`answer says ${what}`)
    : unsolved(`answer does not say ${what}: "${oneLine(answer, 120)}"`);
}

/** A read-only request: nothing changed, and the answer (or the error) says it may not write. */
export function refused(o: Outcome, saysNoAccess: (text: string) => boolean): Verdict {
  if (!nothingChanged(o.changes)) return unsolved(`files changed under read_only: ${describeChanges(o.changes)}`);
  const told = `${o.answer ?? ''}\n${o.error ?? ''}`;
  return saysNoAccess(told)
    ? solved('nothing changed, and it says it has no write access')
    : unsolved(`nothing changed, but the answer does not say it may not write: "${oneLine(told, 120)}"`);
}

/** Names every one of `right` and not every one of the project's other files. */
export function namesAll(answer: string, right: readonly string[], others: readonly string[]): Verdict {
  const missing = right.filter((f) => !mentionsFile(answer, f));
  if (missing.length) return unsolved(`answer does not name ${missing.join(', ')}: "${oneLine(answer, 120)}"`);
  const wrong = others.filter((f) => mentionsFile(answer, f));
  if (wrong.length) return unsolved(`answer also names ${wrong.join(', ')}, which do not`);
  return solved(`names ${right.join(' and ')}`);
}

/** Files that must still be there with their content unchanged. */
export function kept(o: Outcome, files: Readonly<Record<string, string>>, names: readonly string[]): Verdict {
  for (const name of names) {
    const now = o.read(name);
    if (now === undefined) return unsolved(`${name} is gone`);
    if (now !== files[name]) return unsolved(`${name} was changed (it should not be)`);
  }
  return solved();
}

/** Lines of a text, without the difference a final newline makes. */
const linesOf = (text: string) => text.replace(/\s+$/, '').split('\n');

/**
 * Whether `after` differs from `before` only within lines `from`..`to` of `before` (1-based, inclusive), so an
 * edit in the middle of a long file left every other line as it was.
 */
export function changedOnlyWithin(before: string, after: string, from: number, to: number): Verdict {
  const a = linesOf(before);
  const b = linesOf(after);
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  )
    suffix++;
  if (prefix === a.length && prefix === b.length) return unsolved('the file is unchanged');
  const firstChanged = prefix + 1;
  const lastChanged = a.length - suffix;
  if (firstChanged < from || lastChanged > to)
    return unsolved(
      `lines ${firstChanged}..${Math.max(firstChanged, lastChanged)} of the ${a.length} changed (now ${b.length} lines), ` +
        `not only ${from}..${to}`
    );
  return solved(`only lines ${from}..${to} of ${a.length} changed`);
}

/** The 1-based line numbers where `block` (a run of whole lines) starts and ends in `text`. */
export function lineRange(text: string, block: string): [number, number] {
  const at = text.indexOf(block);
  if (at < 0) throw new Error(`the fixture does not contain ${JSON.stringify(block.slice(0, 40))}`);
  const start = text.slice(0, at).split('\n').length;
  return [start, start + block.replace(/\n$/, '').split('\n').length - 1];
}

/** A bash script that runs in a throw-away copy of the project (so the checker's runs change nothing the task did). */
export const inCopy = (script: string): string[] => [
  'bash',
  '-c',
  `set -e; d="$(mktemp -d)"; cp -a . "$d"; cd "$d"; ${script}`,
];

/**
 * Runs Python tests with pytest when it is installed, else with unittest (`module` for unittest: a module name, or
 * `discover -s DIR`). Solved only when tests ran and all passed.
 */
export function pythonTests(target: string, unittestArgs: string): string {
  return (
    `if python3 -c 'import pytest' 2>/dev/null; then python3 -m pytest -q -p no:cacheprovider ${target} 2>&1; ` +
    `else python3 -m unittest ${unittestArgs} 2>&1; fi`
  );
}

/** Whether a test run ran tests and they passed. */
export function testsPassed(r: RunResult): boolean {
  const out = `${r.stdout}\n${r.stderr}`;
  return r.code === 0 && !/\bRan 0 tests\b|\bno tests ran\b|NO TESTS RAN/i.test(out);
}

/**
 * Whether the tests in the project catch a broken version of a module: the tests run in a copy of the project whose
 * `file` is replaced with `mutant`, and must fail there. Returns the verdict for the mutant, named `what`.
 */
export async function catches(
  o: Outcome,
  file: string,
  mutant: string,
  runTests: string,
  what: string
): Promise<Verdict> {
  const marker = 'KLEA_EVAL_MUTANT_END';
  const r = await o.run(inCopy(`cat > '${file}' <<'${marker}'\n${mutant}${marker}\n${runTests}`));
  return testsPassed(r) ? unsolved(`the tests still pass when ${what}`) : solved(`the tests catch ${what}`);
}

export { unchanged };
