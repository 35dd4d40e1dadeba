/**
 * A step is done on evidence (workflows/task/evidence.ts): what its calls did, the files they changed and the check
 * Klea runs, never the model's say-so; a failed call is not sent again unchanged; a task with nothing achieved says
 * so plainly.
 */
import { checkKept } from '../../tools/workspace/tools/write';
import { callOutcome, FOUND_NOTHING, readInsteadOf, repeatsCall, type MadeCall } from '../../workflows/task/dispatch';
import { checkToRun, missingEvidence, ownCheck } from '../../workflows/task/evidence';
import { answerWithShortfalls, nothingAchievedAnswer } from '../../workflows/task/status';
import { failureKey, failureKeys, triage, type CallOutcome } from '../../workflows/task/triage';
import type { PickedCall } from '../../common/tools';

const ok = (tool: string, changed?: string[]): CallOutcome => ({ tool, status: 'ok', text: 'fine', changed });
const err = (tool: string, text = 'exit code: 1'): CallOutcome => ({ tool, status: 'error', text });
const call = (name: string, args: Record<string, unknown>): PickedCall => ({
  stepId: 's1',
  server: 'workspace',
  tool: name,
  qualifiedName: `workspace__${name}`,
  args,
  readOnly: false,
  idempotent: false,
});
const made = (c: PickedCall, outcome: CallOutcome): MadeCall => ({ call: c, outcome });

