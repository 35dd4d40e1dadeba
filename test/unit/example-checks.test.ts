/**
 * Checks from a request's examples: which text is an example, the program that checks them (run here for real, with
 * Python and Node), and the step of a plan that gets it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exampleCheck, exampleChecks, requestExamples } from '../../activities/llm/example-checks';
import type { Plan, PlanStep } from '../../common/plan';

const step = (id: string, instruction: string, expect?: PlanStep['expect']): PlanStep => ({
  id,
  title: instruction,
  instruction,
  depends_on: [],
  needs_tool: true,
  questions: [],
  ...(expect ? { expect } : {}),
});
const plan = (...steps: PlanStep[]): Plan => ({
  goal: 'g',
  steps,
  review: { before_work: false, after_step_ids: [] },
});

/** Runs `command` with bash in a folder holding `files`: its exit status and output. */
function run(command: string, files: Record<string, string>) {
  const dir = mkdtempSync(path.join(tmpdir(), 'klea-examples-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  const r = spawnSync('bash', ['-c', command], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, dir };
}

describe('the examples of a request', () => {
  it('are calls with literal arguments, or a list of bare inputs of its one named function, before an arrow or ==', () => {
    expect(requestExamples('Add toKb(n) to units.js, e.g. 2048 -> "2 KB", 512 → "0.5 KB".')).toEqual([
      { fn: 'toKb', args: [2048], want: '2 KB' },
      { fn: 'toKb', args: [512], want: '0.5 KB' },
    ]);
    expect(requestExamples("Korrigiere days.py: is_weekend('Sa') == True, is_weekend(“Mo”) == False.")).toEqual([
      { fn: 'is_weekend', args: ['Sa'], want: true },
      { fn: 'is_weekend', args: ['Mo'], want: false },
    ]);
    expect(requestExamples('clamp(5, 0, 3) => 3 and clamp(-1, 0, 3) => 0; pairs([1, 2]) -> [[1, 2]]')).toEqual([
      { fn: 'clamp', args: [5, 0, 3], want: 3 },
      { fn: 'clamp', args: [-1, 0, 3], want: 0 },
      { fn: 'pairs', args: [[1, 2]], want: [[1, 2]] },
    ]);
    expect(requestExamples('parse_or_none("x") -> None')).toEqual([{ fn: 'parse_or_none', args: ['x'], want: null }]);
    // A number may end a sentence, or go on with a short word.
    expect(requestExamples('square(3) -> 9 and square(-2) -> 4.')).toEqual([
      { fn: 'square', args: [3], want: 9 },
      { fn: 'square', args: [-2], want: 4 },
    ]);
    // A command substitution in a value is no function named.
    expect(requestExamples('toKb(n): "$(id)" -> "NaN KB", "" -> "NaN KB"')).toEqual([
      { fn: 'toKb', args: ['$(id)'], want: 'NaN KB' },
      { fn: 'toKb', args: [''], want: 'NaN KB' },
    ]);
  });

  it('are none where the text is no call of literals, or a bare input has no one function to go to', () => {
    // A setting changed, with no function named.
    expect(requestExamples('In config.json, change the port 8080 -> 9090.')).toEqual([]);
    // Names, not literals.
    expect(requestExamples('Rename load() -> read() and make x == y hold in check(a).')).toEqual([]);
    // Two functions named: a bare input belongs to neither.
    expect(requestExamples('Add kb(n) and mb(n): 2048 -> "2 KB".')).toEqual([]);
    // A number glued to a unit is no literal.
    expect(requestExamples('parse_duration(s) turns "1h" into seconds: 1h -> 3600')).toEqual([]);
    // A lone pair of bare values is a change asked for, with one function named somewhere else.
    expect(requestExamples('Change the retry count 3 -> 5 in client.py, see connect().')).toEqual([]);
    expect(requestExamples('Upgrade Python 3.11 -> 3.12 and fix parse() in setup.py')).toEqual([]);
    expect(requestExamples("Rename the key 'foo' -> 'bar', read by load(cfg).")).toEqual([]);
    // Bare pairs whose value is no quoted string: times, codes, code in the request.
    expect(requestExamples('schedule(t): 10:30 -> 11:00, HTTP 200 -> 404, 1 -> 2')).toEqual([]);
    expect(requestExamples('is_even(n) should return n % 2 == 0, 3 % 2 == 1')).toEqual([]);
    // A value that says more than a literal: a unit, a percentage, a thousands comma, a date.
    for (const want of ['1.5 KB', '100 °C', '25%', '1,000', '2024-02-01'])
      expect(requestExamples(`f(1536) -> ${want}`)).toEqual([]);
    // A signature, and a call with no argument (calling it would run it).
    expect(requestExamples('Add `def cleanup() -> None:` to tasks.py, and `def f(x: int) -> int`.')).toEqual([]);
    expect(requestExamples('Make `async() => 1` and now() -> "12:00" work.')).toEqual([]);
    // A lone = is no arrow.
    expect(requestExamples('Set timeout(30) = 60 in net.py.')).toEqual([]);
  });
});

describe('the check of examples', () => {
  const js = 'function toKb(n) { return `${(n / 1024).toFixed(1)} KB`; }\nmodule.exports = { toKb };\n';
  const examples = requestExamples('toKb(n) in units.js: 2048 -> "2 KB", 1536 -> "1.5 KB"');

  it('runs a CommonJS or an ES module with Node, and says what each wrong example returned', () => {
    const wrong = run(exampleCheck('units.js', examples)!, { 'units.js': js });
    expect(wrong.status).toBe(1);
    expect(wrong.out).toBe('toKb(2048) returned "2.0 KB", expected "2 KB"\n');
    const right = js.replace('.toFixed(1)', '');
    expect(run(exampleCheck('units.js', examples)!, { 'units.js': right })).toMatchObject({ status: 0, out: '' });
    const esm = 'export function toKb(n) { return `${Math.round((n / 1024) * 10) / 10} KB`; }\n';
    expect(run(exampleCheck('units.mjs', examples)!, { 'units.mjs': esm })).toMatchObject({ status: 0, out: '' });
    // A function the file does not export fails the check, saying so.
    const missing = run(exampleCheck('units.js', examples)!, { 'units.js': 'module.exports = {};\n' });
    expect(missing.status).not.toBe(0);
    expect(missing.out).toMatch(/is not a function/);
  });

  it('imports a Python file by its path, even one named like a standard module, and a Node default export', () => {
    const sq = requestExamples('square(3) -> 9, square(-2) -> 4');
    const py = 'def square(x):\n    return x * x\n';
    expect(run(exampleCheck('math.py', sq)!, { 'math.py': py })).toMatchObject({ status: 0, out: '' });
    expect(run(exampleCheck('json.py', sq)!, { 'json.py': py })).toMatchObject({ status: 0, out: '' });
    const js = 'module.exports = function square(x) { return x * x; };\n';
    expect(run(exampleCheck('sq.js', sq)!, { 'sq.js': js })).toMatchObject({ status: 0, out: '' });
    // -0 is 0.
    const zero = requestExamples('neg(0) -> 0, neg(1) -> -1');
    expect(run(exampleCheck('n.js', zero)!, { 'n.js': 'exports.neg = (x) => -x;\n' })).toMatchObject({ status: 0 });
  });

  it('imports a Python file as a module, in its folder, and compares with ==', () => {
    const leap = requestExamples('is_leap(1900) == False, is_leap(2000) == True');
    const check = exampleCheck('dates.py', leap)!;
    const wrong = run(check, { 'dates.py': 'def is_leap(y):\n    return y % 4 == 0\n' });
    expect(wrong).toMatchObject({ status: 1, out: 'is_leap(1900) returned True, expected False\n' });
    const fixed = 'def is_leap(y):\n    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)\n';
    expect(run(check, { 'dates.py': fixed })).toMatchObject({ status: 0, out: '' });
  });

  it('attack: an example that would break out of the quoting runs nothing of its own; the control does', () => {
    const payload = "x'; touch pwned; echo '";
    const hostile = requestExamples(`echo_it in e.py: echo_it("${payload}") -> "y"`);
    expect(hostile).toEqual([{ fn: 'echo_it', args: [payload], want: 'y' }]);
    const r = run(exampleCheck('e.py', hostile)!, { 'e.py': 'def echo_it(s):\n    return "y"\n' });
    expect(r.status).toBe(0);
    expect(existsSync(path.join(r.dir, 'pwned'))).toBe(false);
    // The control: the same value put between single quotes as it is makes the file, so the test sees a breach.
    const naive = run(`python3 -c 'print("${payload}")'`, {});
    expect(existsSync(path.join(naive.dir, 'pwned'))).toBe(true);
  });

  it('keeps to the bound of a check, leaving examples out from the end; none fit, no check', () => {
    const many = requestExamples(Array.from({ length: 40 }, (_, i) => `toKb(${i * 1024}) -> "${i} KB"`).join(', '));
    const check = exampleCheck('units.js', many)!;
    expect(check.length).toBeLessThanOrEqual(500);
    expect(check).toContain('["toKb",[0],"0 KB"]');
    expect(check).not.toContain('"39 KB"');
    expect(exampleCheck('units.js', [{ fn: 'f', args: ['x'.repeat(600)], want: 1 }])).toBeNull();
  });
});

describe('a plan checked by the examples', () => {
  const request = 'Add formatKb(n) to units.js, e.g. 2048 -> "2 KB", 0 -> "0 KB".';
  const files = ['units.js', 'README.md'];

  it('checks the last step that changes the one code file the request names', () => {
    const p = plan(
      step('s1', 'Add formatKb.', { changes: ['units.js'] }),
      step('s2', 'Export it.', { changes: ['units.js'] }),
      step('s3', 'Say so in the README.', { changes: ['README.md'] })
    );
    const { plan: checked, repairs } = exampleChecks(p, request, files);
    expect(checked.steps[0].expect?.check).toBeUndefined();
    expect(checked.steps[1].expect?.check).toBe(exampleCheck('units.js', requestExamples(request)));
    expect(repairs).toEqual(['step "s2": checked by the request\'s examples (formatKb(2048), formatKb(0))']);
    // A new file the request names is checked the same way.
    const created = exampleChecks(
      plan(step('s1', 'Write kb.py.', { changes: ['kb.py'] })),
      'kb.py: to_kb(2048) -> 2',
      []
    );
    expect(created.plan.steps[0].expect?.check).toMatch(/^python3 -c /);
  });

  it('leaves a step with a check of its own, a plan that changes no code file or two, and a request with no example', () => {
    const own = plan(step('s1', 'Add formatKb.', { changes: ['units.js'], check: 'node test.js' }));
    expect(exampleChecks(own, request, files)).toEqual({ plan: own, repairs: [] });
    const docs = plan(step('s1', 'Document it.', { changes: ['README.md'] }));
    expect(exampleChecks(docs, request, files)).toEqual({ plan: docs, repairs: [] });
    const two = plan(step('s1', 'Add it to both.', { changes: ['units.js', 'more.js'] }));
    expect(exampleChecks(two, `${request} Add it to more.js too.`, [...files, 'more.js']).repairs).toEqual([]);
    const plain = plan(step('s1', 'Add formatKb.', { changes: ['units.js'] }));
    expect(exampleChecks(plain, 'Add formatKb(n) to units.js.', files)).toEqual({ plan: plain, repairs: [] });
  });
});
