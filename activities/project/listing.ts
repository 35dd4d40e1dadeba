/**
 * The project's listing as the prompts use it (pure): what `list_dir` gives two levels deep (a path a line,
 * directories ending in "/", symlinks as `name -> target`), kept to what a prompt has room for, with the files it
 * names and whether they are every file of the project.
 */

/** How much of the listing the prompts see. */
export const LISTING_CHARS = 1200;

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

/** The listing of `list_dir`'s text (of the project's root, depth 2), its lines kept whole within `chars`. */
export function projectListing(listed: string, chars = LISTING_CHARS): ProjectListing {
  const lines = listed.split('\n').filter((l) => l.trim() !== '');
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    used += line.length + (kept.length ? 1 : 0);
    if (used > chars) break;
    kept.push(line);
  }
  const cut = kept.length < lines.length || kept.some((l) => TRUNCATED.test(l));
  const entries = kept.filter((l) => !TRUNCATED.test(l) && l !== EMPTY).map((l) => l.split(' -> ')[0].trim());
  const dirs = entries.filter((e) => e.endsWith('/'));
  // A directory with nothing listed under it may be empty, or past the listing's depth.
  const unexpanded = dirs.some((d) => d.split('/').length > 2 && !entries.some((e) => e !== d && e.startsWith(d)));
  return {
    text: kept.length < lines.length ? `${kept.join('\n')}\n…` : kept.join('\n'),
    files: entries.filter((e) => !e.endsWith('/')),
    complete: !cut && !unexpanded,
  };
}