describe('evidence of a step', () => {
  it('a failed check is shown by its start and its end, without ruling lines: the last failure says why too', () => {
    const block = (name: string, line: number, error: string) =>
      `${'='.repeat(70)}\nFAIL: ${name} (tests.test_t.T.${name})\n${'-'.repeat(70)}\nTraceback (most recent call last):\n` +
      `  File "/home/someone/projects/a-long-project-name/tests/test_t.py", line ${line}, in ${name}\n    self.check()\n${error}\n`;
    const output =
      'exit code: 1\n--- stderr ---\nFF\n' +
      block('test_first', 17, 'AssertionError: ValueError not raised') +
      [20, 30, 40, 50].map((n) => block(`test_middle_${n}`, n, 'AssertionError: 1 != 2')).join('') +
      block('test_second', 8, 'AssertionError: 125 != 130') +
      `\n${'-'.repeat(70)}\nRan 6 tests in 0.001s\n\nFAILED (failures=6)\n`;
    const reason = missingEvidence(
      [ok('workspace__write_file', ['t.py'])],
      { changes: ['t.py'], check: 'python3 -m unittest' },
      err('check', output)
    )!;
    expect(reason).toContain('FAIL: test_first');
    expect(reason).toContain('AssertionError: ValueError not raised');
    expect(reason).toContain('AssertionError: 125 != 130');
    expect(reason).toMatch(/characters left out/);
    expect(reason).not.toContain('=====');
    expect(reason.length).toBeLessThan(output.length);
    // Short output is shown whole, only its ruling lines left out.
    expect(missingEvidence([err('workspace__run_command', `x\n${'='.repeat(9)}\ny`)])).toBe(
      'every call failed; the last, workspace__run_command: x\ny'
    );
  });

  it('a step whose calls all failed did nothing, whatever the model says', () => {
    expect(missingEvidence([err('workspace__run_command', "can't open file 'x.py'")])).toMatch(
      /every call failed.*can't open file/
    );
    expect(missingEvidence([err('a'), ok('b')])).toBeNull();
    // A denied call is the user's decision, not the step's failure.
    expect(missingEvidence([{ tool: 'a', status: 'denied', text: 'denied' }])).toBeNull();
  });

  it('a step that is to change files is done only when each of them changed', () => {
    const cmd = ok('workspace__run_command', []);
    expect(missingEvidence([cmd], { changes: ['calc.py'] })).toBe('calc.py was not changed');
    expect(missingEvidence([ok('workspace__edit_file', ['calc.py'])], { changes: ['./calc.py'] })).toBeNull();
    expect(missingEvidence([ok('workspace__edit_file', ['a.py'])], { changes: ['a.py', 'b.py'] })).toBe(
      'b.py was not changed'
    );
  });

  it('a step that is to make, fill or remove a folder is done only when something happened there; a file named so is not it', () => {
    const run = (changed?: string[]) => ok('workspace__run_command', changed);
    // Moved into it, made empty, written into, removed.
    expect(missingEvidence([run(['logs/', 'logs/app.log', 'app.log'])], { changes: ['logs/'] })).toBeNull();
    expect(missingEvidence([run(['logs/'])], { changes: ['logs/'] })).toBeNull();
    expect(missingEvidence([ok('workspace__write_file', ['logs/app.log'])], { changes: ['./logs/'] })).toBeNull();
    expect(missingEvidence([run(['logs/2024/'])], { changes: ['logs/'] })).toBeNull();
    // Only looked at: nothing happened there.
    expect(missingEvidence([ok('workspace__list_dir')], { changes: ['logs/'] })).toBe(
      'nothing was made, moved or changed in the folder logs/'
    );
    // A file where the folder was to be, and a folder whose name only begins the same.
    expect(missingEvidence([ok('workspace__write_file', ['logs'])], { changes: ['logs/'] })).toBe(
      'logs was written as a file where the folder logs/ was to be'
    );
    expect(missingEvidence([run(['logs-old/', 'logs-old/a.log'])], { changes: ['logs/'] })).toMatch(/nothing was made/);
    // With files: each is asked for on its own.
    expect(missingEvidence([run(['logs/a.log'])], { changes: ['logs/', 'README.md'] })).toBe(
      'README.md was not changed'
    );
  });

  it('a value the plan took for a file is not asked of the step when the step wrote it into a file it changed', () => {
    const wrote = (diff: string): CallOutcome => ({
      ...ok('workspace__write_file', ['config.ini']),
      change: { path: 'config.ini', diff, added: 2, removed: 2 },
    });
    const ini = '--- a/config.ini\n+++ b/config.ini\n@@ -1,3 +1,3 @@\n [database]\n-host = old\n+host = db.internal\n';
    const expect_ = { changes: ['config.ini', 'db.internal'] };
    expect(missingEvidence([wrote(ini)], expect_)).toBeNull();
    // Only a name written whole, on an added line: part of a longer name, or a removed line, is no sign.
    expect(missingEvidence([wrote(ini.replace('db.internal', 'db.internal2'))], expect_)).toBe(
      'db.internal was not changed'
    );
    expect(missingEvidence([wrote(ini.replace('+host = db.internal', '-db.internal'))], expect_)).toBe(
      'db.internal was not changed'
    );
    // Nothing changed at all: every planned file is missing, whatever a call's text says.
    expect(missingEvidence([ok('workspace__run_command', [])], { changes: ['db.internal'] })).toBe(
      'db.internal was not changed'
    );
  });

  it('a step with a check is done only when the check exits 0', () => {
    const expect_ = { check: 'python3 -m unittest' };
    expect(missingEvidence([ok('x')], expect_, err('workspace__run_command', 'FAILED (failures=1)'))).toMatch(
      /the check `python3 -m unittest` failed: FAILED/
    );
    expect(missingEvidence([ok('x')], expect_, ok('workspace__run_command'))).toBeNull();
    // A check the shell cannot run at all (a command this machine lacks) says nothing of the step.
    expect(
      missingEvidence([ok('x')], expect_, err('workspace__run_command', 'exit code: 127\npytest: not found'))
    ).toBeNull();
    expect(checkToRun(expect_, false)).toBe('python3 -m unittest');
    expect(checkToRun(expect_, true)).toBeNull();
    expect(checkToRun(undefined, false)).toBeNull();
  });

  it('a search that found nothing answers a step that looks; for a step that is to change files, its check fails', () => {
    const searched = (command: string, structured: Record<string, unknown>) =>
      callOutcome(call('run_command', { command }), {
        status: 'error',
        text: `exit code: ${String(structured.exit_code)}`,
        structured: { stdout: '', stderr: '', timed_out: false, stopped: null, ...structured },
        truncated: false,
        bytes: 13,
      });
    const none = searched("grep -r 'TODO' report.py", { exit_code: 1 });
    expect(none).toEqual({
      tool: 'workspace__run_command',
      status: 'ok',
      text: `exit code: 1\n${FOUND_NOTHING}`,
      foundNothing: true,
    });
    expect(missingEvidence([none], { check: "grep -r 'TODO' report.py" }, none)).toBeNull();
    expect(
      missingEvidence([ok('workspace__write_file', ['a.py'])], { changes: ['a.py'], check: 'grep -q x a.py' }, none)
    ).toMatch(/the check `grep -q x a.py` failed/);
    // The controls: a search that could not run, said something, was piped or chained, or another program's exit 1.
    expect(searched('grep -r TODO missing/', { exit_code: 2, stderr: 'No such file' }).status).toBe('error');
    expect(searched('grep TODO a.py', { exit_code: 1, stderr: 'grep: a.py: Permission denied' }).status).toBe('error');
    expect(searched('grep TODO a.py | wc -l', { exit_code: 1 }).status).toBe('error');
    expect(searched('grep TODO a.py && rm a.py', { exit_code: 1 }).status).toBe('error');
    expect(searched('python3 check.py', { exit_code: 1 }).status).toBe('error');
    expect(searched("grep -E 'a|b;c' a.py", { exit_code: 1 }).status).toBe('ok');
  });

  it("the step's own last run of the check command is the check", () => {
    const run = call('run_command', { command: 'python3 -m unittest' });
    expect(ownCheck([made(run, ok('workspace__run_command'))], 'python3 -m unittest')).toMatchObject({ status: 'ok' });
    const edit = call('edit_file', { path: 'a.py' });
    expect(ownCheck([made(run, ok('r')), made(edit, ok('e', ['a.py']))], 'python3 -m unittest')).toBeNull();
  });

  it('triage: missing evidence ends the step not achieved, without asking the model', () => {
    const d = triage({
      noTool: null,
      calls: [err('workspace__edit_file')],
      attempts: 1,
      maxAttempts: 3,
      replansLeft: 3,
      missing: 'calc.py was not changed',
    });
    expect(d).toEqual({ outcome: 'move_on', ok: false, reason: 'not achieved: calc.py was not changed' });
  });

  it('triage: a check still failing after the repair rounds leads to a new plan, while replans are left', () => {
    const failing = {
      noTool: null,
      calls: [err('workspace__run_command', 'AssertionError: 1900 was not a leap year')],
      attempts: 1,
      maxAttempts: 3,
      replansLeft: 1,
      missing: 'every call failed; the last, workspace__run_command: AssertionError',
      checkFailed: true,
    };
    expect(triage(failing)).toEqual({
      outcome: 'replan',
      reason: 'not achieved: every call failed; the last, workspace__run_command: AssertionError',
    });
    expect(triage({ ...failing, replansLeft: 0 })).toMatchObject({ outcome: 'move_on', ok: false });
  });

  it('triage: a check failing as it did before the last new plan ends the step, not in another plan', () => {
    const missing = 'the check `python3 -m unittest t.py` failed: FAILED (failures=1)\nRan 2 tests in 0.002s';
    const failing = {
      noTool: null,
      calls: [ok('workspace__write_file', ['t.py'])],
      attempts: 1,
      maxAttempts: 3,
      replansLeft: 2,
      missing,
      checkFailed: true,
    };
    // Before any new plan, the failure leads to one.
    expect(triage(failing)).toMatchObject({ outcome: 'replan' });
    // The same failure after it ends the step, with replans left.
    const d = triage({ ...failing, sameCheckFailure: true });
    expect(d).toMatchObject({ outcome: 'move_on', ok: false });
    expect((d as { reason: string }).reason).toMatch(/FAILED \(failures=1\).*as before the last new plan/s);
    // Only a failed check counts: a file not changed, with later steps on it, still gets a new plan.
    expect(
      triage({
        ...failing,
        checkFailed: false,
        sameCheckFailure: true,
        missing: 't.py was not changed',
        buildsOn: ['s2'],
      })
    ).toMatchObject({ outcome: 'replan' });
  });

  it('a failure key leaves out what a test runner prints differently from run to run, and keeps what the failure says', () => {
    const same = (a: string, b: string) => expect(failureKey(a)).toBe(failureKey(b));
    const other = (a: string, b: string) => expect(failureKey(a)).not.toBe(failureKey(b));
    same('Ran 3 tests in 0.015s\n\nFAILED (failures=1)', 'Ran 3 tests in 1.203s\n\nFAILED (failures=1)');
    same('1 failed, 2 passed in 0.05s (0:00:00)', '1 failed, 2 passed in 12.50s (0:00:12)');
    same('not ok 1 - slug (1.2ms)\n# duration_ms 40.1', 'not ok 1 - slug (0.9ms)\n# duration_ms 38.7');
    same('Tests: 1 failed\nTime:        1.2 s', 'Tests: 1 failed\nTime:        0.9 s');
    same('/tmp/pytest-of-ada/pytest-3/test_a0/x.txt', '/tmp/pytest-of-ada/pytest-4/test_a0/x.txt');
    same('<Foo object at 0x7f3a2c1b9d90>', '<Foo object at 0x7f99d0aa1e50>');
    // What the code computed stays, units or not.
    other('expected 5, got 3', 'expected 5, got 4');
    other("AssertionError: '2s' != '90s'", "AssertionError: '5s' != '90s'");
    other('timeout 30s', 'timeout 45s');
    other('0x1f', '0x20');
  });

  it('triage: a step not achieved that later steps build on leads to a new plan at once, while replans are left', () => {
    const missed = {
      noTool: null,
      calls: [err('workspace__edit_file')],
      attempts: 1,
      maxAttempts: 3,
      replansLeft: 2,
      missing: 'slug.js was not changed',
      buildsOn: ['s2'],
    };
    expect(triage(missed)).toEqual({
      outcome: 'replan',
      reason: 'not achieved: slug.js was not changed (s2 builds on it)',
    });
    expect(triage({ ...missed, replansLeft: 0 })).toMatchObject({ outcome: 'move_on', ok: false });
    expect(triage({ ...missed, buildsOn: [] })).toMatchObject({ outcome: 'move_on', ok: false });
  });
});

