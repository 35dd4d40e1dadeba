/**
 * Whether a file's new content still parses, for write_file and edit_file: a change that would leave a Python,
 * JavaScript, shell, JSON, YAML or TOML file that parses now (or a new Python, shell, JSON or TOML file)
 * unparseable is refused, with the parser's message, so the model sees what it broke and the file stays as it was. Known by the file's extension only.
 * Nothing is run: each parser only reads the text (Python's `ast`, `node --check`, `bash -n`, `tomllib`), given on
 * standard input, and a parser that is missing or too slow means "cannot tell", never a refusal.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ToolError } from './tool-result';

/** What a parser said of a text: parses, or does not (with why), or null: it cannot tell. */
export type Parse = { ok: true } | { ok: false; error: string } | null;

interface Language {
  name: string;
  parse(text: string): Promise<Parse>;
  /**
   * Whether a new file is judged too. Not JavaScript (a `.js` file may hold JSX) nor YAML (a Helm chart's
   * templates are `.yaml` files full of `{{ }}`): a file of theirs that exists is judged only when it parses.
   */
  judgesNew: boolean;
}

/** A text longer than this is not judged: JSON and YAML parse in the server's own process, and would hold it up. */
const MAX_JUDGED_CHARS = 1_000_000;

/** The longest a parser may take before its verdict counts as "cannot tell". */
const PARSE_TIMEOUT_MS = 5_000;

/** Runs a parser with the text on its standard input: its exit code and standard error, or null when it could not run. */
function runParser(
  cmd: string,
  args: readonly string[],
  input: string
): Promise<{ code: number; stderr: string } | null> {
  return new Promise((resolve) => {
    let stderr = '';
    const child = spawn(cmd, args, {
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '' },
      timeout: PARSE_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    // A missing parser, or one killed at the timeout (no exit code): no verdict. A promise settles once.
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code === null ? null : { code, stderr }));
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 8_000) stderr += d.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** A parser run as a program: exit 0 parses, 1 (or `failCode`) does not, with the message `said` finds; else null. */
async function external(
  cmd: string,
  args: readonly string[],
  text: string,
  said: (err: string) => string,
  failCode = 1
) {
  const r = await runParser(cmd, args, text);
  if (!r) return null;
  if (r.code === 0) return { ok: true } as const;
  return r.code === failCode ? ({ ok: false, error: said(r.stderr) } as const) : null;
}

const lastLine = (s: string) => s.trim().split('\n').at(-1)?.trim() ?? '';

/** Python reports `line N: message` from a script that only parses (ast.parse compiles nothing it runs). */
const PY_PARSE = [
  '-I',
  '-S',
  '-c',
  'import ast, sys\ntry:\n  ast.parse(sys.stdin.buffer.read())\nexcept SyntaxError as e:\n  print(f"line {e.lineno}: {e.msg}", file=sys.stderr); sys.exit(1)',
];
const TOML_PARSE = [
  '-I',
  '-S',
  '-c',
  'import sys\ntry:\n  import tomllib\nexcept ImportError:\n  sys.exit(3)\ntry:\n  tomllib.loads(sys.stdin.read())\nexcept Exception as e:\n  print(e, file=sys.stderr); sys.exit(1)',
];

/** Node's message for a syntax error on standard input: `line N: SyntaxError: …`. */
function nodeSaid(stderr: string): string {
  const at = /\[stdin\]:(\d+)/.exec(stderr);
  const error = /^SyntaxError: .*$/m.exec(stderr)?.[0] ?? lastLine(stderr);
  return at ? `line ${at[1]}: ${error}` : error;
}

const LANGUAGES: Record<string, Language> = {
  python: {
    judgesNew: true,
    name: 'Python',
    parse: (t) => external('python3', PY_PARSE, t, lastLine),
  },
  javascript: {
    judgesNew: false,
    name: 'JavaScript',
    // A script (CommonJS) or a module: either parses.
    parse: async (t) => {
      const script = await external(process.execPath, ['--check', '--input-type=commonjs'], t, nodeSaid);
      if (!script || script.ok) return script;
      const module = await external(process.execPath, ['--check', '--input-type=module'], t, nodeSaid);
      return module?.ok ? module : script;
    },
  },
  shell: {
    judgesNew: true,
    name: 'a shell script',
    parse: (t) => external('bash', ['-n'], t, (e) => lastLine(e).replace(/^bash: /, ''), 2),
  },
  json: {
    judgesNew: true,
    name: 'JSON',
    parse: async (t) => {
      try {
        JSON.parse(t);
        return { ok: true };
      } catch (err) {
        return { ok: false, error: (err as Error).message };
      }
    },
  },
  yaml: {
    judgesNew: false,
    name: 'YAML',
    parse: async (t) => {
      const error = parseAllDocuments(t, { prettyErrors: true })
        .flatMap((d) => ('errors' in d ? d.errors : []))
        .at(0);
      return error ? { ok: false, error: error.message.split('\n')[0] } : { ok: true };
    },
  },
  toml: {
    judgesNew: true,
    name: 'TOML',
    parse: (t) => external('python3', TOML_PARSE, t, lastLine),
  },
};

const BY_EXTENSION: Record<string, string> = {
  '.py': 'python',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.sh': 'shell',
  '.bash': 'shell',
  '.json': 'json',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.toml': 'toml',
};

/** The language a file's extension names, if Klea can parse it. */
export function languageOf(file: string): Language | null {
  const key = BY_EXTENSION[path.extname(file).toLowerCase()];
  return key ? LANGUAGES[key] : null;
}

/**
 * Refuses a change that would leave `shown` unparseable in its language when it parses now (an empty file counts
 * as new), or when it is new (`before` null) and of a language that judges new files. A file that does not parse
 * now (a JSON file with comments, a template) is not judged; nor is an empty text, nor one over a million characters.
 */
export async function checkParses(before: string | null, after: string, shown: string): Promise<void> {
  const language = languageOf(shown);
  if (!language || !after.trim() || after.length > MAX_JUDGED_CHARS) return;
  if (before === null ? !language.judgesNew : before.length > MAX_JUDGED_CHARS) return;
  const now = await language.parse(after);
  if (!now || now.ok) return;
  if (before !== null && before.trim()) {
    const was = await language.parse(before);
    if (!was?.ok) return;
  }
  throw new ToolError(
    `refused: ${shown} would not parse as ${language.name} after this change (${now.error}); nothing changed. ` +
      `${before?.trim() ? 'As it is, it parses. ' : ''}Make the change so that the whole file is valid ${language.name}.`
  );
}
