/**
 * File-system facts for the path guard: the real path of each requested path, walking it segment by segment
 * the way the kernel does (so `link/..` goes where the link's target's parent is, not back to `.`), following
 * symlinks (dangling ones too), and for a file that does not exist yet, its nearest existing parent.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import {
  classifyPath,
  decodedVariants,
  extractPathCandidates,
  SensitiveMatcher,
  strictest,
  toAbsolute,
  type GuardedCall,
  type GuardedPath,
  type PathFacts,
  type PathOp,
  type RootFacts,
} from '../common/path-guard';

const MAX_LINKS = 40;

export async function resolvePath(absolute: string): Promise<PathFacts> {
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
      stat = await fs.lstat(next);
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
      const target = await fs.readlink(next);
      if (target.startsWith('/')) parts.length = 0;
      pending.unshift(...target.split('/').filter(Boolean));
      continue;
    }
    parts.push(seg);
  }
  const real = `/${parts.join('/')}`;
  const stat = exists ? await fs.lstat(real).catch(() => null) : null;
  return {
    absolute,
    real,
    exists: stat !== null,
    ...(stat?.isFile() ? { links: stat.nlink } : {}),
  };
}

/** The project directory's real path, and whether its file system ignores case. */
export async function resolveRoot(projectDir: string): Promise<RootFacts> {
  const facts = await resolvePath(projectDir);
  if (!facts.real || !facts.exists) throw new Error(`the project directory does not exist: ${projectDir}`);
  const real = facts.real;
  let caseInsensitive = false;
  const flipped = real.replace(/[a-z]/i, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));
  if (flipped !== real) {
    try {
      const [a, b] = await Promise.all([fs.stat(real), fs.stat(flipped)]);
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
  homeDir?: string;
}

/** Every path a call would touch, resolved and classified; one entry per argument (the strictest reading). */
export async function guardToolCall(call: GuardedCall, opts: GuardOptions): Promise<GuardedPath[]> {
  const root = await resolveRoot(opts.projectDir);
  const matcher = new SensitiveMatcher(opts.sensitivePatterns);
  const out: GuardedPath[] = [];
  for (const c of extractPathCandidates(call)) out.push(await guardOne(c.raw, c.arg, c.op, root, matcher, opts));
  return out;
}

export async function guardOne(
  raw: string,
  arg: string,
  op: PathOp,
  root: RootFacts,
  matcher: SensitiveMatcher,
  opts: GuardOptions
): Promise<GuardedPath> {
  const home = opts.homeDir ?? os.homedir();
  const readings = await Promise.all(
    [raw, ...decodedVariants(raw)].map(async (variant) => {
      const abs = toAbsolute(variant, root.real, home);
      if (!abs.ok) return { real: raw, verdict: { class: 'outside' as const, reason: abs.reason } };
      const facts = await resolvePath(abs.absolute);
      return { real: facts.real ?? abs.absolute, verdict: classifyPath(facts, root, matcher, variant) };
    })
  );
  const verdict = strictest(readings.map((r) => r.verdict));
  const chosen = readings.find((r) => r.verdict === verdict) ?? readings[0];
  return { arg, requested: raw, op, real: chosen.real, class: verdict.class, reason: verdict.reason };
}