describe('a failed call is never sent again unchanged', () => {
  const edit = call('edit_file', { path: 'calc.py', old_string: 'x', new_string: 'y' });

  it('a repeated failed edit becomes a read of its file', () => {
    const history = [made(edit, err('workspace__edit_file', 'old_string was not found'))];
    expect(repeatsCall(edit, history)).toBe(true);
    expect(readInsteadOf(edit, history)).toMatchObject({
      qualifiedName: 'workspace__read_file',
      args: { path: 'calc.py' },
    });
    // Once read, the read is not repeated either.
    const read = readInsteadOf(edit, history)!;
    expect(readInsteadOf(edit, [...history, made(read, ok('workspace__read_file'))])).toBeNull();
  });

  it('after a file changed, the same command again is a new look, not a repeat', () => {
    const test = call('run_command', { command: 'python3 test.py' });
    const fix = call('edit_file', { path: 'calc.py', old_string: 'a', new_string: 'b' });
    expect(repeatsCall(test, [made(test, err('r'))])).toBe(true);
    expect(repeatsCall(test, [made(test, err('r')), made(fix, ok('e', ['calc.py']))])).toBe(false);
  });
});

describe('whole-file writes that would destroy a file', () => {
  const long = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');

  it('a write keeping less than half of a long file is refused, saying how to do either on purpose', () => {
    expect(() => checkKept(long, 'line 3\nline 4\n', 'big.py')).toThrow(
      /remove 38 of the 40 lines of big\.py.*edit_file/
    );
  });

  it('so is one keeping less than half of a file of four lines or more', () => {
    expect(() => checkKept('# Notes\n\na\nb\nc\n', '# Notes\n', 'notes.md')).toThrow(
      /remove 3 of the 4 lines of notes\.md/
    );
  });

  it('a write keeping most of it, or any write to a file of fewer than four lines, goes ahead', () => {
    expect(() => checkKept(long, long.replace('line 7', 'line seven'), 'big.py')).not.toThrow();
    expect(() => checkKept('# Notes\n\na\nb\nc\n', '# Notes\n\na\nb\nd\n', 'notes.md')).not.toThrow();
    expect(() => checkKept('a\nb\nc\n', 'z\n', 'short.txt')).not.toThrow();
    // Lines are counted one by one: one copy of a line that was there 40 times keeps one of them.
    expect(() => checkKept('same\n'.repeat(40), 'same\n', 'same.txt')).toThrow(/remove 39 of the 40 lines/);
  });
});

