/**
 * A file's change as a unified diff (pure): what a `write_file` or `edit_file` did, for the `changes` of a
 * `step_finished` event (docs/architecture.md §8). A line diff (longest common subsequence of the lines that differ
 * after the common head and tail are set aside), capped in lines and bytes, with "N more lines" for the rest. A new
 * file shows as all added; a binary file, or one too large to compare, says so instead of a diff.
 */
import { z } from 'zod';

export const FileChangeSchema = z.object({
  path: z.string(),
  diff: z.string().describe('unified diff (capped; the rest as "N more lines"), or a note for binary/large files'),
  added: z.number().int(),
  removed: z.number().int(),
});
export type FileChange = z.infer<typeof FileChangeSchema>;

export interface DiffLimits {
  /** Lines of diff shown (headers included); the rest are counted. */
  maxLines: number;
  /** Bytes of diff shown. */
  maxBytes: number;
  /** Unchanged lines shown around each change. */
  context: number;
}

export const DIFF_LIMITS: DiffLimits = { maxLines: 200, maxBytes: 12 * 1024, context: 3 };
/** Files larger than this (before + after, characters) are not compared line by line. */
export const MAX_DIFF_INPUT = 4 * 1024 * 1024;
/** The lines that differ are compared by LCS only up to this many cells; beyond, the block is replaced whole. */
const MAX_LCS_CELLS = 2_000_000;

type Op = { t: ' ' | '-' | '+'; line: string };

const splitLines = (text: string): string[] => {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
};

const looksBinary = (text: string): boolean => text.includes('\u0000');

/** The edit script from `a` to `b`: unchanged, removed and added lines in order. */
export function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ops: Op[] = a.slice(0, head).map((line) => ({ t: ' ', line }));
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const n = am.length;
  const m = bm.length;
  if (n * m > MAX_LCS_CELLS || n === 0 || m === 0) {
    for (const line of am) ops.push({ t: '-', line });
    for (const line of bm) ops.push({ t: '+', line });
  } else {
    // lcs[i * (m + 1) + j]: length of the LCS of am[i..] and bm[j..].
    const w = m + 1;
    const lcs = new Int32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i * w + j] =
          am[i] === bm[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (am[i] === bm[j]) {
        ops.push({ t: ' ', line: am[i] });
        i++;
        j++;
      } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) ops.push({ t: '-', line: am[i++] });
      else ops.push({ t: '+', line: bm[j++] });
    }
    while (i < n) ops.push({ t: '-', line: am[i++] });
    while (j < m) ops.push({ t: '+', line: bm[j++] });
  }
  for (const line of a.slice(a.length - tail)) ops.push({ t: ' ', line });
  return ops;
}

/** Groups an edit script into unified-diff hunks with `context` unchanged lines around each change. */
function hunks(ops: Op[], context: number): string[] {
  const out: string[] = [];
  const changed = ops.map((o, k) => (o.t === ' ' ? -1 : k)).filter((k) => k >= 0);
  if (!changed.length) return out;
  // Line numbers (1-based) in a and b before each op.
  const aNo: number[] = [];
  const bNo: number[] = [];
  let x = 1;
  let y = 1;
  for (const o of ops) {
    aNo.push(x);
    bNo.push(y);
    if (o.t !== '+') x++;
    if (o.t !== '-') y++;
  }
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k] - context);
    let last = changed[k];
    while (k + 1 < changed.length && changed[k + 1] - last <= 2 * context) last = changed[++k];
    k++;
    const end = Math.min(ops.length, last + context + 1);
    const slice = ops.slice(start, end);
    const aLen = slice.filter((o) => o.t !== '+').length;
    const bLen = slice.filter((o) => o.t !== '-').length;
    const aStart = aLen ? aNo[start] : aNo[start] - 1;
    const bStart = bLen ? bNo[start] : bNo[start] - 1;
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`);
    for (const o of slice) out.push(o.t + o.line);
  }
  return out;
}

/**
 * The change from `before` (null: the file did not exist) to `after` of the file at `path`, as a unified diff
 * capped by `limits`, with its added and removed line counts.
 */
export function fileChange(
  path: string,
  before: string | null,
  after: string,
  limits: DiffLimits = DIFF_LIMITS
): FileChange {
  if (looksBinary(after) || (before !== null && looksBinary(before)))
    return {
      path,
      diff: `Binary file ${before === null ? 'created' : 'changed'}: diff not shown`,
      added: 0,
      removed: 0,
    };
  const a = splitLines(before ?? '');
  const b = splitLines(after);
  if ((before?.length ?? 0) + after.length > MAX_DIFF_INPUT)
    return {
      path,
      diff: `File too large to compare (${a.length} → ${b.length} lines): diff not shown`,
      added: before === null ? b.length : 0,
      removed: 0,
    };
  const ops = diffLines(a, b);
  const added = ops.filter((o) => o.t === '+').length;
  const removed = ops.filter((o) => o.t === '-').length;
  const lines = [before === null ? '--- /dev/null' : `--- a/${path}`, `+++ b/${path}`, ...hunks(ops, limits.context)];
  if (lines.length === 2) return { path, diff: '', added, removed };
  const shown: string[] = [];
  let bytes = 0;
  for (const line of lines) {
    if (shown.length >= limits.maxLines || bytes + line.length + 1 > limits.maxBytes) break;
    shown.push(line);
    bytes += line.length + 1;
  }
  const rest = lines.length - shown.length;
  if (rest > 0) shown.push(`… ${rest} more line${rest === 1 ? '' : 's'}`);
  return { path, diff: shown.join('\n'), added, removed };
}

/**
 * A whole-file write must keep at least half the non-blank lines of an existing file of this many or more (the
 * workspace server refuses it otherwise, and the small profile's rewrite is not used). Below it, a file is small
 * enough that replacing all of it is a change like any other (a version file's one line).
 */
export const KEEP_MIN_LINES = 4;

/**
 * How many of `before`'s non-blank lines `after` keeps, counted line by line (a line `after` holds once keeps one
 * of the old ones, however often it was there), out of how many there were. Pure.
 */
export function keptLines(before: string, after: string): { old: number; kept: number } {
  const old = before.split('\n').filter((l) => l.trim()).length;
  return { old, kept: old - droppedLines(before, after).length };
}

/**
 * Whether `after`, written over `before` whole, removes most of it: fewer than half the non-blank lines of a file of
 * `KEEP_MIN_LINES` or more kept. With how many there were and how many it keeps, or null. Pure.
 */
export function removedMost(before: string, after: string): { old: number; kept: number } | null {
  const counts = keptLines(before, after);
  return counts.old >= KEEP_MIN_LINES && counts.kept * 2 < counts.old ? counts : null;
}

/** `before`'s non-blank lines that `after` does not keep, counted as `keptLines` counts them, in order. Pure. */
export function droppedLines(before: string, after: string): string[] {
  const left = new Map<string, number>();
  for (const l of after.split('\n')) left.set(l.trim(), (left.get(l.trim()) ?? 0) + 1);
  const dropped: string[] = [];
  for (const l of before.split('\n').filter((x) => x.trim())) {
    const n = left.get(l.trim()) ?? 0;
    if (n > 0) left.set(l.trim(), n - 1);
    else dropped.push(l);
  }
  return dropped;
}
