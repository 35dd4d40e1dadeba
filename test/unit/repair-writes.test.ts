import { writesForFailure } from '../../activities/llm/repair-writes';
import { PLANNED_WRITES } from '../../activities/llm/small-model';
import type { PickedCall } from '../../common/tools';

const call = (tool: string, args: Record<string, unknown>, stepId = 's3'): PickedCall => ({
  stepId,
  server: 'workspace',
  tool,
  qualifiedName: `workspace__${tool}`,
  args,
  readOnly: tool === 'read_file',
  idempotent: tool !== 'run_command',
});

const tests = { path: 'tests/test_durations.py', text: 'import unittest\n# asserts 130\n' };
const code = { path: 'durations.py', text: 'def parse_duration(t): ...\n' };
const failure =
  'every call failed; the last, workspace__run_command: exit code: 1\n--- stderr ---\nTraceback (most recent call last):\n' +
  '  File "/tmp/p/projects/t/tests/test_durations.py", line 9, in test_valid\nAssertionError: 125 != 130';
const ran = { tool: 'workspace__run_command', args: { command: 'python3 -m unittest' }, status: 'error', text: '' };

/** The step that runs the tests, in a repair round after they failed on the file an earlier step wrote. */
const runStep = {
  id: 's3',
  notDone: failure,
  files: [tests, code],
  earlierCalls: [ran],
  taskChanged: ['tests/test_durations.py'],
};

describe('small profile: a repair round writes the file its failure is in', () => {
  it('a pick that repeats the failing run becomes a write of the file the task wrote and the failure names', () => {
    const again = call('run_command', { command: 'python3 -m unittest' });
    const [write, ...rest] = writesForFailure([runStep], [again]);
    expect(rest).toEqual([]);
    expect(write).toMatchObject({ stepId: 's3', qualifiedName: 'workspace__write_file', args: { path: tests.path } });
    expect(PLANNED_WRITES.has(write)).toBe(true);
    // A read of a file the prompt shows whole, or no call at all, is no more use.
    expect(writesForFailure([runStep], [call('read_file', { path: 'tests/test_durations.py' })])[0].args.path).toBe(
      tests.path
    );
    expect(writesForFailure([runStep], [])[0].args.path).toBe(tests.path);
  });

  it('the file the step is to change, when the failure names none it may change (the check script is not one)', () => {
    const fix = {
      id: 's1',
      notDone: 'the check `python3 check_dates.py` failed: File "/tmp/p/check_dates.py", line 5\nAssertionError',
      files: [
        { path: 'check_dates.py', text: 'assert not is_leap(1900)\n' },
        { path: 'dates.py', text: 'def is_leap(y): return y % 4 == 0\n' },
      ],
      expect: { changes: ['dates.py'], check: 'python3 check_dates.py' },
      earlierCalls: [],
    };
    const [write] = writesForFailure([fix], [call('run_command', { command: 'python3 check_dates.py' }, 's1')]);
    expect(write.args.path).toBe('dates.py');
  });

  it('nothing the task did not change or plan is written: a failing run of the user’s own code is only reported', () => {
    const report = { ...runStep, taskChanged: [] };
    const again = call('run_command', { command: 'python3 -m unittest' });
    expect(writesForFailure([report], [again])).toEqual([again]);
  });

  it('several files it may change and none named by the failure: the model’s pick stays', () => {
    const two = { ...runStep, notDone: 'the check `make` failed: exit code: 2', taskChanged: [tests.path, code.path] };
    const again = call('run_command', { command: 'make' });
    expect(writesForFailure([two], [again])).toEqual([again]);
  });

  it('a pick that tries something new, a step with files still unchanged, or no failure at all is left alone', () => {
    const edit = call('edit_file', { path: tests.path, old_string: '130', new_string: '125' });
    expect(writesForFailure([runStep], [edit])).toEqual([edit]);
    const other = call('run_command', { command: 'python3 -m unittest -v' });
    expect(writesForFailure([runStep], [other])).toEqual([other]);
    const unread = call('read_file', { path: 'README.md' });
    expect(writesForFailure([runStep], [unread])).toEqual([unread]);
    const again = call('run_command', { command: 'python3 -m unittest' });
    expect(writesForFailure([{ ...runStep, unchanged: ['tests/test_durations.py'] }], [again])).toEqual([again]);
    expect(writesForFailure([{ ...runStep, notDone: undefined }], [again])).toEqual([again]);
  });

  it('a file shown only in part is not written whole, nor is another step’s pick touched', () => {
    const part = { ...tests, part: { from: 1, to: 2, total: 400, whole: tests.text } };
    const again = call('run_command', { command: 'python3 -m unittest' });
    expect(writesForFailure([{ ...runStep, files: [part, code] }], [again])).toEqual([again]);
    const other = call('read_file', { path: 'x.py' }, 's4');
    const out = writesForFailure([runStep], [again, other]);
    expect(out).toContain(other);
    expect(out.map((c) => c.qualifiedName)).toEqual(['workspace__read_file', 'workspace__write_file']);
  });
});
