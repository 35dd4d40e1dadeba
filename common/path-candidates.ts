/**
 * The path guard's first part (common/path-guard.ts classifies what it finds): which paths a tool call would touch.
 * Path-like arguments (by name, or by what the tool's input schema says of them) and path-like words of a shell
 * command; how a requested path becomes absolute (`file:` URIs, `~`), and the percent-decoded forms a server might
 * see.
 */
import type { PathOp } from './path-guard';
import { isAbsolute } from './posix-path';

export interface GuardedCall {
  server: string;
  tool: string;
  args: Record<string, unknown>;
  /** The tool's JSON Schema for its input, when known: property formats and descriptions hint at paths. */
  inputSchema?: { properties?: Record<string, { format?: string; description?: string; type?: unknown }> };
  /** True only when the tool is trusted to be read-only (annotation readOnlyHint: true). */
  readOnly: boolean;
}

export interface PathCandidate {
  /** Where in the arguments, e.g. `path`, `paths[1]`, `command`. */
  arg: string;
  raw: string;
  op: PathOp;
}

/** Argument names that carry paths in MCP servers seen in the wild. */
const PATH_KEY =
  /^(path|paths|file|files|filename|filenames|filepath|file_path|filepaths|file_paths|dir|dirs|directory|directories|folder|folders|cwd|root|roots|source|sources|src|destination|dest|target|target_path|old_path|new_path|uri|uris|location|output|output_path|input_path|workdir|working_directory)$/i;
const PATH_KEY_SUFFIX = /(_path|_paths|Path|Paths|_file|File|_dir|Dir|_directory|Directory|_uri|Uri)$/;
const COMMAND_KEY = /^(command|cmd|script|shell_command)$/i;
const PATH_FORMATS: readonly string[] = ['uri', 'uri-reference', 'iri', 'path', 'file-path'];
const PATH_DESCRIPTION = /\b(path|file|directory|folder)\b/i;

function looksLikePathKey(key: string, schema?: GuardedCall['inputSchema']): boolean {
  if (PATH_KEY.test(key) || PATH_KEY_SUFFIX.test(key)) return true;
  const prop = schema?.properties?.[key];
  if (!prop) return false;
  if (prop.format && PATH_FORMATS.includes(prop.format)) return true;
  return (
    typeof prop.description === 'string' &&
    PATH_DESCRIPTION.test(prop.description) &&
    !COMMAND_KEY.test(key) &&
    !/pattern|regex|query|content|text/i.test(key)
  );
}

/** Paths a command may name without touching anyone's data: device files and system program locations. */
const HARMLESS_COMMAND_PATH =
  /^(\/dev\/(null|zero|stdin|stdout|stderr|tty|u?random|fd\/\d+)|\/(usr\/(local\/)?)?s?bin\/[A-Za-z0-9._+-]+)$/;

/**
 * Path-like words of a shell command: absolute paths, `~`, anything with a `..` segment, `./x`, and words that
 * name a sensitive file. A command can reach anything; this catches the plain cases so they are asked about.
 */
export function commandPathTokens(command: string): string[] {
  // A here-document's lines are a program's text, not shell words: its operators (`a / b`, `n //= 2`) are no paths,
  // while a path it names (`open('/etc/passwd')`) still is.
  const { shell, documents } = hereDocuments(command);
  return [...pathWords(shell), ...documents.flatMap((d) => pathWords(d).filter((w) => !/^\/{1,2}=?$/.test(w)))];
}

/** The command without the bodies of its here-documents (`<<MARK` … `MARK`), and those bodies. */
export function hereDocuments(command: string): { shell: string; documents: string[] } {
  const lines = command.split('\n');
  const shell: string[] = [];
  const documents: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    shell.push(lines[i]);
    const marks = [...lines[i].matchAll(/<<-?\s*(?:'([^']+)'|"([^"]+)"|([A-Za-z_][\w]*))/g)].map(
      (m) => m[1] ?? m[2] ?? m[3]
    );
    for (const mark of marks) {
      const body: string[] = [];
      for (i++; i < lines.length && lines[i].replace(/^\t+/, '') !== mark; i++) body.push(lines[i]);
      documents.push(body.join('\n'));
    }
  }
  return { shell: shell.join('\n'), documents };
}

