/**
 * What makes a whole-file rewrite (./file-content) unusable as it came (pure), beside dropping most of the file
 * (`removedMost`, common/text-diff.ts, the workspace server's rule too): it copies in a file it was shown only to
 * read, or it brings Klea's own name in.
 *
 * Klea's name: every prompt carries it (its first line is `# klea:<node>`, and its text speaks of Klea), and a small
 * model that must fill in a fact about the user it was not given writes the name it was shown: with the 1.5B model,
 * a LICENSE's `<COPYRIGHT HOLDER>` became "Klea". A write that brings the name into a file, when neither the file,
 * the request, the step nor the files it was shown hold it, is the prompt leaking into the user's file: the user is
 * asked for the fact instead.
 *
 * A blank swapped for a blank: a model that lacks the fact may write a blank of its own where the file's blank was
 * (`<USERNAME>` became `[Your GitHub Username]`), in the form such blanks take in any language: the user is asked
 * for it the same way. Only a write that takes a blank out of an existing file and puts in one that none of the
 * sources holds counts: a blank is also what a usage line (`--port <PORT>`), a tag (`<script setup>`) or a log
 * prefix (`[DRY RUN]`) looks like, and a write that adds one beside the file's is no such swap. Only the bracketed
 * form is looked at, never the words in it.
 */
import { KEEP_MIN_LINES, keptLines } from '../../common/text-diff';

/**
 * Whether `content` holds most of the lines of `other` (a file shown to read) that `current` (the file being written)
 * did not hold already: at least KEEP_MIN_LINES of them, and more than half.
 */
export function copiedIn(other: string, content: string, current: string): boolean {
  const own = new Set(current.split('\n').map((l) => l.trim()));
  const theirs = other
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !own.has(l));
  if (theirs.length < KEEP_MIN_LINES) return false;
  const { kept } = keptLines(theirs.join('\n'), content);
  return kept * 2 > theirs.length;
}

export const OWN_NAME = 'Klea';

const NAMED = new RegExp(`(^|[^\\p{L}\\p{N}_])${OWN_NAME}(?![\\p{L}\\p{N}_])`, 'iu');

/** Whether `written` holds Klea's name and none of `sources` (what the write was given to go by) does. */
export function leaksOwnName(written: string, sources: readonly string[]): boolean {
  return NAMED.test(written) && !sources.some((s) => NAMED.test(s));
}

/**
 * A blank to fill in: two words or more of letters between brackets, or words joined by `_` in capitals, or one
 * word in capitals between `<` and `>`; not right after a name or a bracket (an index, a wiki link), nor a link's
 * text.
 */
const PLACEHOLDER =
  /(?<![\p{L}\p{N}_)\][!])(?:\[(?:\p{L}+(?: \p{L}+)+|\p{Lu}+(?:_\p{Lu}+)+)\](?![([:\]])|<(?:\p{L}+(?: \p{L}+)+|\p{Lu}+(?:_\p{Lu}+)*)>)/gu;

/** Words in capitals of at least this many letters make a `<…>` blank on their own (`<NAME>`, not `<T>` or `<B>`). */
const CAPS_MIN = 4;

/** The placeholders of `text`. */
export function placeholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[0]).filter((p) => /[ _]/.test(p) || p.length - 2 >= CAPS_MIN);
}

/**
 * The blank `after` (the new content of a file that was `before`) puts where a blank of `before` was, when none of
 * `sources` (what the write went by) holds it: the write made up a blank for a fact it was not given. Null for a new
 * file, for a write that takes no blank out, and for one that adds no new blank.
 */
export function swappedBlank(before: string | null, after: string, sources: readonly string[]): string | null {
  if (before === null) return null;
  const now = placeholders(after);
  if (!placeholders(before).some((p) => !now.includes(p))) return null;
  return now.find((p) => !before.includes(p) && !sources.some((s) => s.includes(p))) ?? null;
}

/** The part of `a` that `b` replaced: `a` without what the two lines share at their start and end. */
function replacedPart(a: string, b: string): string {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  return a.slice(start, a.length - end).trim();
}

/** Longest text of a question's quote. */
const QUOTE_MAX = 80;

/**
 * The question for the user when a write of `path` (`before`: the file as it was, null for a new file) brought
 * Klea's name in (`after`): what the text it replaced should say, when one line shows it, else what the line with
 * the name should say.
 */
export function ownNameQuestion(path: string, before: string | null, after: string): string {
  return factQuestion(path, before, after, (t) => NAMED.test(t), OWN_NAME);
}

/**
 * The question for the user when a write of `path` put `marker` (Klea's name, or a blank: `swappedBlank`) where a
 * fact belongs; `marks` tells a text that holds it.
 */
export function factQuestion(
  path: string,
  before: string | null,
  after: string,
  marks: (text: string) => boolean,
  marker: string
): string {
  const lines = after.split('\n');
  const line = lines.find((l) => marks(l))?.trim() ?? '';
  const kept = new Set(lines);
  const replaced = (before ?? '')
    .split('\n')
    .filter((l) => l.trim() && !kept.has(l))
    .map((l) => replacedPart(l.trim(), line))
    .filter((part) => part && part.length <= QUOTE_MAX && !marks(part))
    .sort((x, y) => x.length - y.length)[0];
  if (replaced) return blankQuestion(path, replaced);
  const quote = line.length > QUOTE_MAX ? `${line.slice(0, QUOTE_MAX)}…` : line;
  return `${path} needs a fact only you know: what should it say in place of ${marker} in \`${quote}\`?`;
}

/**
 * The blank the request points at (it quotes `<COPYRIGHT HOLDER>`, and `before` holds it) that the rewrite `after`
 * leaves as it was: every line of `before` that holds it is still there, or the answer held no file at all. A model
 * that lacks the fact changes something else or nothing, and the step's change is no answer to the request. Null
 * for a new file, for a request that names no blank of the file, and for a rewrite that changed a blank's line.
 */
export function blankLeft(before: string | null, after: string | null, request: string): string | null {
  if (before === null) return null;
  const kept = new Set((after ?? '').split('\n'));
  const lines = before.split('\n');
  return (
    placeholders(request).find((p) => {
      const holding = lines.filter((l) => l.includes(p));
      return holding.length > 0 && (after === null || holding.every((l) => kept.has(l)));
    }) ?? null
  );
}

/** The question for the user for a blank of `path` only they can fill in. */
export const blankQuestion = (path: string, blank: string) => `What should replace "${blank}" in ${path}?`;

/**
 * The question for the user when the rewrite `after` of `path` (`before`: the file as it was, null for a new file)
 * made up a fact none of `sources` (what the write went by) gives: Klea's own name brought in (`leaksOwnName`), or a
 * blank swapped for a blank of its own (`swappedBlank`). Null when it made up neither.
 */
export function madeUpFact(path: string, before: string | null, after: string, sources: readonly string[]) {
  if (leaksOwnName(after, sources)) return ownNameQuestion(path, before, after);
  const blank = swappedBlank(before, after, sources);
  return blank ? factQuestion(path, before, after, (t) => t.includes(blank), blank) : null;
}

/**
 * A file's text without its blank lines and the spaces that end its lines: a rewrite that differs from the file only
 * there is the file written back (a 0.5B rewrite for a question it took for a change dropped one blank line, and the
 * step counted it as the change).
 */
export const textOnly = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean)
    .join('\n');
