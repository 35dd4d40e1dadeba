/**
 * The names a project's code defines (pure): functions, classes and a class's methods, found by the shape of the
 * lines that define them in the languages Klea reads most (Python, JavaScript and TypeScript, shell, Go, Ruby, Rust,
 * PHP, and the classes of Java, Kotlin and C#). A model is told where a name the request mentions is defined, and
 * what a file it is shown defines: facts a model would otherwise have to search for or count, which a small one
 * does not do (it answered "where is this function defined?" with a change to a caller, and "how many functions
 * does this file define?" with the question).
 */
import { codeNames } from '../llm/file-part';

export interface Definition {
  kind: 'function' | 'class' | 'method';
  name: string;
  /** The class a method belongs to. */
  of?: string;
  /** Its line, from 1. */
  line: number;
}

/** Files Klea looks into for definitions, and how many of a project's. */
export const SOURCE_FILE = /\.(?:py|pyw|js|mjs|cjs|jsx|ts|tsx|sh|bash|zsh|go|rb|rs|php|java|kt|cs)$/i;
export const DEFINITION_FILES_MAX = 40;
/** Most lines of "where defined" a prompt gets. */
export const WHERE_DEFINED_MAX = 6;

type Found = { kind: 'function' | 'class'; name: string } | null;
type Shape = (line: string) => Found;

/** A shape of line that defines a `kind`, its name the expression's first group. */
const match =
  (kind: 'function' | 'class', re: RegExp): Shape =>
  (line) => {
    const m = re.exec(line);
    return m ? { kind, name: m[1] } : null;
  };

const ID = '[A-Za-z_$][\\w$]*';
const JS: Shape[] = [
  match('function', new RegExp(`^\\s*(?:export\\s+)?(?:default\\s+)?(?:async\\s+)?function\\s*\\*?\\s*(${ID})\\s*\\(`)),
  match('class', new RegExp(`^\\s*(?:export\\s+)?(?:default\\s+)?(?:abstract\\s+)?class\\s+(${ID})`)),
  match(
    'function',
    new RegExp(
      `^\\s*(?:export\\s+)?(?:const|let|var)\\s+(${ID})\\s*(?::[^=]+)?=\\s*(?:async\\s+)?(?:function\\b|\\([^)]*\\)\\s*(?::[^=]+)?=>|${ID}\\s*=>)`
    )
  ),
  match(
    'function',
    new RegExp(`^\\s*(?:module\\.)?exports\\.(${ID})\\s*=\\s*(?:async\\s+)?(?:function\\b|\\([^)]*\\)\\s*=>)`)
  ),
];
const CLASS_ONLY: Shape[] = [
  match(
    'class',
    /^\s*(?:(?:public|private|protected|internal|abstract|final|sealed|static|data|open)\s+)*(?:class|interface|enum|record)\s+([A-Za-z_]\w*)/
  ),
];

