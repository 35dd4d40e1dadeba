/**
 * Glob patterns (gitignore-like), pure: `*` and `?` stay within one path segment, `**` crosses segments,
 * `[abc]` and `{a,b}` as usual. A pattern without `/` matches a file's name at any depth.
 */
export interface GlobOptions {
  caseInsensitive?: boolean;
}

const escapeRe = (s: string) => s.replace(/[.+^$()|\\]/g, '\\$&');

function translate(pattern: string): string {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        const atStart = i === 0 || pattern[i - 1] === '/';
        const slashAfter = pattern[i + 2] === '/';
        i++;
        if (atStart && slashAfter) {
          re += '(?:.*/)?';
          i++;
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) {
        re += '\\[';
      } else {
        const body = pattern
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else if (c === '{') {
      const end = pattern.indexOf('}', i + 1);
      if (end === -1) {
        re += '\\{';
      } else {
        re += `(?:${pattern
          .slice(i + 1, end)
          .split(',')
          .map((alt) => translate(alt))
          .join('|')})`;
        i = end;
      }
    } else {
      re += escapeRe(c);
    }
  }
  return re;
}

export function globToRegExp(pattern: string, opts: GlobOptions = {}): RegExp {
  let p = pattern.replace(/^\.\//, '');
  if (!p.includes('/')) p = `**/${p}`;
  else if (p.startsWith('/')) p = p.slice(1);
  if (p.endsWith('/')) p += '**';
  return new RegExp(`^${translate(p)}$`, opts.caseInsensitive ? 'i' : '');
}

/** Tests a path relative to the pattern's base (POSIX separators, no leading `./`). */
export function globMatch(pattern: string, relativePath: string, opts: GlobOptions = {}): boolean {
  return globToRegExp(pattern, opts).test(relativePath);
}
