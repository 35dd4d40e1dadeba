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

/**
 * A line's fields split at `delimiter` as Python's csv module splits them: a double quote opens a quoted field only
 * at the field's start, and a doubled one inside it stands for one. The fields are not trimmed.
 */
export function splitFields(line: string, delimiter: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted && c === '"') {
      if (line[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (!quoted && c === '"' && field === '') quoted = true;
    else if (!quoted && c === delimiter) {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
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
  /** The header's fields, trimmed. */
  columns: string[];
  /** A field of the header has a space after the delimiter (Python keeps it in the key unless told to skip it). */
  spaced: boolean;
  /** Numbers are written with a decimal comma (`120,50`), in a file not split by commas. */
  decimalComma: boolean;
  /** The file starts with a byte order mark (Python keeps it in the first key unless it reads `utf-8-sig`). */
  bom: boolean;
}

/**
 * The header of a CSV or TSV file: its first line, where no field of it is a number (nor empty) and a column of
 * the lines after it holds a number in at least half of them. Null for another file, a file of one line, lines
 * that do not split alike, or a first line that is data. A file cut for the prompt is read without its last line,
 * which may be cut short.
 */
export function tableHeader(file: Pick<NamedFile, 'path' | 'text'>): TableHeader | null {
  if (!TABLE_FILE.test(plainPath(file.path))) return null;
  const bom = file.text.startsWith('\uFEFF');
  const cut = file.text.endsWith(CUT_MARK);
  let text = file.text.slice(bom ? 1 : 0, cut ? -CUT_MARK.length : undefined);
  if (cut) text = text.slice(0, Math.max(0, text.lastIndexOf('\n')));
  const lines = text
    .split(/\r?\n/)
    .filter((l) => l.trim())
    .slice(0, SAMPLE + 1);
  if (lines.length < 2) return null;
  const delimiter = delimiterOf(file.path, lines);
  if (!delimiter) return null;
  const [raw, ...rows] = lines.map((l) => splitFields(l, delimiter));
  const first = raw!.map((f) => f.trim());
  if (first.some((f) => !f || NUMBER.test(f))) return null;
  const numbers = (col: number) => rows.filter((r) => NUMBER.test((r[col] ?? '').trim()));
  if (!first.some((_, col) => numbers(col).length * 2 >= rows.length)) return null;
  return {
    delimiter,
    columns: first,
    spaced: raw!.slice(1).some((f) => /^\s/.test(f)),
    decimalComma: delimiter !== ',' && rows.some((r) => r.some((f) => /^[-+]?\d+,\d+$/.test(f.trim()))),
    bom,
  };
}

const DELIMITER_NAMES: Record<string, string> = { ',': 'commas', ';': 'semicolons', '\t': 'tabs', '|': '"|"' };

/** What the program writer is told of a table's header: one line, or '' for a file with none. */
export function headerNote(file: Pick<NamedFile, 'path' | 'text'>): string {
  const header = tableHeader(file);
  if (!header) return '';
  const { delimiter, columns } = header;
  const options = [
    ...(delimiter === ',' ? [] : [`delimiter=${JSON.stringify(delimiter)}`]),
    ...(header.spaced ? ['skipinitialspace=True'] : []),
  ];
  const opened = header.bom ? ` (open it with encoding="utf-8-sig")` : '';
  const convert = header.decimalComma ? `float(v.replace(',', '.'))` : 'float()';
  return (
    `The first line of ${file.path} is its header, not a row: the columns ${columns.join(', ')}, split by ` +
    `${DELIMITER_NAMES[delimiter]}. Read the rows with csv.DictReader(${['f', ...options].join(', ')})${opened}; ` +
    `every value is text, so convert numbers with ${convert}.`
  );
}
