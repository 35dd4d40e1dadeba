/**
 * The part of a long file a step is about (the small profile, docs/models.md): a file too long to show whole is shown
 * as the block of lines around a name of code that the step or the request gives (`applyDiscount`, `max_retries`),
 * and a change to it is written as the new content of those lines, put back in the file as it is. Shown only the
 * first 2000 characters of a file of a few hundred lines, a small model reads it, reads it again and changes
 * nothing; asked to write the whole file, it keeps a fraction of it. Pure: what it goes by is the names' shape and
 * the file's layout (blank lines, indentation), never their words.
 */

/** The lines of a file a prompt shows in place of the whole file. */
export interface FilePart {
  /** The first and last line shown, counted from 1. */
  from: number;
  to: number;
  /** How many lines the file has. */
  total: number;
  /** The whole file, to put a new content of the part back into. */
  whole: string;
}

/** Most lines a part holds (a longer block is shown around the name, within it). */
export const PART_MAX_LINES = 60;
/** Lines shown above the name when its block is longer than `PART_MAX_LINES`. */
const PART_LINES_ABOVE = 10;

/**
 * Names in a text that are names of code by their shape: an underscore or `$` inside, a lower-case letter followed by
 * an upper-case one (`applyDiscount`), letters then digits (`v2api`), or anything the text puts in backticks; three
 * characters at least. In the text's order, each once.
 */
export function codeNames(text: string): string[] {
  const quoted = [...text.matchAll(/`([^`\n]{3,80})`/g)].flatMap((m) => m[1].match(/[A-Za-z_$][\w$]{2,}/g) ?? []);
  const shaped = (text.match(/[A-Za-z_$][\w$]{2,}/g) ?? []).filter(
    (w) => /[A-Za-z0-9][_$]+[A-Za-z0-9]/.test(w) || /[a-z][A-Z]/.test(w) || /[A-Za-z][0-9]/.test(w)
  );
  return [...new Set([...quoted, ...shaped])];
}

const indent = (line: string) => line.length - line.trimStart().length;
const blank = (line: string | undefined) => line === undefined || line.trim() === '';
/** A line that only closes what the lines above opened (`}`, `});`, `]`), at the block's own indentation. */
const closes = (line: string) => /^[\s]*[)\]}]/.test(line);

/**
 * The part of `text` (lines from..to) around the first of `names` it holds as a whole name, or null: none of them is
 * in it. Where a name is used more than once, the least indented use is taken (a definition sits further out than its
 * uses). The part is that use's top-level block: from the line at the margin that starts it (after a blank line, or
 * the file's start) to the last line before a blank line that a line at the margin follows, within `PART_MAX_LINES`
 * and `maxChars`.
 */
export function filePart(text: string, names: readonly string[], maxChars: number): FilePart | null {
  const lines = text.replace(/\n$/, '').split('\n');
  for (const name of names) {
    const whole = new RegExp(`(?<![\\w$])${name.replace(/[$]/g, '\\$')}(?![\\w$])`);
    const hits = lines.flatMap((l, i) => (whole.test(l) ? [i] : []));
    if (!hits.length) continue;
    const at = hits.reduce((best, i) => (indent(lines[i]) < indent(lines[best]) ? i : best), hits[0]);
    let from = at;
    while (from > 0 && !(indent(lines[from]) === 0 && !blank(lines[from]) && blank(lines[from - 1]))) from--;
    let to = at;
    for (let i = at + 1; i < lines.length; i++) {
      if (blank(lines[i])) continue;
      const afterBlank = blank(lines[i - 1]);
      if (afterBlank && indent(lines[i]) === 0 && !closes(lines[i])) break;
      to = i;
    }
    if (to - from + 1 > PART_MAX_LINES) {
      const start = from;
      from = Math.max(start, at - PART_LINES_ABOVE);
      to = Math.min(to, from + PART_MAX_LINES - 1);
      from = Math.max(start, to - PART_MAX_LINES + 1);
    }
    // Within maxChars: the end further from the name gives up a line first.
    while (lines.slice(from, to + 1).join('\n').length > maxChars && (from < at || to > at)) {
      if (to - at >= at - from && to > at) to--;
      else from++;
    }
    if (lines.slice(from, to + 1).join('\n').length > maxChars) continue;
    return { from: from + 1, to: to + 1, total: lines.length, whole: text };
  }
  return null;
}

/** The lines of `part` as a prompt shows them (with a newline at the end). */
export function partText(part: FilePart): string {
  return `${part.whole
    .replace(/\n$/, '')
    .split('\n')
    .slice(part.from - 1, part.to)
    .join('\n')}\n`;
}

/** The whole file with the part's lines replaced by `content` (the rest byte for byte as it was). */
export function withPart(part: FilePart, content: string): string {
  const endsWithNewline = part.whole.endsWith('\n');
  const lines = part.whole.replace(/\n$/, '').split('\n');
  const replaced = content.replace(/\n$/, '').split('\n');
  const out = [...lines.slice(0, part.from - 1), ...replaced, ...lines.slice(part.to)].join('\n');
  return endsWithNewline ? `${out}\n` : out;
}
