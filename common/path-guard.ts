/**
 * The path guard, pure part: which paths a tool call would touch, and how each one is classified once the file
 * system facts (real paths after symlinks) are known. The facts come from `runtime/path-resolve.ts` (through an
 * activity when the permission gate runs in a workflow).
 *
 * Classes: `inside` the project directory; `outside` it (or not safely resolvable); `sensitive` (inside, but
 * matching the sensitive patterns: `.env`, keys, credentials..., or, for a write, the protected patterns: git hooks
 * and config, editor settings); `forbidden` (Klea's own state: its data directory, wherever it lies). `outside` and
 * `sensitive` need permission; `forbidden` is refused and never asked about.
 *
 * This module classifies; which paths a call names is path-candidates.ts. The workflows import this module (the
 * classes, grants, `grantCovers`) and not that one, so this one does not import it (workflows/shared/preload.ts
 * names every common/ module a workflow reaches).
 */
import { z } from 'zod';
import { globToRegExp } from './glob';
import type { FileChange } from './text-diff';
import { basename, isWithin, normalize, relativeTo } from './posix-path';

export type PathClass = 'inside' | 'outside' | 'sensitive' | 'forbidden';
export const PathOpSchema = z.enum(['read', 'write', 'execute']);
export type PathOp = z.infer<typeof PathOpSchema>;

/**
 * A grant for a path: the canonical real path and the operation allowed on it. The same shape everywhere: a
 * permission decision, a session's grants, and (signed) the grants a call carries to the workspace server.
 */
export const GrantSchema = z.strictObject({ path: z.string().min(1), op: PathOpSchema });
export type Grant = z.infer<typeof GrantSchema>;

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
