/** The shape of a shell command as the small profile reads it (pipes, lists, the files a command writes). */
import { plainPath } from '../../common/plan';
import { hereDocuments } from '../../common/path-candidates';

/** `word` between single quotes for the shell, a quote in it closed, escaped and opened again. */
export const shellQuoted = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** The command with each quoted string ('…' or "…") blanked out, its length kept. */
export const withoutQuoted = (command: string) =>
  command.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, (q) => 'x'.repeat(q.length));

/**
 * Whether the shell could not read a command to its end: a quote (`'`, `"`) or a backquote left open, outside
 * comments and here-document bodies. sh refuses such a line whole ("Unterminated quoted string"), whatever the step
 * did: a 0.5B Planner copied a check with single quotes inside single quotes into its next plan.
 */
export function openQuote(command: string): boolean {
  const shell = hereDocuments(command).shell;
  let quote: string | null = null;
  for (let i = 0; i < shell.length; i++) {
    const c = shell[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
    } else if (c === '\\') i++;
    else if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '#' && (i === 0 || /[\s;&|()]/.test(shell[i - 1]!))) {
      const end = shell.indexOf('\n', i);
      i = end < 0 ? shell.length : end;
    }
  }
  return quote !== null;
}

/** Where the first `|` of a command that is not `||` and not quoted is (its length when there is none). */
export function firstPipe(command: string): number {
  const at = /(?<!\|)\|(?!\|)/.exec(withoutQuoted(command));
  return at ? at.index : command.length;
}

/**
 * Whether a command pipes one program's output into another (a `|` outside quotes that is not `||`). A small model
 * checked a step that was to run a script by piping it into `awk` and `bc`: run first, bc's error exited 0, the step
 * was done on it, and the answer made up the number.
 */
export const piped = (command: string) => firstPipe(command) < command.length;

/** A redirect's operator as `simpleCommands` gives it (a word of its own, never one a command could hold). */
const REDIRECT = '\u0000';

/**
 * The pipelines of a shell line (split at `||`, `&&`, `;`, `&`, new lines and parentheses outside quotes), each as
 * its simple commands (split at `|`), each as its words with their quotes and escapes taken off, here-document bodies
 * left out. A redirect to a file is two words: `REDIRECT` with its operator (`>`, `>>`, `&>`, `>|`), then the file;
 * one to another descriptor (`2>&1`) and one that reads (`<`) are left out.
 */
export function pipelines(command: string): string[][][] {
  const shell = hereDocuments(command).shell;
  const out: string[][][] = [];
  let line: string[][] = [];
  let words: string[] = [];
  let word: string | null = null;
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (words.length) line.push(words);
    words = [];
  };
  const endPipeline = () => {
    endCommand();
    if (line.length) out.push(line);
    line = [];
  };
  for (let i = 0; i < shell.length; i++) {
    const c = shell[i]!;
    const next = shell[i + 1];
    if (c === "'") {
      const end = shell.indexOf("'", i + 1);
      word = (word ?? '') + shell.slice(i + 1, end < 0 ? shell.length : end);
      i = end < 0 ? shell.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      for (; j < shell.length && shell[j] !== '"'; j++)
        text += shell[j] === '\\' && j + 1 < shell.length ? shell[++j] : shell[j];
      word = (word ?? '') + text;
      i = j;
    } else if (c === '\\' && next !== undefined) word = (word ?? '') + shell[++i];
    else if (c === '&' && next === '>') {
      endWord();
      word = '&';
    } else if (c === '>' || (c === '<' && next !== '<')) {
      // The descriptor before it (`2>`, `&>`) is the operator's, not a word.
      if (!(word !== null && /^(?:\d+|&)$/.test(word))) endWord();
      word = null;
      let op = c;
      while (i + 1 < shell.length && /[>|&]/.test(shell[i + 1]!)) op += shell[++i];
      if (c === '<' || /&$/.test(op)) {
        // Reading, or a copy of another descriptor (`>&2`): the word after it is no file written.
        while (i + 1 < shell.length && /[ \t]/.test(shell[i + 1]!)) i++;
        while (i + 1 < shell.length && /[^\s;|&()<>]/.test(shell[i + 1]!)) i++;
      } else words.push(REDIRECT + op);
    } else if (c === '<') {
      // A here-document (`<<'EOF'`, `<<-EOF`): its mark is no word of the command.
      endWord();
      const mark = /^<-?\s*(?:'[^']*'|"[^"]*"|[^\s;|&()<>]+)/.exec(shell.slice(i + 1));
      i += mark ? mark[0].length : 1;
    } else if (c === '|' && next !== '|') endCommand();
    else if (c === '|' || c === '&') {
      endPipeline();
      if (next === c) i++;
    } else if (/[;\n()]/.test(c)) endPipeline();
    else if (/\s/.test(c)) endWord();
    else word = (word ?? '') + c;
  }
  endPipeline();
  return out;
}

/** The simple commands of a shell line (`pipelines`, one after another). */
export const simpleCommands = (command: string): string[][] => pipelines(command).flat();

