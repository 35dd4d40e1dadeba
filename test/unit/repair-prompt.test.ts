import { notDoneText, pickToolsPrompt, withoutShownContent } from '../../activities/llm/pick-prompt';
import type { EarlierCall, PickStep } from '../../activities/llm/pick-tools';

/** A repair round's pick: a step that wrote a test file, ran its check, and saw it fail. */
const TEST_FILE =
  'import unittest\nfrom durations import parse_duration\n\n\nclass TestDurations(unittest.TestCase):\n' +
  '    def test_valid(self):\n        self.assertEqual(parse_duration("2m5s"), 130)\n\n' +
  '    def test_garbage(self):\n        with self.assertRaises(ValueError):\n            parse_duration("1h30m5s")\n';
const CHECK = 'python3 -m unittest tests/test_durations.py';
const FAILURE = 'exit code: 1\n--- stderr ---\nFF\nAssertionError: 125 != 130\nAssertionError: ValueError not raised';

const write: EarlierCall = {
  tool: 'workspace__write_file',
  args: { path: 'tests/test_durations.py', content: TEST_FILE },
  status: 'ok',
  text: 'wrote tests/test_durations.py (330 bytes, new file)',
};
const checkRun: EarlierCall = {
  tool: 'workspace__run_command',
  args: { command: CHECK },
  status: 'error',
  text: FAILURE,
};

function repairStep(over: Partial<PickStep> = {}): PickStep {
  return {
    id: 's1',
    title: 'Write the tests',
    instruction: 'In tests/test_durations.py, write unittest tests for parse_duration.',
    dependencyResults: [],
    files: [{ path: 'tests/test_durations.py', text: TEST_FILE }],
    earlierCalls: [write, checkRun],
    expect: { changes: ['tests/test_durations.py'], check: CHECK },
    notDone: `the check \`${CHECK}\` failed: ${FAILURE}`,
    ...over,
  };
}

const promptOf = (step: PickStep, small = true) =>
  pickToolsPrompt({ projectDir: '/p', toolAccess: 'full', goal: 'Add tests.', steps: [step] }, { small }).messages[0]!;
const count = (text: string, part: string) => text.split(part).length - 1;

describe("a repair round's pick shows each thing once", () => {
  it("the check's failure, when it is the last call's result, is pointed at, not repeated", () => {
    const prompt = promptOf(repairStep());
    expect(count(prompt, 'AssertionError: 125 != 130')).toBe(1);
    expect(prompt).toContain(`Not done yet: the check \`${CHECK}\` failed: its output is the result of call 2 above`);
  });

  it("a write's content that is the file shown above is said by name; the file itself is shown once", () => {
    const prompt = promptOf(repairStep());
    expect(count(prompt, 'assertRaises(ValueError)')).toBe(1);
    expect(prompt).toContain('"content":"[tests/test_durations.py as it is now, shown above]"');
    expect(prompt).toContain('"path":"tests/test_durations.py"');
  });

  it('an output the call shows only in part is repeated by its start and end: the last failure stays in view', () => {
    const long = `exit code: 1\n--- stderr ---\n${'F'.repeat(60)}\n${'AssertionError: x\n'.repeat(100)}AssertionError: 125 != 130\n`;
    const notDone = `the check \`${CHECK}\` failed: ${long.slice(0, 400)}…${long.slice(-400)}`;
    const prompt = promptOf(repairStep({ earlierCalls: [write, { ...checkRun, text: long }], notDone }));
    expect(prompt).not.toContain('its output is the result of call');
    expect(prompt.slice(prompt.indexOf('Not done yet'))).toContain('AssertionError: 125 != 130');
    const cutByTheWorkflow = { ...checkRun, text: `${FAILURE}… [3000 more characters]` };
    expect(notDoneText(`the check \`${CHECK}\` failed: ${FAILURE}`, CHECK, [cutByTheWorkflow])).toContain(FAILURE);
  });

  it("under the standard profile a write's content is shown as made (a model's own write content is used as it is)", () => {
    const prompt = promptOf(repairStep(), false);
    expect(prompt).not.toContain('as it is now, shown above]');
    expect(count(prompt, 'assertRaises(ValueError)')).toBe(2);
    expect(prompt).toContain('its output is the result of call 2 above');
  });

  it('the control: with neither repeated, the prompt shows both in full, as before', () => {
    const changedSince = { path: 'tests/test_durations.py', text: TEST_FILE.replace('130', '125') };
    const ranAfter: EarlierCall = {
      tool: 'workspace__read_file',
      args: { path: 'durations.py' },
      status: 'ok',
      text: 'x',
    };
    const prompt = promptOf(repairStep({ files: [changedSince], earlierCalls: [write, checkRun, ranAfter] }));
    expect(count(prompt, 'AssertionError: 125 != 130')).toBe(2);
    expect(count(prompt, 'assertRaises(ValueError)')).toBe(2);
  });
});

describe('withoutShownContent and notDoneText, case by case', () => {
  const shown = [{ path: 'a.py', text: 'x = 1\n'.repeat(50) }];

  it('name only a long string equal to the whole file at the same path (a trailing newline aside)', () => {
    const content = 'x = 1\n'.repeat(50);
    expect(withoutShownContent({ path: 'a.py', content }, shown)).toEqual({
      path: 'a.py',
      content: '[a.py as it is now, shown above]',
    });
    expect(withoutShownContent({ path: 'a.py', content: content.slice(0, -1) }, shown).content).toMatch(/^\[a\.py/);
    expect(withoutShownContent({ path: './a.py', content }, shown).content).toBe('[a.py as it is now, shown above]');
    // Another file, a file shown in part or cut, a short file, another text: as made.
    expect(withoutShownContent({ path: 'b.py', content }, shown).content).toBe(content);
    const part = [{ ...shown[0]!, part: { from: 1, to: 50, total: 400, whole: content.repeat(8) } }];
    expect(withoutShownContent({ path: 'a.py', content }, part).content).toBe(content);
    expect(withoutShownContent({ path: 'a.py', content: 'y' }, [{ path: 'a.py', text: 'y' }]).content).toBe('y');
    expect(withoutShownContent({ path: 'a.py', content: `${content}y = 2\n` }, shown).content).toContain('y = 2');
  });

  it('point at the last call only when it ran the check itself and failed', () => {
    const notDone = `the check \`${CHECK}\` failed: ${FAILURE}`;
    expect(notDoneText(notDone, CHECK, [checkRun])).toMatch(/its output is the result of call 1 above$/);
    expect(notDoneText(notDone, CHECK, [{ ...checkRun, status: 'ok' }])).toBe(notDone);
    expect(notDoneText(notDone, CHECK, [{ ...checkRun, args: { command: 'pytest' } }])).toBe(notDone);
    expect(notDoneText(notDone, CHECK, [])).toBe(notDone);
    expect(notDoneText(notDone, undefined, [checkRun])).toBe(notDone);
    expect(notDoneText('tests/test_durations.py was not changed', CHECK, [checkRun])).toBe(
      'tests/test_durations.py was not changed'
    );
  });
});
