/**
 * The small profile's checks from a request's examples (docs/models.md): a request that shows what a function gives
 * for an input (`512 -> "512 B"`, `slug("A b") == "a-b"`, `is_leap(1900) → False`) has said what the step that
 * writes the function must achieve, in a form Klea can run. The step that changes the code file the request names is
 * checked by a short program that calls the function with each example's input and compares what it returns; a
 * failed example says what it returned and what was expected, and that output is the evidence the step's repair
 * rounds show the model. A step done on a small model's say-so ended `done` with every example wrong.
 *
 * Read by shape only, in any language: a call or a literal, an arrow (`->`, `→`, `=>`, `⇒`) or `==`, a literal
 * (`requestExamples` says which). The values are numbers, quoted strings, `true`/`false`/`null` (Python's
 * `True`/`False`/`None`) and lists of them; anything else is no example. The program imports the file the way its
 * language does, so it runs the project's own code, in the sandbox, like any check.
 */
import { plannedFiles, withExpect, type Plan } from '../../common/plan';
import { namedFiles, newFileNames } from './named-files';
import { shellQuoted } from './shell-words';

export type Literal = string | number | boolean | null | Literal[];

export interface Example {
  fn: string;
  args: Literal[];
  want: Literal;
}

const ARROW = String.raw`(?:->|→|=>|⇒|==)`;
/** A function's name in JavaScript or Python (a lone `$`, as in `$(…)`, is none). */
const NAME = String.raw`(?:[A-Za-z_][\w$]*|\$[\w$]+)`;
const OPEN_QUOTES: Record<string, string> = { '"': '"', "'": "'", '“': '”', '‘': '’' };

/** The literal at `at` of `text` (after spaces) and where it ends, or null. */
export function literalAt(text: string, at: number): { value: Literal; end: number } | null {
  let i = at;
  while (text[i] === ' ') i++;
  const rest = text.slice(i);
  const num = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\p{L}\p{N}_]|\.\d)/u.exec(rest);
  if (num) return { value: Number(num[0]), end: i + num[0].length };
  const word = /^(true|True|false|False|null|None)(?![\w$])/.exec(rest);
  if (word)
    return { value: /^t/i.test(word[1]!) ? true : /^f/i.test(word[1]!) ? false : null, end: i + word[0].length };
  const close = OPEN_QUOTES[rest[0] ?? ''];
  if (close) {
    const stop = rest.indexOf(close, 1);
    if (stop < 0 || rest.slice(1, stop).includes('\n')) return null;
    return { value: rest.slice(1, stop), end: i + stop + 1 };
  }
  if (rest[0] === '[') {
    const list = literalsUntil(text, i + 1, ']');
    return list && { value: list.values, end: list.end + 1 };
  }
  return null;
}

/**
 * The literals of `text` from `at`, separated by commas, up to `close` (its index is `end`) or, with no `close`, to
 * the end of the text; null when any part is no literal.
 */
function literalsUntil(text: string, at: number, close?: string): { values: Literal[]; end: number } | null {
  const values: Literal[] = [];
  const stops = (j: number) => (close ? text[j] === close : j >= text.length);
  let i = at;
  while (text[i] === ' ') i++;
  if (stops(i)) return { values, end: i };
  for (;;) {
    const item = literalAt(text, i);
    if (!item) return null;
    values.push(item.value);
    i = item.end;
    while (text[i] === ' ') i++;
    if (stops(i)) return { values, end: i };
    if (text[i] !== ',') return null;
    i++;
  }
}

/**
 * Where an expected value ends, so it is the whole of what the text says: the end, a comma, `;` or `)` not before a
 * digit, a sentence's end, or a short lowercase word (`and`, `und`, `et`). `-> 1.5 KB`, `-> 25%`, `-> 1,000`,
 * `-> 2024-02-01` and a signature's `-> None:` say more than a literal, and are no examples.
 */
const WANT_END = /^(?:\s*$|[,;)](?!\d)|[.!?](?=\s|$)|\s+\p{Ll}{1,4}\s)/u;

/** The literal `text` holds at `at` as the whole expected value (`WANT_END`), or null. */
function wantAt(text: string, at: number) {
  const want = literalAt(text, at);
  return want && WANT_END.test(text.slice(want.end)) ? want : null;
}

/**
 * The examples of `request`: calls of one argument or more, all literals, before an arrow or `==` and a whole
 * literal; and bare literals before an arrow and a quoted string, given to the one function the request names with
 * its parentheses, where there are two such or more (a list of examples: `512 -> "512 B", 1536 -> "1.5 KB"`). A
 * call with no argument is no example (`def cleanup() -> None` is a signature, and calling it would run it), nor is
 * a lone pair of bare values (`3 -> 5`, `3.11 -> 3.12`, `'foo' -> 'bar'`: a change asked for).
 */
