/**
 * Files a reader can hold in their head: no source file over 400 lines, no workflow file over 300, and the task
 * workflow's own file, orchestration only, at most 200. A file that grows past its bound is split along its seams.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/** Data, not code: one entry per eval task, read as a table. */
const DATA = new Set(['bench/eval/tasks-dev.ts', 'bench/eval/tasks-holdout.ts']);

function sources(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => /\.(ts|js|mjs)$/.test(f) && !f.startsWith('test/') && !DATA.has(f))
    .filter((f) => !/(^|\/)(node_modules|dist)\//.test(f) && !f.endsWith('.config.js'));
}

const lines = (file: string) => readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1;
const over = (files: string[], limit: number) =>
  files.map((f) => ({ file: f, lines: lines(f) })).filter((f) => f.lines > limit);

describe('file sizes', () => {
  const files = sources();

  it('finds the source files', () => {
    expect(files).toContain('workflows/task/workflow.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it('no source file is over 400 lines', () => {
    expect(over(files, 400)).toEqual([]);
  });

  it('no workflow file is over 300 lines', () => {
    expect(over(files.filter((f) => f.startsWith('workflows/')), 300)).toEqual([]);
  });

  it("the task workflow's own file is orchestration only: at most 200 lines", () => {
    expect(over(['workflows/task/workflow.ts'], 200)).toEqual([]);
  });
});