/** The path-like words of shell text. */
function pathWords(command: string): string[] {
  const words = command.match(/"[^"]*"|'[^']*'|[^\s;|&<>()`]+/g) ?? [];
  const out: string[] = [];
  for (let w of words) {
    w = w.replace(/^["']|["']$/g, '');
    const eq = w.indexOf('=');
    if (w.startsWith('-') && eq > 0) w = w.slice(eq + 1);
    else if (w.startsWith('-')) continue;
    else if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) w = w.slice(eq + 1);
    if (!w || (/^[a-z][a-z0-9+.-]*:\/\//i.test(w) && !w.startsWith('file:')) || HARMLESS_COMMAND_PATH.test(w)) continue;
    if (
      w.startsWith('/') ||
      w.startsWith('~') ||
      // A `file:` URI, not the word `file:` (Python's `with open(…) as file:`).
      /^file:./i.test(w) ||
      /(^|\/)\.\.(\/|$)/.test(w) ||
      w.startsWith('./') ||
      /(^|\/)\.env(\.|$)|id_rsa|id_ed25519|\.ssh\b|\.aws\b|\.netrc|\.pem$|\.key$/i.test(w)
    ) {
      out.push(w);
    }
  }
  return out;
}

export function extractPathCandidates(call: GuardedCall): PathCandidate[] {
  const out: PathCandidate[] = [];
  const opFor = (key: string): PathOp =>
    call.readOnly ? 'read' : /^(cwd|workdir|working_directory)$/i.test(key) ? 'execute' : 'write';
  // A relative path in a command means a path under the command's working directory, not under the project root.
  const args = (call.args ?? {}) as Record<string, unknown>;
  const cwdKey = Object.keys(args).find((k) => /^(cwd|workdir|working_directory)$/i.test(k));
  const cwd = cwdKey && typeof args[cwdKey] === 'string' ? (args[cwdKey] as string).replace(/\/+$/, '') : '';
  const inCwd = (token: string) => (!cwd || cwd === '.' || /^([/~]|file:)/i.test(token) ? token : `${cwd}/${token}`);
  const visit = (value: unknown, key: string, where: string, depth: number, pathKey: boolean) => {
    if (depth > 5) return;
    if (typeof value === 'string') {
      if (pathKey || /^file:/i.test(value)) out.push({ arg: where, raw: value, op: opFor(key) });
      else if (COMMAND_KEY.test(key) && !call.readOnly) {
        for (const t of commandPathTokens(value)) out.push({ arg: where, raw: inCwd(t), op: 'execute' });
      }
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => visit(v, key, `${where}[${i}]`, depth + 1, pathKey));
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        visit(
          v,
          k,
          where ? `${where}.${k}` : k,
          depth + 1,
          depth === 0 ? looksLikePathKey(k, call.inputSchema) : PATH_KEY.test(k) || PATH_KEY_SUFFIX.test(k)
        );
      }
    }
  };
  visit(call.args, '', '', 0, false);
  // A command run without a cwd runs in the project directory: nothing to ask.
  return out;
}

export type AbsoluteResult = { ok: true; absolute: string } | { ok: false; reason: string };

/**
 * Makes a requested path absolute against the project directory WITHOUT collapsing `..` (the resolver walks
 * the segments on the real file system, where `link/..` is not the same as `.`).
 */
export function toAbsolute(raw: string, projectDir: string, homeDir: string): AbsoluteResult {
  // Security: a NUL byte truncates paths in C APIs; never let one through.
  if (raw.includes('\0')) return { ok: false, reason: 'the path contains a NUL byte' };
  let p = raw;
  if (/^file:/i.test(p)) {
    const m = /^file:(?:\/\/([^/]*))?(\/.*)?$/i.exec(p);
    if (!m) return { ok: false, reason: 'not a valid file: URI' };
    const host = m[1] ?? '';
    if (host && host.toLowerCase() !== 'localhost') return { ok: false, reason: `file: URI on another host (${host})` };
    try {
      p = decodeURIComponent(m[2] ?? '/');
    } catch {
      return { ok: false, reason: 'the file: URI has invalid percent-encoding' };
    }
    if (p.includes('\0')) return { ok: false, reason: 'the path contains a NUL byte' };
  }
  if (p === '~' || p.startsWith('~/')) p = homeDir + p.slice(1);
  else if (p.startsWith('~')) return { ok: false, reason: "another user's home directory" };
  if (!p) return { ok: false, reason: 'empty path' };
  return { ok: true, absolute: isAbsolute(p) ? p : `${projectDir.replace(/\/$/, '')}/${p}` };
}

/** Percent-decoded forms a server might see, besides the literal one (`%2e%2e/` is `../` to some). */
export function decodedVariants(raw: string): string[] {
  if (!/%[0-9a-f]{2}/i.test(raw) || /^file:/i.test(raw)) return [];
  const out: string[] = [];
  let cur = raw;
  for (let i = 0; i < 3 && /%[0-9a-f]{2}/i.test(cur); i++) {
    try {
      cur = decodeURIComponent(cur);
    } catch {
      break;
    }
    out.push(cur);
  }
  return out;
}
