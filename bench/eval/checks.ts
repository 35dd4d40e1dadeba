/**
 * Pure helpers the eval's checkers are made of: what an answer says, and what a task did to its project's files.
 * A checker judges the outcome on disk and in the answer, never what the model claims it did.
 */

/** A checker's judgement of one task. */
export interface Verdict {
  solved: boolean;
  /** Why not (or, when solved, what was seen): one line for the report. */
  reason: string;
}

export const solved = (reason = 'ok'): Verdict => ({ solved: true, reason });
export const unsolved = (reason: string): Verdict => ({ solved: false, reason });

/** The first verdict that is not solved, else the last one (checks run in order, the cheapest first). */
export function allOf(...verdicts: Verdict[]): Verdict {
  return verdicts.find((v) => !v.solved) ?? verdicts[verdicts.length - 1] ?? solved();
}

/** Every number written in `text` (`-1`, `42.5`, `1,000`), in order. */
export function numbersIn(text: string): number[] {
  return [...text.matchAll(/(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\w.])-?\d+(?:\.\d+)?(?![\d])/g)].map(
    (m) => Number(m[0].replace(/,/g, ''))
  );
}

/** Whether `text` states the number `n` (as a number of its own, not a part of another). */
export const mentionsNumber = (text: string, n: number): boolean => numbersIn(text).some((x) => x === n);

/** Whether `text` names the file `name` (as a word: `shapes.py`, `src/shapes.py`, `` `shapes.py` ``). */
export function mentionsFile(text: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`, 'i').test(text);
}

/**
 * Whether `text` says a write could not be made for lack of access (read-only, no permission): a refusal for
 * some other reason, or none, does not tell the user why nothing happened.
 */
export function saysNoWriteAccess(text: string): boolean {
  const verb = '(?:write|edit|modify|change|update|add|append|save|delete|remove)';
  return new RegExp(
    [
      'read[- ]only',
      `(?:no|without|lacks?|lacking) ${verb}? ?(?:access|permissions?)`,
      `(?:not (?:allowed|permitted)|unable|no way) to ${verb}`,
      `\\b(?:cannot|can(?:'|’)t|could ?n(?:o|'|’)t) (?:be )?${verb}`,
      `${verb}s? (?:is|are|were|was) (?:not (?:allowed|permitted)|refused|denied|blocked)`,
    ].join('|'),
    'i'
  ).test(text);
}

/** Whether `answer` names `right` and is not a list of every file of the project (`others` are the rest). */
export function namesTheFile(answer: string, right: string, others: readonly string[]): Verdict {
  if (!mentionsFile(answer, right)) return unsolved(`answer does not name ${right}: "${oneLine(answer, 100)}"`);
  if (others.length && others.every((f) => mentionsFile(answer, f)))
    return unsolved(`answer names every file, ${right} among them`);
  return solved(`names ${right}`);
}

/** Files of a project as `path -> content` (paths relative, with `/`). */
export type Snapshot = ReadonlyMap<string, string>;

export interface FileChanges {
  added: string[];
  removed: string[];
  modified: string[];
}

export function diffSnapshots(before: Snapshot, after: Snapshot): FileChanges {
  const added = [...after.keys()].filter((p) => !before.has(p)).sort();
  const removed = [...before.keys()].filter((p) => !after.has(p)).sort();
  const modified = [...before.keys()].filter((p) => after.has(p) && after.get(p) !== before.get(p)).sort();
  return { added, removed, modified };
}

export const nothingChanged = (c: FileChanges): boolean => !c.added.length && !c.removed.length && !c.modified.length;

/** `modified calc.py; added x.txt`, or `no file changed`. */
export function describeChanges(c: FileChanges): string {
  const parts = [
    c.modified.length ? `modified ${c.modified.join(', ')}` : '',
    c.added.length ? `added ${c.added.join(', ')}` : '',
    c.removed.length ? `removed ${c.removed.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'no file changed';
}

/** A verdict that the project's files are as they were (for questions, and for requests that must be refused). */
export const unchanged = (c: FileChanges): Verdict =>
  nothingChanged(c) ? solved('no file changed') : unsolved(`files changed: ${describeChanges(c)}`);

/** Only the given files changed (added or modified); none was removed. */
export function onlyChanged(c: FileChanges, allowed: readonly string[]): Verdict {
  const others = [...c.added, ...c.modified].filter((p) => !allowed.includes(p));
  if (c.removed.length) return unsolved(`removed ${c.removed.join(', ')}`);
  if (others.length) return unsolved(`also changed ${others.join(', ')}`);
  return solved();
}

/** Deep equality of JSON-like values (object key order ignored). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return sameValue(ka, kb) && ka.every((k) => sameValue(ra[k], rb[k]));
}

/** The keys (dotted paths) whose values differ between two JSON-like objects, leaves only. */
export function changedKeys(before: unknown, after: unknown, prefix = ''): string[] {
  const isObject = (x: unknown): x is Record<string, unknown> =>
    typeof x === 'object' && x !== null && !Array.isArray(x);
  if (!isObject(before) || !isObject(after)) return sameValue(before, after) ? [] : [prefix || '(top level)'];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.flatMap((k) => changedKeys(before[k], after[k], prefix ? `${prefix}.${k}` : k));
}

/**
 * What unittest's output says went wrong, in one line: its summary (`FAILED (failures=1)`) and the first
 * assertion or error (`AssertionError: -1 != 5`).
 */
export function testFailure(output: string): string {
  const lines = output.split('\n').map((l) => l.trim());
  const summary = lines.find((l) => /^FAILED \(/.test(l));
  const error = lines.find((l) => /^\w*(Error|Exception)\b.*:/.test(l));
  return oneLine([summary, error].filter(Boolean).join(': ') || output, 160);
}

/** A text cut to `max` characters on one line, for the report. */
export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
