/** A script run as if it were a command (exit 127): the result says how to run it. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { scriptHint } from '../../tools/workspace/tools/run-command';

describe('a command the shell could not find', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hint-'));
  writeFileSync(path.join(dir, 'stats.py'), 'print(1)\n');
  writeFileSync(path.join(dir, 'notes.txt'), 'x\n');

  it('that names a script in the directory is told to run it with its interpreter', async () => {
    expect(await scriptHint('/bin/sh: 1: stats.py: not found\n', dir)).toBe(
      'stats.py is a file here, not a command: run it as `python3 stats.py`'
    );
  });

  it('gets no hint for a script that is not there, a file with no interpreter, or another error', async () => {
    expect(await scriptHint('/bin/sh: 1: other.py: not found\n', dir)).toBeNull();
    expect(await scriptHint('/bin/sh: 1: notes.txt: not found\n', dir)).toBeNull();
    expect(await scriptHint("python3: can't open file", dir)).toBeNull();
  });
});
