/**
 * The small profile's help with the checks a plan runs (docs/models.md): pure functions over the plan's structure and
 * the check commands' shape, never their words.
 *
 * - `dataChecks`: a check that only reads data files is not a check.
 * - `pipedChecks`: a step that is only to run a program is checked by the program, not by what a pipe makes of its
 *   output.
 * - `checkPaths`: a file a check names by a path the project does not have is named by the path it has.
 * - `inlineChecks`: a program given inline that reads no file of the project is no check of a step.
 * - `checkRunners`: a script a check runs is run by the program for its language.
 * - `testChecks`: a new Python test file a step writes is run by its check.
 *
 * - `changingChecks`: a check whose first command changes files is the step's work, not its check.
 *
 * And for every model: `boundedChecks`, a check the schema's bound closed, or one with a quote left open, is no check.
 */
import { changesSomething, MAX_CHECK_CHARS, plainPath, plannedFiles, withExpect, type Plan } from '../../common/plan';
import { basename } from '../../common/posix-path';
import { escape, FILE_NAME, namedByStem, namedFiles } from './named-files';
import { isDataFile } from './program';
import { fileChanges, firstPipe, openQuote, piped, withoutQuoted } from './shell-words';

/**
 * The plan with the check left out of each step that is to change nothing when the check only reads data files: each
 * command of it (between pipes and `&&`) is one of the programs that read or reshape text (`READERS`), and the project
 * files it names are all data (./program). Such a check is the step's own work done blind, and says nothing of
 * whether the step worked: a small model planned a question over a data file as `cat`, then an `awk … | sort |
 * head` that took the wrong columns and passed, then an `echo` of a formula, and the answer was made of the wrong
 * line. Left without a check, the steps work the data out with a program (`thinkingSteps`,
 * ./program). A check that runs anything else (a build, a test runner, an installer) stays.
 */
