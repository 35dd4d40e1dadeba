/**
 * File-system facts for the path guard: the real path of each requested path, walking it segment by segment
 * the way the kernel does (so `link/..` goes where the link's target's parent is, not back to `.`), following
 * symlinks (dangling ones too), and for a file that does not exist yet, its nearest existing parent.
 *
 * The file-system calls are synchronous: on a local file system each takes a microsecond or two, where the
 * promise-based call costs some 50 µs of CPU for its round trip through libuv's thread pool, and a tool call's
 * paths take a dozen of them. (A project on a slow network file system would hold the event loop for that long.)
 */
import fs from 'node:fs';
import os from 'node:os';
import { decodedVariants, extractPathCandidates, toAbsolute, type GuardedCall } from '../common/path-candidates';
import {
  classifyPath,
  ProtectedMatcher,
  SensitiveMatcher,
  strictest,
  type GuardedPath,
  type PathFacts,
  type PathOp,
  type RootFacts,
} from '../common/path-guard';

const MAX_LINKS = 40;

export function resolvePath(absolute: string): PathFacts {
  if (absolute.includes('\0')) return { absolute, real: null, exists: false, problem: 'the path contains a NUL byte' };
  const pending = absolute.split('/').filter(Boolean);
  const parts: string[] = [];
  let links = 0;
  let exists = true;
  while (pending.length) {
    const seg = pending.shift()!;
    if (seg === '.') continue;
    if (seg === '..') {
      parts.pop();
      continue;
    }
    const next = `/${[...parts, seg].join('/')}`;
    let stat;
    try {
      stat = fs.lstatSync(next);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // Missing from here on; later `..` segments may still climb back into existing directories.
        exists = false;
        parts.push(seg);
        continue;
      }
      if (code === 'EACCES' || code === 'EPERM')
        return {
          absolute,
          real: `/${[...parts, seg, ...pending].join('/')}`,
          exists: false,
          problem: `permission denied at ${next}`,
        };
      if (code === 'ENAMETOOLONG') return { absolute, real: null, exists: false, problem: 'the path is too long' };
      throw err;
    }
    if (stat.isSymbolicLink()) {
      if (++links > MAX_LINKS)
        return { absolute, real: null, exists: false, problem: 'a symlink loop (too many levels of links)' };
      const target = fs.readlinkSync(next);
      if (target.startsWith('/')) parts.length = 0;
      pending.unshift(...target.split('/').filter(Boolean));
      continue;
    }
    parts.push(seg);
  }
  const real = `/${parts.join('/')}`;
  const stat = exists ? lstatOrNull(real) : null;
  return {
    absolute,
    real,
    exists: stat !== null,
    ...(stat?.isFile() ? { links: stat.nlink } : {}),
  };
}

function lstatOrNull(file: string): fs.Stats | null {
  try {
    return fs.lstatSync(file);
  } catch {
    return null;
  }
}

/** The project directory's real path, and whether its file system ignores case. */
export function resolveRoot(projectDir: string): RootFacts {
  const facts = resolvePath(projectDir);
  if (!facts.real || !facts.exists) throw new Error(`the project directory does not exist: ${projectDir}`);
  const real = facts.real;
  let caseInsensitive = false;
  const flipped = real.replace(/[a-z]/i, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));
  if (flipped !== real) {
    try {
      const [a, b] = [fs.statSync(real), fs.statSync(flipped)];
      caseInsensitive = a.ino === b.ino && a.dev === b.dev;
    } catch {
      caseInsensitive = false;
    }
  }
  return { real, caseInsensitive };
}

export type { GuardedPath };

export interface GuardOptions {
  projectDir: string;
  sensitivePatterns: readonly string[];
  /** Files host tools run or load later: a write to one is asked about (common/path-guard.ts). */
  protectedPatterns?: readonly string[];
  /** Real paths of Klea's own state: refused, never asked about. */
  ownState?: readonly string[];
  homeDir?: string;
}

/** Matchers compiled so far, by their patterns: every call is checked against the same few lists. */
const matchers = new Map<string, SensitiveMatcher | ProtectedMatcher>();

function compiled<M extends SensitiveMatcher | ProtectedMatcher>(
  kind: string,
  patterns: readonly string[],
  make: (patterns: readonly string[]) => M
): M {
  const key = `${kind}\0${patterns.join('\0')}`;
  let m = matchers.get(key) as M | undefined;
  if (!m) {
    if (matchers.size >= 64) matchers.clear();
    m = make(patterns);
    matchers.set(key, m);
  }
  return m;
}

/** Every path a call would touch, resolved and classified; one entry per argument (the strictest reading). */
export function guardToolCall(call: GuardedCall, opts: GuardOptions): GuardedPath[] {
  const root = resolveRoot(opts.projectDir);
  const matcher = compiled('sensitive', opts.sensitivePatterns, (p) => new SensitiveMatcher(p));
  const protectedFiles = compiled('protected', opts.protectedPatterns ?? [], (p) => new ProtectedMatcher(p));
  return extractPathCandidates(call).map((c) => guardOne(c.raw, c.arg, c.op, root, matcher, opts, protectedFiles));
}

export function guardOne(
  raw: string,
  arg: string,
  op: PathOp,
  root: RootFacts,
  matcher: SensitiveMatcher,
  opts: GuardOptions,
  protectedFiles = new ProtectedMatcher(opts.protectedPatterns ?? [])
): GuardedPath {
  const home = opts.homeDir ?? os.homedir();
  const readings = [raw, ...decodedVariants(raw)].map((variant) => {
    const abs = toAbsolute(variant, root.real, home);
    if (!abs.ok) return { real: raw, verdict: { class: 'outside' as const, reason: abs.reason } };
    const facts = resolvePath(abs.absolute);
    return {
      real: facts.real ?? abs.absolute,
      verdict: classifyPath(facts, root, matcher, variant, { op, protectedFiles, ownState: opts.ownState }),
    };
  });
  const verdict = strictest(readings.map((r) => r.verdict));
  const chosen = readings.find((r) => r.verdict === verdict) ?? readings[0];
  return { arg, requested: raw, op, real: chosen.real, class: verdict.class, reason: verdict.reason };
}