/** Programs whose work is to create, move, copy or delete files (or change their modes). */
const FILE_CHANGERS = new Set([
  'rm',
  'rmdir',
  'mv',
  'cp',
  'mkdir',
  'touch',
  'tee',
  'chmod',
  'chown',
  'ln',
  'truncate',
  'install',
]);
/** Words before a command's program that are not it. */
const PREFIXES = new Set([
  'sudo',
  'env',
  'command',
  'if',
  'elif',
  'while',
  'until',
  'then',
  'do',
  'else',
  '!',
  'time',
  'exec',
  'nohup',
]);

/** A simple command's program and its arguments, its redirects and the words before its program left out. */
function programOf(words: readonly string[]): { program: string; args: string[]; targets: string[] } {
  const targets: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < words.length; i++) {
    if (words[i]!.startsWith(REDIRECT)) {
      if (i + 1 < words.length) targets.push(words[++i]!);
    } else rest.push(words[i]!);
  }
  while (rest.length && (PREFIXES.has(rest[0]!) || /^\w+=/.test(rest[0]!))) rest.shift();
  const [program = '', ...args] = rest;
  return { program: program.slice(program.lastIndexOf('/') + 1), args, targets };
}

/**
 * Each simple command of a line as its program and arguments, redirects and the words before its program left out;
 * `git mv` and `git rm` as `mv` and `rm`, with `git` true; with how many files it writes by redirects.
 */
export function commandPrograms(
  command: string
): Array<{ program: string; args: string[]; git?: true; redirects: number }> {
  return simpleCommands(command).map((words) => {
    const { program, args, targets } = programOf(words);
    const git = program === 'git' && (args[0] === 'mv' || args[0] === 'rm');
    const redirects = targets.length;
    return git ? { program: args[0]!, args: args.slice(1), git, redirects } : { program, args, redirects };
  });
}

/** Whether a simple command's own work is to change files (leaving out what it writes by redirects). */
function changesByProgram(program: string, args: readonly string[]): boolean {
  if (FILE_CHANGERS.has(program)) return true;
  if (program === 'sed') return args.some((a) => /^-(?!-)[a-zA-Z]*i|^--in-place/.test(a));
  if (program === 'perl') return args.some((a) => /^-(?![MI])[a-zA-Z]*i/.test(a));
  if (program === 'git') return args[0] === 'rm' || args[0] === 'mv';
  if (program === 'xargs') return FILE_CHANGERS.has(args.find((a) => !a.startsWith('-')) ?? '');
  if (program === 'find')
    return args.some((a, i) => a === '-delete' || (/^-exec(?:dir)?$/.test(a) && FILE_CHANGERS.has(args[i + 1] ?? '')));
  return false;
}

/** A word of a command as a path of the project (`./a.txt` is `a.txt`), if it is one of `files`. */
const asProjectFile = (word: string, files: ReadonlySet<string>) => {
  const p = plainPath(word.replace(/^\.\//, ''));
  return files.has(p) ? p : null;
};

/**
 * What a shell line does to the project's files, by its shape: whether its first pipeline (after any `cd`) changes
 * files, and the project files (`files`) its commands write, move or delete. A command changes files when its program
 * creates, moves, copies or deletes them (`FILE_CHANGERS`, after `sudo`, `env` or `NAME=value`; `git rm`, `git mv`,
 * `xargs rm`), edits them in place (`sed -i`, `perl -i`), deletes what `find` finds (`-delete`, `-exec rm`), or
 * writes its output into a file of the project (`>`, `>>`, `&>`, `tee`). A command that runs something first
 * (`pytest && rm -rf .pytest_cache`, `npm test > test.log`) is a check that cleans up or keeps a log.
 */
export function fileChanges(command: string, files: readonly string[]): { first: boolean; written: string[] } {
  const have = new Set(files.map(plainPath));
  const written = new Set<string>();
  let first: boolean | null = null;
  for (const line of pipelines(command)) {
    let changes = false;
    let runs = false;
    for (const words of line) {
      const { program, args, targets } = programOf(words);
      const into = targets.map((t) => asProjectFile(t, have)).filter((t): t is string => t !== null);
      const own = changesByProgram(program, args);
      const operands = args.filter((a) => !a.startsWith('-'));
      const named = (ws: readonly string[]) =>
        ws.map((w) => asProjectFile(w, have)).filter((w): w is string => w !== null);
      const changed = !own
        ? []
        : program === 'cp' || program === 'ln' || program === 'install'
          ? named(operands.slice(-1))
          : program === 'find' || program === 'xargs'
            ? []
            : named(operands);
      for (const f of [...into, ...changed]) written.add(f);
      changes ||= own || into.length > 0;
      runs ||= program !== 'cd' && program !== '';
    }
    // A pipeline changes files when any of its commands does (`ls *.tmp | xargs rm`).
    if (first === null && runs) first = changes;
  }
  return { first: first === true, written: [...written] };
}
