/**
 * The small profile's programs (activities/llm/program.ts): which steps are worked out by a program, and how the
 * program runs (from standard input: nothing is written to the project).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { computingSteps, programCommand, programPrompt } from '../../activities/llm/program';
import { CUT_MARK } from '../../activities/llm/named-files';

const data = { path: 'sales.csv', text: 'region,amount\nNord,10\nSud,5\nNord,2.5\n' };

describe('steps worked out by a program', () => {
  it('a step that expects nothing and works on data files: those the steps it builds on name, or, for a question, those it names', () => {
    const steps = [
      { id: 'named', files: [data] },
      { id: 'built-on', files: [], sources: [data] },
      { id: 'code', files: [{ path: 'report.py', text: 'print(1)\n' }] },
      { id: 'mixed', files: [data, { path: 'report.py', text: 'print(1)\n' }] },
      { id: 'changes', files: [data], expect: { changes: ['sales.csv'] } },
      { id: 'checked', files: [data], expect: { check: 'python3 report.py' } },
      { id: 'creates', files: [data], newFiles: ['total.txt'] },
      { id: 'nothing', files: [] },
    ];
    expect(computingSteps(steps, true).map((c) => [c.step.id, c.files.map((f) => f.path)])).toEqual([
      ['named', ['sales.csv']],
      ['built-on', ['sales.csv']],
    ]);
    // A step that names a data file, for a request not put as a question, may be a change: picked as usual.
    expect(computingSteps(steps, false).map((c) => c.step.id)).toEqual(['built-on']);
  });

  it('a step that names no file and builds on no step works, for a question, on the request’s files when all are data', () => {
    const code = { path: 'report.py', text: 'print(1)\n' };
    const steps = [
      { id: 'alone', files: [], requestFiles: [data] },
      { id: 'built-on', files: [], sources: [data], requestFiles: [{ path: 'other.csv', text: 'a\n1\n' }] },
      { id: 'code', files: [], requestFiles: [code] },
      { id: 'checked', files: [], requestFiles: [data], expect: { check: 'echo $COUNT' } },
      { id: 'mixed', files: [], requestFiles: [data, code] },
      { id: 'after', files: [], requestFiles: [data], dependencyResults: [{ id: 's0' }] },
    ];
    expect(computingSteps(steps, true).map((c) => [c.step.id, c.files.map((f) => f.path)])).toEqual([
      ['alone', ['sales.csv']],
      ['built-on', ['sales.csv']],
    ]);
    // Not for a request that is no question: the step may be any work.
    expect(computingSteps(steps, false).map((c) => c.step.id)).toEqual(['built-on']);
  });

  it('again after its program failed, not after another call or a program that ran', () => {
    const run = (status: string, command = programCommand('print(1)')) => ({
      tool: 'workspace__run_command',
      args: { command },
      status,
    });
    const steps = [
      { id: 'failed', files: [data], earlierCalls: [run('error')] },
      { id: 'ran', files: [data], earlierCalls: [run('ok')] },
      { id: 'other', files: [data], earlierCalls: [run('error', 'cat sales.csv')] },
    ];
    expect(computingSteps(steps, true).map((c) => c.step.id)).toEqual(['failed']);
  });

  it('the prompt shows the data (a long file as its start), the request, the step and the last failure', () => {
    const long = { path: 'big.csv', text: `a,b\n1,2${CUT_MARK}` };
    const prompt = programPrompt({
      request: 'Wie hoch ist die Summe für Nord?',
      instruction: 'Sum amount where region is Nord.',
      files: [data, long],
      failed: 'KeyError: montant',
    });
    expect(prompt.node).toBe('write_program');
    const text = prompt.messages[0] as string;
    expect(text).toContain('File sales.csv:\n```\nregion,amount\nNord,10');
    expect(text).toContain('File big.csv (its start; the program reads all of it):\n```\na,b\n1,2\n```');
    expect(text).not.toContain('cut: read_file');
    expect(text).toContain('Request: Wie hoch ist die Summe für Nord?\n\nStep: Sum amount where region is Nord.');
    expect(text).toContain('The last program failed:\nKeyError: montant');
  });
});

describe('a program runs from standard input', () => {
  it('prints its result in the project folder and leaves no file behind, whatever lines it holds', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'klea-program-'));
    writeFileSync(path.join(dir, 'sales.csv'), data.text);
    const program = [
      'import csv',
      "rows = list(csv.DictReader(open('sales.csv')))",
      "text = '''",
      'KLEA_PROGRAM',
      "'''",
      "print(sum(float(r['amount']) for r in rows if r['region'] == 'Nord'), len(text))",
    ].join('\n');
    const command = programCommand(program);
    expect(command.split('\n')[0]).toBe("python3 - <<'KLEA_PROGRAM_1'");
    const out = execFileSync('/bin/sh', ['-c', command], { cwd: dir, encoding: 'utf8' });
    expect(out).toBe('12.5 14\n');
    expect(readdirSync(dir)).toEqual(['sales.csv']);
  });
});