export function requestExamples(request: string): Example[] {
  const out: Example[] = [];
  const calls = new RegExp(String.raw`(?<![\w$.])(${NAME})\(([^()\n]*)\)\s*${ARROW}`, 'gu');
  for (const m of request.matchAll(calls)) {
    const args = literalsUntil(m[2]!, 0)?.values;
    const want = wantAt(request, m.index! + m[0].length);
    if (args?.length && want) out.push({ fn: m[1]!, args, want: want.value });
  }
  const named = [...new Set([...request.matchAll(new RegExp(`(?<![\\w$.])(${NAME})\\(`, 'gu'))].map((m) => m[1]!))];
  if (named.length !== 1) return out;
  // A bare input (a number, a quoted string) before an arrow, not the end of a call, and a quoted string after it.
  const bare = new RegExp(String.raw`(?<![\w$.)\]])(-?\d+(?:\.\d+)?|"[^"\n]*"|'[^'\n]*'|“[^”\n]*”)\s*${ARROW}`, 'gu');
  const pairs: Example[] = [];
  for (const m of request.matchAll(bare)) {
    const arg = literalAt(m[1]!, 0);
    const want = wantAt(request, m.index! + m[0].length);
    if (arg && want && typeof want.value === 'string')
      pairs.push({ fn: named[0]!, args: [arg.value], want: want.value });
  }
  return pairs.length >= 2 ? [...out, ...pairs] : out;
}

/** The longest check Klea writes from examples (the plan's bound on a check, common/plan.ts). */
const CHECK_MAX = 500;

/** A path that needs no quoting in a module specifier or a Python string. */
const PLAIN_PATH = /^[\w./-]+$/;

/**
 * The import of `file` its language has here. Python loads it by its path, its folder first on the module path (a
 * `math.py` of the project is the project's, not the loaded standard module; the program's own modules are imported
 * with the project's folder off the path, so a `json.py` does not stand in for them); Node by its relative path
 * (CommonJS or ES module alike).
 */
function importOf(file: string, python: boolean): string {
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '.';
  if (python)
    return `import sys\nsys.path.pop(0)\nimport importlib.util as u,json\nsys.path.insert(0,${JSON.stringify(dir)})\ns=u.spec_from_file_location("m",${JSON.stringify(file)});m=u.module_from_spec(s);s.loader.exec_module(m)`;
  return PLAIN_PATH.test(file)
    ? `import("./${file}")`
    : `import(require("url").pathToFileURL(${JSON.stringify(file)}).href)`;
}

/**
 * The command that checks `examples` of the functions of `file` (a `.py`, `.js`, `.mjs` or `.cjs` file), or null: a
 * program given inline, short, as the model sees it in its step's prompt.
 */
export function exampleCheck(file: string, examples: readonly Example[]): string | null {
  const python = file.endsWith('.py');
  const cases = (n: number) => JSON.stringify(examples.slice(0, n).map((e) => [e.fn, e.args, e.want]));
  const program = (n: number) =>
    python
      ? `python3 -c ${shellQuoted(
          `${importOf(file, true)}\nb=0\nfor f,a,w in json.loads(${JSON.stringify(cases(n))}):\n` +
            ` g=getattr(m,f)(*a)\n if g!=w:b=1;print(f"{f}({str(a)[1:-1]}) returned {g!r}, expected {w!r}")\nsys.exit(b)`
        )}`
      : `node -e ${shellQuoted(
          `${importOf(file, false)}.then(m=>{for(const[f,a,w]of${cases(n)}){const g=(m[f]??m.default?.[f]??m.default)(...a);` +
            `if(g!==w&&!require("util").isDeepStrictEqual(g,w))process.exitCode=1,console.log(f+"("+a.map(x=>JSON.stringify(x))+") returned "+JSON.stringify(g)+", expected "+JSON.stringify(w))}})`
        )}`;
  for (let n = examples.length; n > 0; n--) {
    const command = program(n);
    if (command.length <= CHECK_MAX) return command;
  }
  return null;
}

const CODE_FILE = /\.(?:py|js|mjs|cjs)$/;

/**
 * The plan with a check from the request's examples (`requestExamples`) on the last step that changes the one code
 * file the request names (existing or new) that the plan changes, when that step has no check of its own. Any other
 * plan as it is.
 */
export function exampleChecks(
  plan: Plan,
  request: string,
  files: readonly string[]
): { plan: Plan; repairs: string[] } {
  const examples = requestExamples(request);
  if (!examples.length) return { plan, repairs: [] };
  const named = [...namedFiles(files, request), ...newFileNames(files, request)].filter((f) => CODE_FILE.test(f));
  const changed = named.filter((f) => plan.steps.some((s) => plannedFiles(s).includes(f)));
  if (changed.length !== 1) return { plan, repairs: [] };
  const file = changed[0]!;
  const step = [...plan.steps].reverse().find((s) => plannedFiles(s).includes(file));
  const check = exampleCheck(file, examples);
  if (!step || step.expect?.check?.trim() || !check) return { plan, repairs: [] };
  const steps = plan.steps.map((s) => (s === step ? withExpect(s, { ...s.expect, check }) : s));
  const shown = examples.map((e) => `${e.fn}(${e.args.map((a) => JSON.stringify(a)).join(', ')})`).join(', ');
  return { plan: { ...plan, steps }, repairs: [`step "${step.id}": checked by the request's examples (${shown})`] };
}
