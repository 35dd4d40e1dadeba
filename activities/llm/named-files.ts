/**
 * The project files a step names, shown to the pick with their current content so its first call can act on them
 * rather than read them. The names come from the project's listing (so only files that exist), matched as whole
 * words of the step's text, by path or by base name when that is unique.
 */
import { plainPath } from '../../common/plan';
import type { FilePart } from './file-part';

/** How much of one named file the pick sees, and of all of them. */
export const NAMED_FILE_CHARS = 2000;
export const NAMED_FILES_CHARS = 4000;
/** How much of the files a request names the answer composer sees. */
export const ANSWER_FILES_CHARS = 1500;
/** Most files one step gets shown. */
export const NAMED_FILES_MAX = 3;

export interface NamedFile {
  path: string;
  /** Its content; or, for a long file (`part`), the lines of it shown. */
  text: string;
  /** For a long file shown in part (./file-part): which lines `text` holds, and the whole file. */
  part?: FilePart;
}

/** `s` as a regular expression that matches it literally. */
export const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The files of the listing (activities/project/listing.ts) the text names, in its order, at most NAMED_FILES_MAX. */
export function namedFiles(files: readonly string[], text: string): string[] {
  const baseCount = new Map<string, number>();
  for (const f of files) {
    const base = f.slice(f.lastIndexOf('/') + 1);
    baseCount.set(base, (baseCount.get(base) ?? 0) + 1);
  }
  const found: Array<{ path: string; at: number }> = [];
  for (const f of files) {
    const base = f.slice(f.lastIndexOf('/') + 1);
    const names = baseCount.get(base) === 1 && base !== f ? [f, base] : [f];
    let at = -1;
    for (const name of names) {
      // A whole name: not part of a longer path or word (a.py is not named by test_a.py).
      const m = new RegExp(`(?<![\\w./-])(?:\\./)?${escape(name)}(?![\\w/-]|\\.\\w)`).exec(text);
      if (m && (at < 0 || m.index < at)) at = m.index;
    }
    if (at >= 0) found.push({ path: f, at });
  }
  return found
    .sort((a, b) => a.at - b.at)
    .slice(0, NAMED_FILES_MAX)
    .map((f) => f.path);
}

/**
 * Whether the text names `file` by its name without the extension, as people write of a file ("our readme" for
 * `README.md`): a whole word (not part of a longer word, name or path), in any case, of three characters or more.
 */
export function namedByStem(file: string, text: string): boolean {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  const stem = dot > 0 ? base.slice(0, dot) : '';
  if (stem.length < 3) return false;
  return new RegExp(`(?<![\\w./-])${escape(stem)}(?![\\w/-]|\\.\\w)`, 'iu').test(text);
}

/**
 * A file name in prose: a path whose last part has an extension starting with a letter (`notes.txt`,
 * `src/app.ts`), or a dot-file of five letters or more (`.gitignore`; `.pyc` is an extension, not a file).
 */
export const FILE_NAME =
  /(?<![\w./-])(?:\.\/)?((?:[\w-]+\/)*(?:[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}|\.[A-Za-z][\w-]{4,}))(?![\w/-]|\.\w)/g;

/**
 * The files the text names that the listing does not hold: files a step is to create. Only meaningful with a complete
 * listing.
 */
export function newFileNames(existing: readonly string[], text: string): string[] {
  const known = new Set(existing);
  const bases = new Set(existing.map((f) => f.slice(f.lastIndexOf('/') + 1)));
  const found = [...text.matchAll(FILE_NAME)].filter((m) => !isHostName(text, m)).map((m) => m[1]);
  return [...new Set(found)]
    .filter((f) => !known.has(f) && !(f.indexOf('/') < 0 && bases.has(f)))
    .slice(0, NAMED_FILES_MAX);
}

/**
 * Last labels of host names that no file name ends in: a name with one of them (`db.internal`, `example.com`) is a
 * host to point at, not a file to create (a config's host was planned as a new file, and the step was never done).
 */
