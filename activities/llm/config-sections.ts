/**
 * The sections of a configuration file that a request names (small profile, pure). An INI or TOML file holds the
 * same keys in several sections (`host` and `port` under `[server]` and under `[database]`): asked to point a file
 * at a new database host and port, the 0.5B model wrote them into the first section, `[server]`, and left
 * `[database]` as it was. Told which section the request names, it changed that one. A section is named when its
 * name stands in the request as a word of its own, in any case; no word of the request is looked up in a list.
 */
import { basename } from '../../common/posix-path';
import { escape } from './named-files';

/** Files whose `[name]` lines open sections: INI, TOML and their kin. */
const SECTIONED = /\.(?:ini|cfg|conf|toml)$|^\.(?:gitconfig|editorconfig)$/i;
const HEADER = /^[ \t]*\[\s*([^\]\n]+?)\s*\][ \t]*(?:[#;].*)?$/gm;

/** The sections of `text` (the file at `path`) whose names the request holds as words, in the file's order. */
export function namedSections(path: string, text: string, request: string): string[] {
  if (!SECTIONED.test(basename(path))) return [];
  const sections = [...new Set([...text.matchAll(HEADER)].map((m) => m[1]!))];
  const named = sections.filter((name) =>
    new RegExp(`(?:^|[^\\p{L}\\p{N}_])${escape(name)}(?:[^\\p{L}\\p{N}_]|$)`, 'iu').test(request)
  );
  // Naming every section (or the only one) says nothing of where a change goes.
  return named.length && named.length < sections.length ? named : [];
}

/** The line a whole-file write is shown after the request, when the request names some of the file's sections. */
export function sectionsLine(path: string, text: string | null, request: string): string[] {
  const named = text === null ? [] : namedSections(path, text, request);
  if (!named.length) return [];
  const list = named.map((n) => `[${n}]`).join(', ');
  return [`The request names the section${named.length > 1 ? 's' : ''} ${list} of ${path}.`];
}
