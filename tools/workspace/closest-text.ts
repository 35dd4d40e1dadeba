/**
 * The text of a file closest to an `old_string` that is not in it: what an edit most likely meant, for its error
 * message. An edit that misquotes a line (its indentation, a word of it) is answered with the real one to copy, rather
 * than only with advice to read the file again.
 */

/** Beyond these, an edit's error goes without a suggestion (the search stays cheap). */
const MAX_FILE_LINES = 5000;
const MAX_WANTED_CHARS = 2000;
/** How alike (Dice coefficient of character pairs, 0..1) a text must be to be suggested. */
export const CLOSEST_MIN_SIMILARITY = 0.5;

function pairs(s: string): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < s.length - 1; i++) {
    const p = s.slice(i, i + 2);
    m.set(p, (m.get(p) ?? 0) + 1);
  }
  return m;
}

/** Dice coefficient of two texts' character pairs: 1 for equal texts, 0 for texts with no pair in common. */
export function similarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const pa = pairs(a);
  const pb = pairs(b);
  let common = 0;
  for (const [p, n] of pa) common += Math.min(n, pb.get(p) ?? 0);
  return (2 * common) / (a.length - 1 + (b.length - 1));
}

/**
 * The lines of `text` most like `wanted` (as many lines as it has, compared without their indentation), when they
 * are alike enough and no other lines are as alike: `{line, text}` with the 1-based first line, else null.
 */
export function closestText(text: string, wanted: string): { line: number; text: string } | null {
  const want = wanted.split('\n').filter((l) => l.trim());
  if (!want.length || wanted.length > MAX_WANTED_CHARS) return null;
  const lines = text.split('\n');
  if (lines.length > MAX_FILE_LINES) return null;
  const target = want.map((l) => l.trim()).join('\n');
  let best: { line: number; text: string; score: number } | null = null;
  let tie = false;
  for (let i = 0; i + want.length <= lines.length; i++) {
    const window = lines.slice(i, i + want.length);
    if (!window[0].trim()) continue;
    const score = similarity(window.map((l) => l.trim()).join('\n'), target);
    if (best && score === best.score && window.join('\n') !== best.text) tie = true;
    if (!best || score > best.score) {
      best = { line: i + 1, text: window.join('\n'), score };
      tie = false;
    }
  }
  return best && !tie && best.score >= CLOSEST_MIN_SIMILARITY ? { line: best.line, text: best.text } : null;
}