const HOST_SUFFIXES = new Set(['com', 'net', 'io', 'internal', 'local', 'lan', 'localdomain', 'intranet', 'corp']);

/** Whether a file name the text holds is a host's (its extension a host suffix) or part of an address (`a.b@c.d`). */
function isHostName(text: string, m: RegExpMatchArray): boolean {
  const at = m.index ?? 0;
  if (text[at - 1] === '@' || text[at + m[0].length] === '@') return true;
  return !m[0].includes('/') && HOST_SUFFIXES.has(m[1].slice(m[1].lastIndexOf('.') + 1).toLowerCase());
}

export const CUT_MARK = '\n… (cut: read_file shows the rest)';
export const isCut = (f: NamedFile) => f.text.endsWith(CUT_MARK);
/** Whether a prompt shows the file whole: not cut, nor a part of it. */
export const isWhole = (f: NamedFile) => !isCut(f) && !f.part;

/** The files' texts within the bounds, each cut with a mark that says so. */
export function boundNamedFiles(files: readonly NamedFile[], total = NAMED_FILES_CHARS): NamedFile[] {
  let left = total;
  const out: NamedFile[] = [];
  for (const f of files) {
    if (left <= 0) break;
    // A part is within NAMED_FILE_CHARS already (./file-part).
    if (f.part) {
      left -= f.text.length;
      out.push(f);
      continue;
    }
    const room = Math.min(NAMED_FILE_CHARS, left);
    const text = f.text.length > room ? `${f.text.slice(0, room)}${CUT_MARK}` : f.text;
    left -= Math.min(f.text.length, room);
    out.push({ path: f.path, text });
  }
  return out;
}

/** What `readInFull` looks at of a step's calls so far. */
export interface ReadCall {
  tool: string;
  args: Record<string, unknown>;
  status: string;
  text?: string;
  /** The project files it changed. */
  changed?: readonly string[];
}

/** The marks of a read cut short: by the workspace server's size cap, or by the step's record of the result. */
const READ_CUT = /\n\[truncated: showing lines \d+-\d+ of \d+|… \[\d+ more characters\]$/;

/**
 * The file `path` as the step's last read of it showed it: whole (no line range, nothing cut) and changed by no call
 * since; else null. A file no prompt can show (one behind the permission gate) is seen once the step has read it,
 * with the user's leave: a change to it starts from what the model saw.
 */
export function readInFull(calls: readonly ReadCall[], path: string): NamedFile | null {
  for (const c of [...calls].reverse()) {
    if ((c.changed ?? []).some((f) => plainPath(f) === path)) return null;
    const read =
      c.tool === 'workspace__read_file' && typeof c.args.path === 'string' && plainPath(c.args.path) === path;
    if (!read || c.status !== 'ok') continue;
    const ranged = c.args.start_line !== undefined || c.args.end_line !== undefined;
    if (ranged || c.text === undefined || READ_CUT.test(c.text)) return null;
    return { path, text: c.text.endsWith('\n') ? c.text : `${c.text}\n` };
  }
  return null;
}

/**
 * The extensions a text names files by, lowercased: `.log` in ".log files", `*.png`, "`.tmp`", ".txt-Dateien",
 * "ending in .log."; not the extension of a file it names (`config.yml`, `Node.js`), nor a version (`v1.2`).
 */
export function mentionedKinds(text: string): string[] {
  const out = new Set<string>();
  const kind = /(?<![\p{L}\p{N}_./-])\*?\.([A-Za-z][A-Za-z0-9]{0,7})(?![\p{L}\p{N}_]|\.[\p{L}\p{N}])/gu;
  for (const m of text.matchAll(kind)) out.add(m[1]!.toLowerCase());
  return [...out];
}

/** A file's extension, lowercased (`log` of `logs/a.LOG`); none for a dotfile (`.env`). */
export const kindOf = (path: string) => {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
};