export function dataChecks(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    if (!check || changesSomething(s) || !onlyReaders(check)) return s;
    const named = namedFiles(files, check);
    if (!named.length || !named.every(isDataFile)) return s;
    repairs.push(`step "${s.id}": its check \`${cutCheck(check)}\` only reads ${named.join(', ')}: left out`);
    const { check: _check, ...others } = s.expect ?? {};
    return withExpect(s, others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with each check whose first command changes files (`fileChanges`: `sed -i`, `mv`, `rm`, `find -delete`,
 * output into a file of the project) made the step's work: the command goes into the step's instruction (unless it
 * is there already), and the project files its commands write, move or delete join the step's `expect.changes`. A
 * check is run after the step to see whether it worked; one that does the work fails on work already done, or passes
 * on work the step never did and does it unseen. A 1.5B model planned the update of an HTML file's links as a step
 * with nothing to change, checked by `sed -i …` on it: no call the step made could pass the check, and the step ended
 * not achieved; a 0.5B model planned the deletion of files as a step checked by `find … -delete`. A check that runs
 * something first and then cleans up or keeps a log (`pytest && rm -rf .pytest_cache`) stays.
 */
export function changingChecks(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    const found = check ? fileChanges(check, files) : null;
    if (!check || !found?.first) return s;
    const changed = found.written.filter((f) => !plannedFiles(s).includes(f));
    const { check: _check, ...others } = s.expect ?? {};
    const changes = [...(others.changes ?? []), ...changed];
    repairs.push(`step "${s.id}": its check \`${cutCheck(check)}\` changes files: made the step's work`);
    const instruction = s.instruction.includes(check) ? s.instruction : `${s.instruction} Run \`${check}\`.`;
    return withExpect({ ...s, instruction }, changes.length ? { ...others, changes } : others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with the check of each step that is to change nothing cut to its first command when it pipes a program's
 * output into others (`piped`): a step that is only to run something is checked by that run. A small model checked
 * a step that was to run a script and report its output by piping the script into `awk` and `bc`: bc failed on the
 * output and exited 0, the step was done on it, and the answer made up a number no call had shown. Not a pipeline whose first
 * command only reads text (`cat data | python3 x.py`: its last command is the program).
 */
export function pipedChecks(plan: Plan): { plan: Plan; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    if (!check || changesSomething(s) || !piped(check)) return s;
    const first = check.slice(0, firstPipe(check)).trim();
    if (!first || onlyReaders(first)) return s;
    repairs.push(
      `step "${s.id}": its check \`${cutCheck(check)}\` pipes the run into other commands: \`${first}\` is its check`
    );
    return withExpect(s, { ...s.expect, check: first });
  });
  return { plan: { ...plan, steps }, repairs };
}

/** The paths of the project's files and of those the plan's steps are to create or change. */
function knownPaths(plan: Plan, files: readonly string[]): Set<string> {
  return new Set([...files, ...plan.steps.flatMap((s) => plannedFiles(s))].map(plainPath));
}

/** A program given inline to its interpreter (`python3 -c '…'`, `node -e "…"`, `sh -c '…'`), quoted. */
const INLINE_PROGRAM = /^\s*\S+\s+(?:-c|-e|--eval|-p|--print)\s+['"]/;

/**
 * The plan with the check left out of each step that is to change nothing when the check is a program of its own,
 * given inline (`INLINE_PROGRAM`), that names no file of the project, by its path or (a module it imports) by its
 * name without extension. Such a program can see nothing the step did: a small model planned a question over a CSV
 * file as steps that "parse", then "find the most", each checked by `python3 -c 'max(customers, …)'`, a name no
 * program defines. The check failed every time whatever the step did; its repair rounds and the new plans after them
 * ran until the task's time was up. Left without a check, the steps are worked out as any step that checks nothing.
 */
export function inlineChecks(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const modules = [...new Set(files.map((f) => basename(f).replace(/\.[^.]+$/, '')).filter((m) => m.length > 1))];
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    if (!check || changesSomething(s) || !INLINE_PROGRAM.test(check) || namedFiles(files, check).length) return s;
    if (modules.some((m) => new RegExp(`(?<![\\w.-])${escape(m)}(?![\\w-])`).test(check))) return s;
    repairs.push(
      `step "${s.id}": its check \`${cutCheck(check)}\` is a program that reads no file of the project: left out`
    );
    const { check: _check, ...others } = s.expect ?? {};
    return withExpect(s, others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/** Programs that only read or reshape text: what a check made of them alone works the step out rather than checks it. */
const READERS = new Set([
  'cat',
  'head',
  'tail',
  'awk',
  'gawk',
  'sort',
  'uniq',
  'cut',
  'grep',
  'egrep',
  'wc',
  'jq',
  'echo',
  'tr',
  'column',
  'paste',
]);

/** Whether each command of a shell line starts with one of `READERS`. */
function onlyReaders(command: string): boolean {
  const parts = withoutQuoted(command).split(/\|\|?|&&|;/);
  return parts.every((p) => READERS.has(p.trim().split(/\s+/)[0] ?? ''));
}

const cutCheck = (check: string) => (check.length > 80 ? `${check.slice(0, 80)}…` : check);

/**
 * The plan with the check left out of each step whose check is as long as a check may be (`max`: `MAX_CHECK_CHARS`,
 * or `SMALL_PLAN_BOUNDS.check` for a small model's plan): a
 * server that holds answers to the schema closed it there, not the model, and a command cut anywhere (a pattern that
 * repeated itself until the bound) fails for no fault of the step, whose repair rounds would then chase it. So is a
 * check with a quote left open (`openQuote`), which the shell refuses whole: a 0.5B Planner copied a check with single
 * quotes inside single quotes into its next plan, and the step failed on `Unterminated quoted string` alone. The step
 * is judged by its other evidence.
 */
export function boundedChecks(plan: Plan, max = MAX_CHECK_CHARS): { plan: Plan; repairs: string[] } {
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check;
    if (!check || (check.length < max && !openQuote(check))) return s;
    repairs.push(
      check.length < max
        ? `step "${s.id}": its check \`${cutCheck(check)}\` leaves a quote open, and the shell cannot run it: left out`
        : `step "${s.id}": its check \`${cutCheck(check)}\` reached the longest a check may be: left out`
    );
    const { check: _check, ...others } = s.expect ?? {};
    return withExpect(s, others);
  });
  return { plan: { ...plan, steps }, repairs };
}

/**
 * The plan with each file name in a step's check that is neither a file of the project nor one a step is to create
 * made the path of the one such file with that base name (one in a folder, most often). A small model planned
 * `python3 -m unittest test_durations.py` for the test it was to write in tests/: the check failed on a module it
 * could not find however the test was written, and each new plan ran it again until the task's time was up. Not a
 * check that changes its folder (`cd`), whose names are not the project's. Only meaningful with a complete listing.
 */
export function checkPaths(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const known = [...knownPaths(plan, files)];
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check;
    if (!check || /(?:^|[;&|(]\s*)cd\s/.test(withoutQuoted(check))) return s;
    const fixed = check.replace(FILE_NAME, (word, name: string) => {
      if (known.includes(name)) return word;
      const same = known.filter((f) => basename(f) === basename(name));
      return same.length === 1 ? same[0] : word;
    });
    if (fixed === check) return s;
    repairs.push(
      `step "${s.id}": its check \`${cutCheck(check)}\` names files by paths the project has: \`${cutCheck(fixed)}\``
    );
    return withExpect(s, { ...s.expect, check: fixed });
  });
  return { plan: { ...plan, steps }, repairs };
}

/** The program that runs a script, by its file's extension; each list's first is the one a check is given. */
const RUNNERS: ReadonlyArray<{ extensions: readonly string[]; programs: readonly string[] }> = [
  { extensions: ['py'], programs: ['python3', 'python'] },
  { extensions: ['js', 'mjs', 'cjs'], programs: ['node', 'nodejs'] },
  { extensions: ['sh', 'bash'], programs: ['bash', 'sh'] },
];

const runnerOf = (path: string) => RUNNERS.find((r) => r.extensions.includes(path.split('.').pop() ?? ''));
/** The runner a command's first word is a program of (`python3.11` is `python`'s), if any. */
const runnerNamed = (word: string) => RUNNERS.find((r) => r.programs.includes(word.replace(/\d+(?:\.\d+)*$/, '')));

/**
 * The plan with each check that is one command running a script of the project (or one a step is to create) run by
 * the program for the script's extension: a check that is the script's path alone is given it (a script without the
 * executable bit, or the shebang line, exits 126 however the step did), and one given to another language's program
 * has it replaced. A small model checked the fix of a JavaScript function by `test/slug.test.js`, then, planned again,
 * by `python3 test/slug.test.js`: both failed whatever the fix, and the task ran on until its time was up. Not a check
 * of several commands, nor one whose program takes options before the script (`python3 -m unittest x.py`).
 */
export function checkRunners(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const known = knownPaths(plan, files);
  const repairs: string[] = [];
  const steps = plan.steps.map((s) => {
    const check = s.expect?.check?.trim();
    if (!check || /[|&;<>`$()]/.test(withoutQuoted(check))) return s;
    const words = check.split(/\s+/);
    const given = runnerNamed(words[0]!);
    const at = given ? 1 : 0;
    const script = words[at] ?? '';
    const runner = runnerOf(script);
    if (!runner || runner === given || !known.has(plainPath(script.replace(/^\.\//, '')))) return s;
    const fixed = [runner.programs[0], ...words.slice(at)].join(' ');
    repairs.push(
      `step "${s.id}": its check \`${cutCheck(check)}\` runs ${script} by its language: \`${cutCheck(fixed)}\``
    );
    return withExpect(s, { ...s.expect, check: fixed });
  });
  return { plan: { ...plan, steps }, repairs };
}

/** A path a command may hold unquoted: letters, digits, `_`, `.`, `/` and `-`, not first. */
const SAFE_PATH = /^[\w./][\w./-]*$/;

/** A Python test file by the test runners' own conventions (`test_*.py`, `*_test.py`), which both find by name. */
export const isPythonTestFile = (path: string) => /^(?:test_.+|.+_test)\.py$/.test(basename(path));

/**
 * The command that runs a Python test file in the sandbox: pytest where its Python has it (pytest runs unittest's
 * tests too), else unittest. The sandbox's Python need not be the worker's: asked in the command itself.
 */
export const pythonTestCommand = (file: string) =>
  `if python3 -c 'import pytest' 2>/dev/null; then python3 -m pytest -q ${file}; else python3 -m unittest ${file}; fi`;

/**
 * The plan with a check for each step that is to create a Python test file (`isPythonTestFile`, one the project
 * does not have) when the step has no check and no check of the plan names the file (by path, or as a module by its
 * name without extension): the test is run (`pythonTestCommand`). A test written and never run proves nothing: with
 * the 0.5B model, a test file that never imported the function it tested was written, the plan ran nothing, and the
 * task ended done. Run, its failure is the step's evidence, shown to the model in the step's repair rounds. A test
 * written before the code it tests is run by the last later step that writes Python code (run before it, it would
 * fail however it was written); a path that is not plainly a file's is put in no command. Only meaningful with a
 * complete listing.
 */
export function testChecks(plan: Plan, files: readonly string[]): { plan: Plan; repairs: string[] } {
  const existing = new Set(files.map(plainPath));
  const checks = plan.steps.flatMap((s) => (s.expect?.check?.trim() ? [s.expect.check] : []));
  const run = (f: string) => checks.some((c) => namedFiles([f], c).length > 0 || namedByStem(f, c));
  const code = (f: string) => f.endsWith('.py') && !isPythonTestFile(f);
  const added = new Map<string, string>();
  const repairs: string[] = [];
  plan.steps.forEach((s, i) => {
    if (s.expect?.check?.trim()) return;
    // A path that is not plainly a file's (a space, shell syntax, a leading dash) is not put in a command.
    const test = plannedFiles(s).find(
      (f) => isPythonTestFile(f) && SAFE_PATH.test(f) && !existing.has(plainPath(f)) && !run(f)
    );
    if (!test) return;
    // A test written before the code it tests is run once that code is written: by the last step that writes it.
    const target = [...plan.steps.slice(i + 1)].reverse().find((l) => plannedFiles(l).some(code)) ?? s;
    if (target.expect?.check?.trim() || added.has(target.id)) return;
    added.set(target.id, pythonTestCommand(test));
    repairs.push(
      target === s
        ? `step "${s.id}": it writes the test ${test}, which no check ran: it is run as its check`
        : `step "${target.id}": it writes the code the test ${test} of step "${s.id}" tests, and no check ran the test: it is run as its check`
    );
  });
  const steps = plan.steps.map((s) => (added.has(s.id) ? withExpect(s, { ...s.expect, check: added.get(s.id)! }) : s));
  return { plan: { ...plan, steps }, repairs };
}
