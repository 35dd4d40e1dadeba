/**
 * The path guard, pure part: which paths a tool call would touch, and how each one is classified once the file
 * system facts (real paths after symlinks) are known. The facts come from `runtime/path-resolve.ts` (through an
 * activity when the permission gate runs in a workflow).
 *
 * Classes: `inside` the project directory; `outside` it (or not safely resolvable); `sensitive` (inside, but
 * matching the sensitive patterns: `.env`, keys, credentials..., or, for a write, the protected patterns: git hooks
 * and config, editor settings); `forbidden` (Klea's own state: its data directory, wherever it lies). `outside` and
 * `sensitive` need permission; `forbidden` is refused and never asked about.
 */
import { z } from 'zod';
import { globToRegExp } from './glob';
import type { FileChange } from './text-diff';
import { basename, isAbsolute, isWithin, normalize, relativeTo } from './posix-path';

export type PathClass = 'inside' | 'outside' | 'sensitive' | 'forbidden';
export const PathOpSchema = z.enum(['read', 'write', 'execute']);
export type PathOp = z.infer<typeof PathOpSchema>;

/**
 * A grant for a path: the canonical real path and the operation allowed on it. The same shape everywhere: a
 * permission decision, a session's grants, and (signed) the grants a call carries to the workspace server.
 */
export const GrantSchema = z.strictObject({ path: z.string().min(1), op: PathOpSchema });
export type Grant = z.infer<typeof GrantSchema>;

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
      w.startsWith('file:') ||
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

/** File-system facts about one absolute path, from the resolver. */
export interface PathFacts {
  absolute: string;
  /** Real path after following every symlink (for a missing file: its nearest existing parent's real path + the rest). */
  real: string | null;
  exists: boolean;
  /** Set when the path cannot be resolved safely (symlink loop, too many links...). */
  problem?: string;
  /** For an existing regular file: how many names (hard links) it has. */
  links?: number;
}

export interface RootFacts {
  real: string;
  caseInsensitive: boolean;
}

export interface PathVerdict {
  class: PathClass;
  reason: string;
}

/** Strips what makes look-alike names differ: case, compatibility forms (fullwidth dots), invisible characters. */
export function canonicalName(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/[\u200B-\u200F\u202A-\u202E\u2060-\u2064\uFEFF\u00AD]/g, '')
    .toLowerCase();
}

export class SensitiveMatcher {
  private readonly res: RegExp[];
  constructor(readonly patterns: readonly string[]) {
    this.res = patterns.map((p) => globToRegExp(canonicalName(p), { caseInsensitive: true }));
  }
  /** The first pattern matching the path relative to the project root, or null. */
  match(relative: string): string | null {
    const rel = canonicalName(relative);
    const i = this.res.findIndex((re) => re.test(rel));
    return i === -1 ? null : this.patterns[i];
  }
}

/** A repository's own entry: a `.git` directory or a `.git` file (a `gitdir:` pointer), at any depth. */
export const REPOSITORY_ENTRY = '.git';

/** Whether a name is `.git`, as git on a case-insensitive file system would take it. */
export const isRepositoryEntry = (name: string): boolean => canonicalName(name) === REPOSITORY_ENTRY;

/** A dependency folder: package managers rewrite it whole, and nothing in it is a project's own settings. */
const DEPENDENCIES = 'node_modules';

/**
 * Whether a root-relative path lies in a dependency folder (`node_modules/` at any depth). The protected patterns
 * that match at any depth (`AGENTS.md`, `.github/workflows/` below the root) do not apply there: packages ship such files, and
 * npm must stay free to replace them. A pattern that names `node_modules` itself still does.
 */
export function inDependencies(relative: string): boolean {
  return relative
    .split('/')
    .slice(0, -1)
    .some((seg) => canonicalName(seg) === DEPENDENCIES);
}

/**
 * The protected files (`tools.protected_patterns`): files that tools on the host run or load later, with the user's
 * authority. Besides the patterns, always: a repository's `.git` entry at any depth (a `.git` file redirects git to
 * another git directory). Git's own patterns (`.git/config`, `.git/hooks/**`) hold in every repository of the
 * project, the ones below its root included: a path in a `.git` directory is also matched as `.git/<the rest>`.
 */
