/** A file's change as a unified diff: edits, new files, caps, binary and large files. */
import { diffLines, fileChange } from '../../common/text-diff';

describe('fileChange', () => {
  it('an edit shows as a hunk with context, and counts its lines', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].join('\n') + '\n';
    const after = ['a', 'b', 'c', 'D', 'e', 'f', 'g', 'h', 'i'].join('\n') + '\n';

    const c = fileChange('src/x.txt', before, after);

    expect(c).toEqual({
      path: 'src/x.txt',
      added: 2,
      removed: 1,
      diff: [
        '--- a/src/x.txt',
        '+++ b/src/x.txt',
        '@@ -1,8 +1,9 @@',
        ' a',
        ' b',
        ' c',
        '-d',
        '+D',
        ' e',
        ' f',
        ' g',
        ' h',
        '+i',
      ].join('\n'),
    });
  });

  it('changes far apart make separate hunks', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `l${i}`);
    const next = [...lines];
    next[2] = 'X';
    next[25] = 'Y';

    const c = fileChange('f', lines.join('\n'), next.join('\n'));

    expect(c.diff.split('\n').filter((l) => l.startsWith('@@'))).toEqual(['@@ -1,6 +1,6 @@', '@@ -23,7 +23,7 @@']);
    expect([c.added, c.removed]).toEqual([2, 2]);
  });

  it('a new file is all added', () => {
    const c = fileChange('new.md', null, 'one\ntwo\n');

    expect(c).toEqual({
      path: 'new.md',
      added: 2,
      removed: 0,
      diff: '--- /dev/null\n+++ b/new.md\n@@ -0,0 +1,2 @@\n+one\n+two',
    });
  });

  it('a long diff is capped, the rest counted as more lines', () => {
    const after = Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n');

    const c = fileChange('big.txt', null, after);

    const lines = c.diff.split('\n');
    expect(lines).toHaveLength(201);
    expect(lines[200]).toBe('… 303 more lines');
    expect(c.added).toBe(500);
  });

  it('the byte cap holds too', () => {
    const after = Array.from({ length: 100 }, () => 'x'.repeat(500)).join('\n');

    const c = fileChange('wide.txt', null, after);

    expect(Buffer.byteLength(c.diff)).toBeLessThan(12 * 1024 + 100);
    expect(c.diff).toMatch(/… \d+ more lines$/);
  });

  it('a binary file says so instead of a diff', () => {
    expect(fileChange('a.bin', 'x', 'y\u0000z')).toEqual({
      path: 'a.bin',
      diff: 'Binary file changed: diff not shown',
      added: 0,
      removed: 0,
    });
  });

  it('no change, no diff', () => {
    expect(fileChange('same', 'a\n', 'a\n')).toEqual({ path: 'same', diff: '', added: 0, removed: 0 });
  });
});

describe('diffLines', () => {
  it('finds the longest common subsequence', () => {
    const ops = diffLines(['a', 'b', 'c', 'a', 'b', 'b', 'a'], ['c', 'b', 'a', 'b', 'a', 'c']);

    expect(ops.filter((o) => o.t === ' ')).toHaveLength(4);
    expect(ops.filter((o) => o.t !== '+').map((o) => o.line)).toEqual(['a', 'b', 'c', 'a', 'b', 'b', 'a']);
    expect(ops.filter((o) => o.t !== '-').map((o) => o.line)).toEqual(['c', 'b', 'a', 'b', 'a', 'c']);
  });
});
