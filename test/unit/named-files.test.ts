/** The project files a step names (shown to the pick with their content), and those it is to create. */
import {
  boundNamedFiles,
  NAMED_FILE_CHARS,
  namedFiles,
  newFileNames,
  readInFull,
} from '../../activities/llm/named-files';
import type { PickStep } from '../../activities/llm/pick-tools';
import { stepNewFiles } from '../../activities/prompt-context';

const listing = ['app.py', 'calc.py', 'config.json', 'src/shapes.py', 'test_calc.py'];

describe('files a step names', () => {
  it('finds listed files by path or unique base name, in the order the text names them', () => {
    expect(namedFiles(listing, 'Fix the bug in calc.py so that test_calc.py passes')).toEqual([
      'calc.py',
      'test_calc.py',
    ]);
    expect(namedFiles(listing, 'Read shapes.py, then src/shapes.py again')).toEqual(['src/shapes.py']);
    expect(namedFiles(listing, 'Change the port in ./config.json to 9090.')).toEqual(['config.json']);
  });

  it('a name inside a longer one is no name: test_calc.py does not name calc.py, calc.pyc names nothing', () => {
    expect(namedFiles(listing, 'Run test_calc.py')).toEqual(['test_calc.py']);
    expect(namedFiles(listing, 'Delete calc.pyc and old/calc.py')).toEqual([]);
  });

  it('directories and files that are not listed are never named', () => {
    expect(namedFiles(listing, 'Look in src/ and in missing.py')).toEqual([]);
    expect(namedFiles([], 'calc.py')).toEqual([]);
  });

  it('at most three files, and the texts are cut to their bounds with a mark', () => {
    const many = Array.from({ length: 5 }, (_, i) => `f${i}.txt`);
    expect(namedFiles(many, many.join(' '))).toHaveLength(3);
    const big = 'x'.repeat(NAMED_FILE_CHARS + 10);
    const [a, b, c] = boundNamedFiles([
      { path: 'a', text: big },
      { path: 'b', text: big },
      { path: 'c', text: 'small' },
    ]);
    expect(a.text).toMatch(/… \(cut: read_file shows the rest\)$/);
    expect(b.text).toMatch(/^x{2000}\n… \(cut/);
    expect(c).toBeUndefined();
  });
});

describe('files a step names that are not in the project yet', () => {
  const files = ['app.py', 'src/shapes.py'];

  it('are the file names of the text the listing does not hold, dot-files included', () => {
    expect(newFileNames(files, 'Create a file owner.txt that contains my full name.')).toEqual(['owner.txt']);
    expect(newFileNames(files, "Add a .gitignore that ignores Python's __pycache__ folders and .pyc files.")).toEqual([
      '.gitignore',
    ]);
    expect(newFileNames(files, 'Move shapes.py to src/geometry/circle.py, keep app.py')).toEqual([
      'src/geometry/circle.py',
    ]);
  });

  it('an extension, a number, an abbreviation or a listed file is no new file', () => {
    expect(newFileNames(files, 'Delete the .pyc files, e.g. app.pyc? No: the average is 42.5, i.e. fine')).toEqual([
      'app.pyc',
    ]);
    expect(newFileNames(files, 'Fix app.py and shapes.py')).toEqual([]);
  });

  it("a host's name, or an address's, is no new file; a file of the same kind in a folder is", () => {
    expect(newFileNames(files, 'Point config.ini at host db.internal, port 6543, and api.com.')).toEqual([
      'config.ini',
    ]);
    expect(newFileNames(files, 'Mail ops@shop.example, john.doe@example.org or Redis.Local')).toEqual([]);
    // The controls: a file of any other extension is new, and so is one in a folder (`./` too), whatever its extension.
    expect(newFileNames(files, 'Write notes.intern, certs/ca.local and ./db.internal')).toEqual([
      'notes.intern',
      'certs/ca.local',
      'db.internal',
    ]);
  });
});

describe('stepNewFiles', () => {
  const step = (over: Partial<PickStep>): PickStep => ({
    id: 's1',
    title: 'Clean up',
    instruction: 'Delete every .DS_Store file and move notes.txt to docs/notes.txt.',
    dependencyResults: [],
    ...over,
  });

  it('names the files the step is to create that are not in the project', () => {
    expect(stepNewFiles(['.DS_Store', 'src/.DS_Store', 'notes.txt'], step({}))).toEqual(['docs/notes.txt']);
  });

  it('a file the step deleted or moved away is gone, not a new file to make; the file it moved to is made', () => {
    const earlierCalls = [
      {
        tool: 'workspace__run_command',
        args: { command: 'find . -name .DS_Store -delete' },
        status: 'ok',
        text: 'exit code: 0',
        changed: ['.DS_Store', 'src/.DS_Store'],
      },
      {
        tool: 'workspace__run_command',
        args: { command: 'mv notes.txt docs/' },
        status: 'ok',
        text: 'exit code: 0',
        changed: ['notes.txt', 'docs/', 'docs/notes.txt'],
      },
    ];
    expect(stepNewFiles(['docs/', 'docs/notes.txt'], step({ earlierCalls }))).toEqual([]);
    // Control: the same listing, without what the calls changed, takes the deleted files for new ones.
    expect(stepNewFiles(['docs/', 'docs/notes.txt'], step({}))).toEqual(['.DS_Store']);
  });
});

describe('a file the step has read whole', () => {
  const read = (args: Record<string, unknown>, text: string, status = 'ok') => ({
    tool: 'workspace__read_file',
    args,
    status,
    text,
  });

  it('is the text its last read showed, as a file ends', () => {
    const calls = [read({ path: '.env' }, 'A=1'), read({ path: './.env' }, 'A=1\nB=2')];
    expect(readInFull(calls, '.env')).toEqual({ path: '.env', text: 'A=1\nB=2\n' });
  });

  it('is not when the read was of some lines, cut, failed, or a call changed the file since', () => {
    expect(readInFull([read({ path: '.env', start_line: 2 }, 'B=2')], '.env')).toBeNull();
    expect(
      readInFull([read({ path: 'a.py' }, 'x\n[truncated: showing lines 1-9 of 900 (size cap 1 bytes)')], 'a.py')
    ).toBeNull();
    expect(readInFull([read({ path: 'a.py' }, 'xxxx… [120 more characters]')], 'a.py')).toBeNull();
    expect(readInFull([read({ path: '.env' }, 'denied', 'error')], '.env')).toBeNull();
    const since = [
      read({ path: '.env' }, 'A=1'),
      { tool: 'workspace__run_command', args: {}, status: 'ok', changed: ['.env'] },
    ];
    expect(readInFull(since, '.env')).toBeNull();
    // The control: a call that changed another file leaves the read as it was.
    expect(readInFull([since[0], { ...since[1], changed: ['b.txt'] }], '.env')).toEqual({
      path: '.env',
      text: 'A=1\n',
    });
  });
});
