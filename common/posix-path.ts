/** The few POSIX path operations the pure modules need (workflow code cannot import node:path). */
export const SEP = '/';

export const isAbsolute = (p: string) => p.startsWith('/');

/** Lexical normalisation: collapses `.`, `..` and repeated slashes. Use only where symlinks do not matter. */
export function normalize(p: string): string {
  const abs = isAbsolute(p);
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (!seg || seg === '.') continue;
    if (seg === '..') {
      if (out.length && out[out.length - 1] !== '..') out.pop();
      else if (!abs) out.push('..');
    } else out.push(seg);
  }
  const joined = out.join('/');
  return abs ? `/${joined}` : joined || '.';
}

export function join(...parts: string[]): string {
  return normalize(parts.filter(Boolean).join('/'));
}

/** The folders a relative path lies in, outermost first: `a/b/c.py` → `a`, `a/b`. */
export function parentFolders(p: string): string[] {
  return p
    .split('/')
    .slice(0, -1)
    .map((_, i, up) => up.slice(0, i + 1).join('/'));
}

export function basename(p: string): string {
  const parts = p.split('/').filter(Boolean);
  return parts[parts.length - 1] ?? '';
}

/** True when `child` is `root` or lies under it; compares `root + "/"`, never a bare prefix. */
export function isWithin(root: string, child: string, caseInsensitive = false): boolean {
  const r = caseInsensitive ? root.toLowerCase() : root;
  const c = caseInsensitive ? child.toLowerCase() : child;
  if (r === '/') return c.startsWith('/');
  // Security: `root + "/"`, so /proj-evil is not inside /proj.
  return c === r || c.startsWith(r + SEP);
}

/** `child` relative to `root` (assumes isWithin). */
export function relativeTo(root: string, child: string): string {
  if (child.length === root.length) return '';
  return root === '/' ? child.slice(1) : child.slice(root.length + 1);
}