describe('honest endings', () => {
  const missed = [{ stepId: 's1', title: 'Run it', reason: "not achieved: every call failed; can't open file" }];

  it('a task with nothing achieved says what was asked, each step and what stopped it', () => {
    const text = nothingAchievedAnswer('Run stats.py and tell me the mean.', missed);
    expect(text).toMatch(/^Not done: "Run stats.py and tell me the mean."/);
    expect(text).toContain(`- s1 "Run it": not achieved: every call failed; can't open file`);
  });

  it('a partly achieved task lists what was not achieved first', () => {
    const text = answerWithShortfalls('The mean is 4.', missed, 2);
    expect(text.startsWith('**Not achieved** (1 of 2 steps):\n- s1')).toBe(true);
    expect(text.endsWith('The mean is 4.')).toBe(true);
  });
});

describe('failureKeys', () => {
  const trace = 'Traceback (most recent call last):\nModuleNotFoundError: No module named tests/test_x';
  const shared = (a: string[], b: string[]) => a.some((k) => b.includes(k));

  it('a failure that says enough by itself is the same whatever command printed it', () => {
    expect(
      shared(
        failureKeys('python3 -m unittest tests/test_x.py', trace),
        failureKeys('python3 -m unittest tests/test_x', trace)
      )
    ).toBe(true);
  });

  it('a short output stays tied to its command: two checks may fail that way for different reasons', () => {
    expect(shared(failureKeys('grep -q a x.txt', ''), failureKeys('grep -q b y.txt', ''))).toBe(false);
    expect(shared(failureKeys('python3 a.py', 'FAILED'), failureKeys('python3 b.py', 'FAILED'))).toBe(false);
    expect(shared(failureKeys('python3 a.py', 'FAILED'), failureKeys('python3 a.py', 'FAILED'))).toBe(true);
  });

  it('a different output is a different failure', () => {
    expect(shared(failureKeys('python3 t.py', `${trace}1`), failureKeys('python3 t.py', `${trace}2`))).toBe(false);
  });
});
