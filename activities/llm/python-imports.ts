/**
 * `withMissingImports` (small profile, docs/models.md): a Python file written whole that calls a function or class
 * of the project's own it never imports gets the import. A small model writing a test shown the module it tests
 * writes `count_words("")` and no `from wordcount import count_words`: every test fails with a NameError, and asked
 * again with that error, the model copied the module into the test instead. Pure: the file's text and the project
 * files its prompt showed, read as text (no Python is run).
 */
import type { NamedFile } from './named-files';

/** An identifier as Python reads one (ASCII; a name outside it is left alone). */
const NAME = /^[A-Za-z_]\w*$/;
/** Python's keywords: no module path may hold one (`lib/class.py` cannot be imported by its path). */
const KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield'
  ).split(' ')
);
/**
 * Python's built-in functions and classes: a module of the project may define one of its own (`list`, `open`), but
 * a file that calls it unimported means the built-in.
 */
const BUILTINS = new Set(
  (
    'abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex ' +
    'delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals hasattr hash ' +
    'help hex id input int isinstance issubclass iter len list locals map max memoryview min next object oct open ' +
    'ord pow print property quit range repr reversed round set setattr slice sorted staticmethod str sum super ' +
    'tuple type vars zip'
  ).split(' ')
);

/** The functions and classes a module defines at its top level: `def`, `async def`, `class` at column 0. */
export function topLevelDefinitions(text: string): string[] {
  return [...text.matchAll(/^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]!);
}

/** The module a project file is imported as from the project's root (`pkg/mod.py` is `pkg.mod`), if it is one. */
export function moduleOf(path: string): string | null {
  const m = /^(.*)\.py$/.exec(path.replace(/^\.\//, ''));
  if (!m) return null;
  const parts = m[1]!.split('/');
  if (parts.at(-1) === '__init__') parts.pop();
  return parts.length && parts.every((p) => NAME.test(p) && !KEYWORDS.has(p)) ? parts.join('.') : null;
}

/**
 * Whether `text` calls `name` (`name(`, not `x.name(`) and never uses it otherwise (outside strings and comments):
 * no `def`, `class`, import, assignment, `for`, `with … as`, `except … as`, parameter or keyword of that name, and no
 * `import *` anywhere.
 */
function calledUnbound(text: string, name: string): boolean {
  if (/^\s*from\s+\S+\s+import\s+\*/m.test(text)) return false;
  let calls = 0;
  for (const m of text.matchAll(new RegExp(`(?<![\\w.])${name}(?!\\w)(\\s*\\()?`, 'g'))) {
    const before = text.slice(text.lastIndexOf('\n', m.index) + 1, m.index);
    // Inside a string or a comment on its line: not a use.
    if (/#/.test(before) || (before.split(/["']/).length - 1) % 2 === 1) continue;
    if (m[1] === undefined || /(?:\bdef|\bclass)\s*$/.test(before)) return false;
    calls++;
  }
  return calls > 0;
}

/**
 * The text with a `from <module> import <names>` line for each function or class it calls without importing or
 * defining it that exactly one of `shown` (the project's Python files its prompt showed whole, itself aside)
 * defines at its top level; the line goes after the file's first block of imports, or, where it has none, after
 * what must come first (its opening comments, its docstring, its `from __future__` imports). With the lines added,
 * for the step's repairs.
 */
export function withMissingImports(
  path: string,
  text: string,
  shown: readonly NamedFile[]
): { text: string; added: string[] } {
  const own = new Set(topLevelDefinitions(text));
  const byName = new Map<string, string[]>();
  for (const f of shown) {
    const module = f.path !== path && !f.part ? moduleOf(f.path) : null;
    if (!module) continue;
    for (const n of topLevelDefinitions(f.text)) byName.set(n, [...(byName.get(n) ?? []), module]);
  }
  const wanted = new Map<string, string[]>();
  for (const [name, modules] of byName) {
    // A private name (`_helper`) is the module's own business; a built-in's name means the built-in.
    if (modules.length !== 1 || name.startsWith('_') || BUILTINS.has(name) || own.has(name)) continue;
    if (!calledUnbound(text, name)) continue;
    wanted.set(modules[0]!, [...(wanted.get(modules[0]!) ?? []), name]);
  }
  if (!wanted.size) return { text, added: [] };
  const added = [...wanted].map(([module, names]) => `from ${module} import ${names.sort().join(', ')}`);
  const lines = text.split('\n');
  // After the first block of one-line imports, or after what must come first in a file: its opening comments (a
  // `#!` line, an encoding line), its docstring and its `from __future__` imports.
  let at = 0;
  while (at < lines.length && /^\s*(?:#.*)?$/.test(lines[at]!)) at++;
  const quote = /^[rRuU]?("""|''')/.exec(lines[at] ?? '');
  if (quote) {
    const q = quote[1]!;
    let end = at;
    if (!lines[at]!.slice(quote[0].length).includes(q)) while (end + 1 < lines.length && !lines[++end]!.includes(q));
    at = end + 1;
  }
  while (at < lines.length && /^(?:\s*$|#|from\s+__future__\s)/.test(lines[at]!)) at++;
  const firstImport = lines.findIndex((l, i) => i >= at && /^(?:import|from)\s/.test(l));
  if (firstImport >= 0) {
    let end = firstImport;
    while (end < lines.length && /^(?:import|from)\s[^(\\]*$/.test(lines[end]!)) end++;
    at = end;
  }
  return { text: [...lines.slice(0, at), ...added, ...lines.slice(at)].join('\n'), added };
}
