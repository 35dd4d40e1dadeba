/**
 * The project's listing as the prompts use it (pure): what `list_dir` gives (a path a line, directories ending in
 * "/", symlinks as `name -> target`), as many levels deep as a prompt has room for and never fewer than two, with
 * the files it names and whether they are every file of the project.
 */

/** How much of the listing the prompts see. */
export const LISTING_CHARS = 1200;
/** The levels a listing always has (cut at a whole line when they do not fit), and the most it may have. */
export const LISTING_MIN_DEPTH = 2;
export const LISTING_MAX_DEPTH = 5;

export interface ProjectListing {
  /** The listing as a prompt shows it: whole lines within `LISTING_CHARS`, ending in "…" where it was cut. */
  text: string;
  /** The files it lists (not directories), in its order. */
  files: string[];
  /**
   * Whether `files` is every file of the project: nothing was cut, and no directory is left unexpanded at the
   * listing's depth. Only then can a path argument that must name an existing file be held to them.
   */
  complete: boolean;
}

/** `list_dir`'s marker for a listing it stopped short. */
const TRUNCATED = /^\[truncated at \d+ entries\]$/;
/** `list_dir`'s text for a directory with nothing in it. */
const EMPTY = '(empty directory)';

/** A line's entry: its own name, without a symlink's target. */
const nameOf = (line: string) => line.split(' -> ')[0].trim();
/** An entry's level: 1 for an entry of the project's root. */
const levelOf = (line: string) => nameOf(line).replace(/\/+$/, '').split('/').length;

/**
 * Whether a listing of `list_dir`'s text two levels deep could show more by going deeper: its lines all fit within
 * `chars` and a folder at the second level was not opened. A project whose first two levels do not fit is never
 * walked deeper, so a big one costs one walk of two levels, as before.
 */
export function mayListDeeper(listed: string, chars = LISTING_CHARS): boolean {
  const lines = listed.split('\n').filter((l) => l.trim() !== '');
  return lines.join('\n').length <= chars && !projectListing(listed, chars).complete;
}

/**
 * The listing of `list_dir`'s text of the project's root `depth` levels deep, as deep as fits whole within `chars`:
 * a project whose files lie in folders inside folders shows them, a big one shows its first two levels as before.
 * Null when `list_dir` stopped short (it lists depth first, so a cut leaves later top-level entries out).
 */
export function deepestListing(listed: string, depth: number, chars = LISTING_CHARS): ProjectListing | null {
  const lines = listed.split('\n').filter((l) => l.trim() !== '');
  if (lines.some((l) => TRUNCATED.test(l))) return null;
  for (let d = depth; d > LISTING_MIN_DEPTH; d--) {
    const kept = lines.filter((l) => levelOf(l) <= d).join('\n');
    if (kept.length <= chars) return projectListing(kept, chars, d);
  }
  return projectListing(lines.filter((l) => levelOf(l) <= LISTING_MIN_DEPTH).join('\n'), chars, LISTING_MIN_DEPTH);
}

/** The listing of `list_dir`'s text (of the project's root, `depth` levels), its lines kept whole within `chars`. */
export function projectListing(listed: string, chars = LISTING_CHARS, depth = LISTING_MIN_DEPTH): ProjectListing {
  const lines = listed.split('\n').filter((l) => l.trim() !== '');
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    used += line.length + (kept.length ? 1 : 0);
    if (used > chars) break;
    kept.push(line);
  }
  const cut = kept.length < lines.length || kept.some((l) => TRUNCATED.test(l));
  const entries = kept.filter((l) => !TRUNCATED.test(l) && l !== EMPTY).map(nameOf);
  const dirs = entries.filter((e) => e.endsWith('/'));
  // A directory with nothing listed under it may be empty, or past the listing's depth.
  const unexpanded = dirs.some((d) => levelOf(d) >= depth && !entries.some((e) => e !== d && e.startsWith(d)));
  return {
    text: kept.length < lines.length ? `${kept.join('\n')}\n…` : kept.join('\n'),
    files: entries.filter((e) => !e.endsWith('/')),
    complete: !cut && !unexpanded,
  };
}