/** How each kind of file defines things. Python's are read by indentation (`pythonDefinitions`). */
const SHAPES: Array<[RegExp, Shape[]]> = [
  [/\.(?:js|mjs|cjs|jsx|ts|tsx)$/i, JS],
  [
    /\.(?:sh|bash|zsh)$/i,
    [
      match('function', /^\s*function\s+([A-Za-z_][\w-]*)/),
      match('function', /^\s*([A-Za-z_][\w-]*)\s*\(\s*\)\s*(?:\{|\(|$)/),
    ],
  ],
  [
    /\.go$/i,
    [
      match('function', /^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[([]/),
      match('class', /^type\s+([A-Za-z_]\w*)\s+(?:struct|interface)\b/),
    ],
  ],
  [
    /\.rb$/i,
    [
      match('function', /^\s*def\s+(?:self\.)?([A-Za-z_]\w*[?!=]?)/),
      match('class', /^\s*(?:class|module)\s+([A-Z]\w*)/),
    ],
  ],
  [
    /\.rs$/i,
    [
      match('function', /^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+([A-Za-z_]\w*)/),
      match('class', /^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait)\s+([A-Za-z_]\w*)/),
    ],
  ],
  [
    /\.php$/i,
    [
      match('function', /^\s*(?:(?:public|private|protected|static|final|abstract)\s+)*function\s+&?([A-Za-z_]\w*)/),
      match('class', /^\s*(?:(?:abstract|final)\s+)*(?:class|interface|trait)\s+([A-Za-z_]\w*)/),
    ],
  ],
  [/\.(?:java|kt|cs)$/i, CLASS_ONLY],
];

const indentOf = (line: string) => line.length - line.trimStart().length;

/**
 * Python's definitions: a `def` or `class` at the margin, and a `def` directly in a class (a method). Functions
 * inside functions are left out, as are lines inside a string that spans lines.
 */
function pythonDefinitions(lines: readonly string[]): Definition[] {
  const found: Definition[] = [];
  const open: Array<{ indent: number; cls: string | null }> = [];
  let quote: string | null = null;
  lines.forEach((line, i) => {
    if (quote) {
      if (line.split(quote).length % 2 === 0) quote = null;
      return;
    }
    const triple = line.match(/"""|'''/g);
    if (triple && triple.length % 2 === 1) quote = triple[0];
    const m = /^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)/.exec(line);
    if (!m) return;
    const indent = indentOf(line);
    while (open.length && open[open.length - 1].indent >= indent) open.pop();
    const outer = open[open.length - 1];
    const kind = m[2] === 'class' ? 'class' : 'function';
    if (!outer) found.push({ kind, name: m[3], line: i + 1 });
    else if (outer.cls && kind === 'function') found.push({ kind: 'method', name: m[3], of: outer.cls, line: i + 1 });
    open.push({ indent, cls: kind === 'class' && (!outer || outer.cls) ? m[3] : null });
  });
  return found;
}

/** What a file of code defines, in its order; nothing for a file that is not code Klea reads. */
export function definitions(path: string, text: string): Definition[] {
  const lines = text.split('\n');
  if (/\.pyw?$/i.test(path)) return pythonDefinitions(lines);
  const shapes = SHAPES.find(([ext]) => ext.test(path))?.[1];
  if (!shapes) return [];
  const found: Definition[] = [];
  const seen = new Set<string>();
  lines.forEach((line, i) => {
    for (const shape of shapes) {
      const d = shape(line);
      if (!d || seen.has(`${d.kind} ${d.name}`)) continue;
      seen.add(`${d.kind} ${d.name}`);
      found.push({ ...d, line: i + 1 });
      break;
    }
  });
  return found;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * What a file defines, as a note for the heading it is shown under: "defines 2 functions: a, b; 1 class: C (methods
 * area, scale)". Empty when it defines nothing Klea can tell.
 */
export function definitionsNote(defs: readonly Definition[]): string {
  const fns = defs.filter((d) => d.kind === 'function').map((d) => d.name);
  const classes = defs.filter((d) => d.kind === 'class');
  const parts = [
    fns.length ? `${plural(fns.length, 'function', 'functions')}: ${fns.join(', ')}` : '',
    classes.length
      ? `${plural(classes.length, 'class', 'classes')}: ${classes
          .map((c) => {
            const methods = defs.filter((d) => d.kind === 'method' && d.of === c.name).map((d) => d.name);
            return methods.length ? `${c.name} (methods ${methods.join(', ')})` : c.name;
          })
          .join(', ')}`
      : '',
  ].filter(Boolean);
  return parts.length ? `defines ${parts.join('; ')}` : '';
}

/**
 * Where the names a text mentions are defined in the project's `files` (path → its definitions), a line each:
 * "send_invoice: a function in billing/mailer.py, line 12". A name counts as mentioned when the text holds it, three
 * characters or more, in the shape of code (./llm/file-part `codeNames`: `send_invoice`, `formatBytes`, or in
 * backticks), called (`is_leap(1900)`), as `Class.method`, or, for a class whose name starts upper-case, as a whole
 * word: so a function named `run` is not taken for the verb. A name defined in many places is given in each, at most
 * `WHERE_DEFINED_MAX` lines in all. The names come from the project's code, never from a list of words.
 */
export function whereDefined(text: string, files: ReadonlyMap<string, readonly Definition[]>): string[] {
  const named = new Set([...codeNames(text), ...(text.match(/[A-Za-z_$][\w$]{2,}(?=\()/g) ?? [])]);
  const words = new Set(text.match(/[A-Za-z_$][\w$]{2,}/g) ?? []);
  const dotted = new Set(text.match(/[A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*/g) ?? []);
  const lines: Array<{ at: number; line: string }> = [];
  for (const [path, defs] of files)
    for (const d of defs) {
      const full = d.of ? `${d.of}.${d.name}` : d.name;
      const mentioned = named.has(d.name) || (d.kind === 'class' && /^[A-Z]/.test(d.name) && words.has(d.name));
      if (!mentioned && !dotted.has(full)) continue;
      const what = d.kind === 'method' ? `a method of the class ${d.of}` : `a ${d.kind}`;
      const at = text.search(new RegExp(`(?<![\\w$])${d.name.replace(/\$/g, '\\$')}(?![\\w$])`));
      lines.push({ at: at < 0 ? text.length : at, line: `${full}: ${what} in ${path}, line ${d.line}` });
    }
  return lines
    .sort((a, b) => a.at - b.at)
    .slice(0, WHERE_DEFINED_MAX)
    .map((l) => l.line);
}
