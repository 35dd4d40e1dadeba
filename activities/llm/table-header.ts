/**
 * The small profile's word on a table's header (docs/models.md): a program a small model writes over a
 * CSV or TSV file of the project reads its first line as a row of data (`float('quantity')`), and fails on it, or
 * with `csv.DictReader` multiplies the text of two columns. Told that the first line is the header, which columns
 * it names, how the file is split and that the values are text, the model reads the rows by the columns' names and
 * converts the numbers. Read from the file itself: the header is a first line with no number in it over lines that
 * have numbers in those columns; no word of any request or file is looked up.
 */
import { plainPath } from '../../common/plan';
import { CUT_MARK, type NamedFile } from './named-files';

const TABLE_FILE = /\.(?:csv|tsv)$/i;
const DELIMITERS = [',', ';', '\t', '|'] as const;
const NUMBER = /^[-+]?(?:\d[\d_]*(?:[.,]\d+)?|[.,]\d+)(?:[eE][-+]?\d+)?%?$/;
/** How many lines after the first are looked at. */
const SAMPLE = 20;

/** A line's fields split at `delimiter`, outside double quotes, without the quotes. */
export function splitFields(line: string, delimiter: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') {
      if (quoted && line[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = !quoted;
    } else if (c === delimiter && !quoted) {
      fields.push(field.trim());
      field = '';
    } else field += c;
  }
  fields.push(field.trim());
  return fields;
}

/**
 * The delimiter every sampled line splits into the same number (two or more) of fields by: a tab for a `.tsv`
 * file, else the first of `,`, `;`, `\t` and `|` that does (a file written with `;` keeps `,` for decimals).
 */
function delimiterOf(path: string, lines: readonly string[]): string | null {
  const candidates = /\.tsv$/i.test(path) ? ['\t'] : DELIMITERS;
  for (const d of candidates) {
    const counts = lines.map((l) => splitFields(l, d).length);
    if (counts[0]! >= 2 && counts.every((n) => n === counts[0])) return d;
  }
  return null;
}

export interface TableHeader {
  delimiter: string;
  columns: string[];
}

/**
 * The header of a CSV or TSV file: its first line, where no field of it is a number (nor empty) and a column of
 * the lines after it holds a number. Null for another file, a file of one line, lines that do not split alike, or
 * a first line that is data.
 */
export function tableHeader(file: Pick<NamedFile, 'path' | 'text'>): TableHeader | null {
  if (!TABLE_FILE.test(plainPath(file.path))) return null;
  const lines = file.text
    .replace(CUT_MARK, '')
    .split(/\r?\n/)
    .filter((l) => l.trim())
    .slice(0, SAMPLE + 1);
  if (lines.length < 2) return null;
  const delimiter = delimiterOf(file.path, lines);
  if (!delimiter) return null;
  const [first, ...rows] = lines.map((l) => splitFields(l, delimiter));
  if (first!.some((f) => !f || NUMBER.test(f))) return null;
  const numeric = first!.some((_, col) => rows.some((r) => NUMBER.test(r[col] ?? '')));
  return numeric ? { delimiter, columns: first! } : null;
}

const DELIMITER_NAMES: Record<string, string> = { ',': 'commas', ';': 'semicolons', '\t': 'tabs', '|': '"|"' };

/** What the program writer is told of a table's header: one line, or '' for a file with none. */
export function headerNote(file: Pick<NamedFile, 'path' | 'text'>): string {
  const header = tableHeader(file);
  if (!header) return '';
  const { delimiter, columns } = header;
  const reader = delimiter === ',' ? 'csv.DictReader(f)' : `csv.DictReader(f, delimiter=${JSON.stringify(delimiter)})`;
  return (
    `The first line of ${file.path} is its header, not a row: the columns ${columns.join(', ')}, split by ` +
    `${DELIMITER_NAMES[delimiter]}. Read the rows with ${reader}; every value is text, so convert numbers with float().`
  );
}