export class ProtectedMatcher {
  private readonly all: SensitiveMatcher;
  private readonly named: SensitiveMatcher;
  constructor(readonly patterns: readonly string[]) {
    this.all = new SensitiveMatcher(patterns);
    this.named = new SensitiveMatcher(patterns.filter((p) => canonicalName(p).includes(DEPENDENCIES)));
  }

  /** The pattern a root-relative path matches (`.git` for a repository's own entry), or null. */
  match(relative: string): string | null {
    const rel = relative.replace(/^\.\//, '');
    if (inDependencies(rel)) return this.named.match(rel);
    const segments = rel.split('/');
    if (isRepositoryEntry(segments[segments.length - 1])) return REPOSITORY_ENTRY;
    const hit = this.all.match(rel);
    if (hit) return hit;
    // In a repository below the root: `sub/.git/hooks/x` is protected as `.git/hooks/x` is.
    let git = segments.length - 2;
    while (git > 0 && !isRepositoryEntry(segments[git])) git--;
    return git > 0 ? this.all.match([REPOSITORY_ENTRY, ...segments.slice(git + 1)].join('/')) : null;
  }
}

/** The files coding agents read as standing instructions (Klea reads AGENTS.md, else CLAUDE.md). */
const AGENT_INSTRUCTIONS = [
  'agents.md',
  'agents.override.md',
  'claude.md',
  'claude.local.md',
  'gemini.md',
  '.cursorrules',
  '.windsurfrules',
  '.clinerules',
];

/** Whether a path names an agent instruction file (any depth). */
export const isAgentInstructions = (p: string): boolean => AGENT_INSTRUCTIONS.includes(canonicalName(basename(p)));

/** Why a protected file is protected, for a permission request and a command's result. */
export function protectedWhy(pattern: string): string {
  const p = canonicalName(pattern);
  if (p === REPOSITORY_ENTRY)
    return "git runs a repository's hooks and settings (core.fsmonitor among them) at the next git command there";
  if (/(^|\/)\.git\//.test(p)) return "git's settings or hooks: git runs them at your next git command";
  if (isAgentInstructions(p))
    return "an agent instruction file: every later plan (Klea's, and other coding agents') reads it as standing instructions";
  if (/\.mcp\.json|\.(cursor|claude|codex|gemini|continue|windsurf)\/|\.aider/.test(p))
    return "another agent's or editor's configuration: it may start programs (MCP servers, hooks) on this machine";
  if (/\.(vscode|idea|devcontainer)\//.test(p))
    return 'editor settings: their tasks, launch settings and containers run programs';
  if (/\.github\/workflows/.test(p)) return "CI workflows: they run at the next push, with the repository's secrets";
  if (/\.git(modules|attributes)$/.test(p))
    return "git's submodules or attributes (which repositories git fetches, which filters it runs)";
  if (/\.(npmrc|yarnrc)/.test(p)) return "a package manager's settings (its registries, tokens and script shell)";
  if (/\.pth$|customize\.py$/.test(p)) return 'Python runs it at every start of that environment';
  if (/\.envrc$/.test(p)) return 'direnv loads it when you enter the directory';
  if (/klea\.yaml$/.test(p)) return "Klea's own configuration";
  return 'tools on the host run or load it later, with your authority';
}

/** What classifies a path besides the sensitive patterns: the operation, protected files and Klea's own state. */
export interface ClassifyExtras {
  op?: PathOp;
  /** Files host tools run or load later: a write to one is asked about like a sensitive file. */
  protectedFiles?: ProtectedMatcher;
  /** Real paths of Klea's own state (data directory, results, workspace state): no tool may touch them. */
  ownState?: readonly string[];
}

/** Whether a real path is, or is under, one of Klea's own state paths. */
export function inOwnState(real: string, ownState: readonly string[] | undefined, caseInsensitive = false): boolean {
  return (ownState ?? []).some((own) => isWithin(own, real, caseInsensitive));
}

export const OWN_STATE_REASON =
  "Klea's own state (its data directory: task results, workspace state, checkpoints, Temporal's database), which no tool may touch";

export function classifyPath(
  facts: PathFacts,
  root: RootFacts,
  sensitive: SensitiveMatcher,
  requested?: string,
  extras: ClassifyExtras = {}
): PathVerdict {
  // Security: Klea's own state is refused before anything else, wherever it lies and however it is reached.
  if (
    inOwnState(facts.real ?? '', extras.ownState, root.caseInsensitive) ||
    inOwnState(normalize(facts.absolute), extras.ownState, root.caseInsensitive)
  )
    return { class: 'forbidden', reason: OWN_STATE_REASON };
  if (facts.problem || !facts.real) return { class: 'outside', reason: facts.problem ?? 'the path cannot be resolved' };
  if (!isWithin(root.real, facts.real, root.caseInsensitive)) {
    const viaLink = isWithin(root.real, normalize(facts.absolute), root.caseInsensitive);
    return {
      class: 'outside',
      reason: viaLink ? `a symlink leads outside the project, to ${facts.real}` : 'outside the project directory',
    };
  }
  const rel = relativeTo(root.real, facts.real);
  // Security: another name of a hard-linked file may be outside the project (or a sensitive file), and nothing
  // tells where; such a file is treated as outside unless the user grants it.
  if (facts.links !== undefined && facts.links > 1)
    return {
      class: 'outside',
      reason: `a file with ${facts.links} hard links (another of its names may be outside the project)`,
    };
  const hit = sensitive.match(rel) ?? (requested ? sensitive.match(basename(requested)) : null);
  if (hit) return { class: 'sensitive', reason: `a sensitive file (matches "${hit}")` };
  const guarded = extras.op === 'write' ? extras.protectedFiles?.match(rel) : null;
  if (guarded)
    return { class: 'sensitive', reason: `a protected file (matches "${guarded}"): ${protectedWhy(guarded)}` };
  return { class: 'inside', reason: 'inside the project directory' };
}

/** The strictest of several verdicts for the same argument (forbidden > outside > sensitive > inside). */
export function strictest(verdicts: PathVerdict[]): PathVerdict {
  const rank: Record<PathClass, number> = { inside: 0, sensitive: 1, outside: 2, forbidden: 3 };
  return verdicts.reduce((a, b) => (rank[b.class] > rank[a.class] ? b : a));
}

/** A path a tool call touches, as the guard classified it (the permission gate asks about the non-inside ones). */
export interface GuardedPath {
  arg: string;
  requested: string;
  op: PathOp;
  /** Canonical real path (the grant key), or the requested path when it cannot be resolved. */
  real: string;
  class: PathClass;
  reason: string;
  /** For a write or an edit of an agent instruction file: what it would change (the user sees it when asked). */
  change?: FileChange;
}

/** Whether grants cover an operation on a path: a write or execute grant covers reads of the same path too. */
export function grantCovers(grants: readonly Grant[], path: string, op: PathOp): boolean {
  return grants.some(
    (g) => g.path === path && (g.op === op || (op === 'read' && (g.op === 'write' || g.op === 'execute')))
  );
}

/**
 * Where a protected pattern lies in a project whose matching files may not exist yet: its leading literal segments,
 * as a file (`klea.yaml`, `.git/config`) or a whole directory (`.vscode/**`). Patterns with a wildcard before their
 * end (`.git/modules/` then any depth, then `config`) have none: they protect the files that match once they exist.
 */
export function protectedAnchor(pattern: string): { path: string; dir: boolean } | null {
  const p = pattern
    .replace(/^\.\//, '')
    .replace(/^\//, '')
    .replace(/^\*\*\//, '');
  const segments = p.split('/').filter(Boolean);
  const wild = (seg: string) => /[*?[{]/.test(seg);
  const literal = segments.findIndex(wild);
  if (literal === -1) return segments.length ? { path: segments.join('/'), dir: false } : null;
  if (literal === segments.length - 1 && segments[literal] === '**' && literal > 0)
    return { path: segments.slice(0, literal).join('/'), dir: true };
  return null;
}
