/**
 * The small profile's word on a table's header (activities/llm/table-header.ts): which first lines are a header, how
 * the file is split, and what the program writer is told; each header is checked against what Python's csv module
 * reads of the same file.
 */
import { execFileSync } from 'node:child_process';
import { programPrompt } from '../../activities/llm/program';
import { CUT_MARK } from '../../activities/llm/named-files';
import { headerNote, splitFields, tableHeader } from '../../activities/llm/table-header';

/** The first row of `text` as Python's csv module reads it with `delimiter`. */
const pythonFirstRow = (text: string, delimiter: string) =>
  JSON.parse(
    execFileSync(
      'python3',
      ['-c', 'import csv, json, sys; print(json.dumps(next(csv.reader(sys.stdin, delimiter=sys.argv[1]))))', delimiter],
      { input: text }
    ).toString()
  ) as string[];

describe('a table header', () => {
  it.each([
    [
      'sales.csv',
      'date,product,quantity,unit_price\n2026-05-01,notebook,40,2.50\n2026-05-01,fountain pen,3,45.00\n',
      ',',
    ],
    ['ventes.csv', 'région;produit;montant\nNord;chaises;120,50\nSud;tables;455,00\n', ';'],
    ['scores.tsv', 'name\tscore\nada\t91\nbob\t78\n', '\t'],
    ['pipes.CSV', 'id|label\n1|a\n2|b\n', '|'],
    ['quoted.csv', '"name","city, country",total\n"Lopez, Maria","Lyon, FR",120.5\n', ','],
  ])('%s: its first line, split as the file is', (path, text, delimiter) => {
    const header = tableHeader({ path, text });
    expect(header).toMatchObject({ delimiter, columns: pythonFirstRow(text, delimiter) });
  });

  it.each([
    ['a first line that is data', 'data.csv', '2026-05-01,notebook,40\n2026-05-02,pen,3\n'],
    ['a first line with a number in it', 'years.csv', 'name,2024,2025\nada,1,2\n'],
    ['a first line with an empty field', 'gaps.csv', 'name,,total\nada,x,3\n'],
    ['no number below it', 'names.csv', 'first,last\nada,lovelace\nalan,turing\n'],
    ['a number in too few of the lines below it', 'stock.csv', 'pen,N/A\nbook,3\nlamp,none\nmug,unknown\n'],
    ['lines that do not split alike', 'prose.csv', 'Hello, world\nthis is, not, a table\n'],
    ['one line', 'one.csv', 'a,b\n'],
    ['another kind of file', 'sales.txt', 'product,amount\npen,3\n'],
  ])('none for %s', (_, path, text) => {
    expect(tableHeader({ path, text })).toBeNull();
    expect(headerNote({ path, text })).toBe('');
  });

  it('a file cut for the prompt is read without its last line, which may be cut short', () => {
    const shown = 'name,count\nitem0,0\nitem1,1\nite';
    expect(tableHeader({ path: 'big.csv', text: `${shown}${CUT_MARK}` })).toMatchObject({ columns: ['name', 'count'] });
    expect(tableHeader({ path: 'big.csv', text: shown })).toBeNull();
  });

  it('what Python would keep in a key is said: a space after the delimiter, a byte order mark; decimal commas too', () => {
    const spaced = 'name, amount\nada, 3\n';
    expect(pythonFirstRow(spaced, ',')).toEqual(['name', ' amount']);
    expect(headerNote({ path: 'a.csv', text: spaced })).toContain('csv.DictReader(f, skipinitialspace=True);');
    const bom = '\uFEFFproduct;montant\nchaises;120,50\n';
    expect(headerNote({ path: 'b.csv', text: bom })).toBe(
      'The first line of b.csv is its header, not a row: the columns product, montant, split by semicolons. ' +
        'Read the rows with csv.DictReader(f, delimiter=";") (open it with encoding="utf-8-sig"); ' +
        "every value is text, so convert numbers with float(v.replace(',', '.'))."
    );
  });

  it('fields are split as Python splits them: a quote opens a field only at its start, a doubled one is kept as one', () => {
    for (const line of ['"a ""b"", c",d , e', 'tv 55" screen,3', 'x,"y"z,w']) {
      expect(splitFields(line, ',')).toEqual(pythonFirstRow(`${line}\n`, ','));
    }
  });

  it('the program writer is told the header after the file, and how to read it', () => {
    const file = { path: 'ventes.csv', text: 'région;montant\nNord;120,50\n' };
    const prompt = programPrompt({ request: 'Total pour Nord ?', instruction: 'Add up montant.', files: [file] });
    expect(prompt.messages[0]).toContain(
      'File ventes.csv:\n```\nrégion;montant\nNord;120,50\n```\n' +
        'The first line of ventes.csv is its header, not a row: the columns région, montant, split by semicolons. ' +
        'Read the rows with csv.DictReader(f, delimiter=";"); ' +
        "every value is text, so convert numbers with float(v.replace(',', '.'))."
    );
    const plain = programPrompt({
      request: 'How many?',
      instruction: 'Count.',
      files: [{ path: 'a.json', text: '[1]\n' }],
    });
    expect(plain.messages[0]).toContain('File a.json:\n```\n[1]\n```\n\nRequest: How many?');
  });
});
