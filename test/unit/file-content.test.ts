/**
 * Whole-file writes of the small profile: what the model is asked, what is read from its answer, which calls are
 * rewritten (only ever for the file the pick named).
 */
import {
  fileContentPrompt,
  isProgram,
  lastOutput,
  PRINTS_RULE,
  WRITE_FILE_CONTENT_SYSTEM,
  questionOf,
  withWholeFileWrites,
  type WholeFileStep,
} from '../../activities/llm/file-content';
import { contentOfAnswer } from '../../activities/llm/fences';
import type { ModelClient, NodePrompt, TextOptions } from '../../activities/llm/model';
import { boundNamedFiles } from '../../activities/llm/named-files';
import { copiedIn } from '../../activities/llm/rewrite-guards';
import { writesForUnchanged } from '../../activities/llm/small-model';
import type { PickedCall, ToolDescriptor } from '../../common/tools';

const tool = (name: string): ToolDescriptor => ({
  server: 'workspace',
  name,
  qualifiedName: `workspace__${name}`,
  description: name,
  inputSchema: { type: 'object' },
  annotations: {},
  readOnly: false,
  idempotent: false,
});
const TOOLS = [tool('write_file'), tool('edit_file'), tool('run_command')];

const call = (name: string, args: Record<string, unknown>, stepId = 's1'): PickedCall => ({
  stepId,
  server: 'workspace',
  tool: name,
  qualifiedName: `workspace__${name}`,
  args,
  readOnly: false,
  idempotent: false,
});

/** A model whose plain-text answers are `answers` by file, recording each prompt. */
function model(answers: Record<string, string>) {
  const prompts: NodePrompt[] = [];
  const client = {
    structuredOutput: 'json_schema',
    profile: 'small',
    async text(prompt: NodePrompt) {
      prompts.push(prompt);
      const file = /Reply with the whole new content of (\S+)\.$/.exec(String(prompt.messages[0]))![1];
      return { text: answers[file] ?? '', usage: { inputTokens: 10, outputTokens: 5 } };
    },
  } as unknown as ModelClient;
  return { client, prompts };
}

const YAML = 'app:\n  name: inventory\nlogging:\n  level: info\n';
const yamlStep: WholeFileStep = {
  id: 's1',
  instruction: 'Set the logging level in settings.yaml to debug.',
  files: [{ path: 'settings.yaml', text: YAML }],
};

describe('the content a small model writes for a file', () => {
  it('is the first fenced block of its answer, whatever its language tag, or the whole answer without one', () => {
    expect(contentOfAnswer('```yaml\na: 1\n```\nThat is all.')).toBe('a: 1\n');
    expect(contentOfAnswer('Here:\n~~~\nx\n~~~')).toBe('x\n');
    expect(contentOfAnswer('print("hi")')).toBe('print("hi")\n');
    // A longer fence holds a shorter one inside.
    expect(contentOfAnswer('````md\n```sh\nls\n```\n````')).toBe('```sh\nls\n```\n');
    expect(contentOfAnswer('```\n\n```')).toBeNull();
  });

  it("keeps a block of the file's own inside the answer's block: a Markdown file's code block is not the answer's end", () => {
    const readme =
      '# tool\n\n## Installation\n\n```bash\npip install -r requirements.txt\n```\n\n## Usage\n\nRun it.\n';
    expect(contentOfAnswer(`\`\`\`\n${readme}\`\`\`\nDone.`)).toBe(readme);
    expect(contentOfAnswer(`\`\`\`markdown\n${readme}\`\`\``)).toBe(readme);
    // The controls: two blocks one after the other are two, and an answer's block that would never end so ends at
    // its first bare fence.
    expect(contentOfAnswer('```python\na = 1\n```\nAnd a test:\n```python\nassert a\n```')).toBe('a = 1\n');
    expect(contentOfAnswer('```\n# t\n```sh\nls\n```\nmore')).toBe('# t\n```sh\nls\n');
    // A fence with text that is no language is no block of the file's own, and a bare fence shorter than the
    // block it is in is text.
    expect(contentOfAnswer('```python\nH = """\n```bash\nls\n```"""\nprint(H)\n```\nIt prints help.')).toBe(
      'H = """\n```bash\nls\n```"""\nprint(H)\n'
    );
    expect(contentOfAnswer('```\n```js``` starts a block\nend\n```\nDone.')).toBe('```js``` starts a block\nend\n');
    expect(contentOfAnswer('```\n````md\n```\n````\nend\n```\nDone.')).toBe('````md\n```\n````\nend\n');
    expect(contentOfAnswer('~~~\na\r\n```sh\nls\n```\n~~~\nDone.')).toBe('a\r\n```sh\nls\n```\n');
  });

  it('tells the writer of a program to print just what the request asks; a document or a config is told nothing of it', () => {
    const system = (path: string, current: string | null) =>
      fileContentPrompt({ path, current, instruction: 'Do x.', context: [] }).system;
    expect(system('avg.py', null)).toBe(`${WRITE_FILE_CONTENT_SYSTEM}\n${PRINTS_RULE}`);
    expect(system('bin/backup', '#!/bin/bash\ncp a b\n')).toContain(PRINTS_RULE);
    for (const doc of ['CHANGELOG.md', 'config.json', 'settings.ini', 'README', 'notes.txt'])
      expect(system(doc, 'x\n')).toBe(WRITE_FILE_CONTENT_SYSTEM);
    expect(isProgram('src/app.TS', 'x')).toBe(true);
    expect(isProgram('data.csv', null)).toBe(false);
  });

  it("shows the user's request before the step when it says more than the step", () => {
    const p = fileContentPrompt({
      path: 'dates.py',
      current: 'x = 1\n',
      instruction: 'In dates.py, fix the leap year.',
      request: 'is_leap(1900) is True, which is wrong. Fix dates.py.',
      context: [],
    });
    expect(String(p.messages[0])).toMatch(
      /Request: is_leap\(1900\) is True, which is wrong\. Fix dates\.py\.\n\nStep: In dates\.py, fix the leap year\./
    );
    const same = fileContentPrompt({ path: 'a', current: null, instruction: 'Do x.', request: 'Do x.', context: [] });
    expect(String(same.messages[0])).not.toContain('Request:');
  });

  it("shows the plan's only change the request in place of the step, unless it is a retry", () => {
    const input = {
      path: 'README.md',
      current: '# tool\n\n## Usage\n',
      instruction: 'Add an Installation section to README.md.',
      request: 'Add an Installation section between the intro and Usage, with the command in a code block.',
      context: [],
      soleChange: true,
    };
    const text = String(fileContentPrompt(input).messages[0]);
    expect(text).toContain(`Request: ${input.request}\n\nReply with the whole new content of README.md.`);
    expect(text).not.toContain('Step:');
    // Its words are the request's: the request is still shown.
    const same = String(fileContentPrompt({ ...input, instruction: input.request }).messages[0]);
    expect(same).toContain(`Request: ${input.request}`);
    // The controls: a retry keeps the step (it may say what the failure taught), and so does a step beside others.
    const retry = String(fileContentPrompt({ ...input, previousFailure: 'README.md was not changed' }).messages[0]);
    expect(retry).toContain(`Request: ${input.request}\n\nStep: ${input.instruction}`);
    const beside = String(fileContentPrompt({ ...input, soleChange: false }).messages[0]);
    expect(beside).toContain(`Step: ${input.instruction}`);
  });

  it('in a repair round, shows what the evidence says is not done after the step', () => {
    const p = fileContentPrompt({
      path: 'dates.py',
      current: 'x = 1\n',
      instruction: 'Fix is_leap.',
      context: [],
      notDone: 'the check `python3 check_dates.py` failed: AssertionError: 1900 was not a leap year',
    });
    expect(String(p.messages[0])).toMatch(
      /Step: Fix is_leap\.\n\nNot done yet: the check `python3 check_dates\.py` failed: AssertionError: 1900 was not a leap year\n\nReply with the whole new content of dates\.py\.$/
    );
  });

  it('a rewrite that copies in most of a file shown to read is a merge of two files', () => {
    const check = 'from dates import is_leap\nassert is_leap(2024)\nassert not is_leap(1900)\nprint("ok")\n';
    const dates = 'def is_leap(year):\n    return year % 4 == 0\n';
    expect(copiedIn(check, `${check}\n${dates}`, dates)).toBe(true);
    // The control: the fix itself, which takes one line of the other file (its import), is no merge.
    expect(copiedIn(check, 'def is_leap(year):\n    return year % 4 == 0 and year % 100 != 0\n', dates)).toBe(false);
    // Lines both files held already do not count: a file shown beside its own copy is rewritten freely.
    expect(copiedIn(dates, dates, dates)).toBe(false);
  });

  it('shows the file in a fence longer than any it holds, with the files to read, and the step last', () => {
    const p = fileContentPrompt({
      path: 'README.md',
      current: 'Run:\n```sh\nmake\n```\n',
      instruction: 'Add a line about make test to README.md.',
      context: [{ path: 'Makefile', text: 'test:\n\tjest\n' }],
    });
    expect(p.node).toBe('write_file_content');
    const text = String(p.messages[0]);
    expect(text).toContain('File Makefile (to read, not to change):\n```\ntest:\n\tjest\n```');
    expect(text).toContain('File README.md:\n````\nRun:\n```sh\nmake\n```\n````');
    expect(
      text.endsWith('Step: Add a line about make test to README.md.\n\nReply with the whole new content of README.md.')
    ).toBe(true);
    expect(p.system).not.toMatch(/QUESTION/);
  });

  it('reads a question the model asks instead of the content', () => {
    expect(questionOf('```markdown\nQUESTION: What is your full name?\n```')).toBe('What is your full name?');
    expect(questionOf('QUESTION: What is your email address?')).toBe('What is your email address?');
    expect(questionOf('```\nAda Lovelace\n```')).toBeNull();
  });
});

describe('whole-file writes in a pick', () => {
  it('an edit a small model aimed badly becomes a write of the content it writes for the whole file', async () => {
    const m = model({ 'settings.yaml': '```yaml\napp:\n  name: inventory\nlogging:\n  level: debug\n```' });
    const bad = call('edit_file', { path: 'settings.yaml', old_string: 'logging:', new_string: 'debug:' });
    const r = await withWholeFileWrites(m.client, [yamlStep], [bad], TOOLS);
    expect(r.calls).toEqual([
      {
        ...bad,
        tool: 'write_file',
        qualifiedName: 'workspace__write_file',
        args: { path: 'settings.yaml', content: 'app:\n  name: inventory\nlogging:\n  level: debug\n' },
      },
    ]);
    expect(r.rewritten).toEqual([{ stepId: 's1', path: 'settings.yaml' }]);
    expect(r).toMatchObject({ modelCalls: 1, usage: { inputTokens: 10, outputTokens: 5 } });
  });

  it('once every file its plan changes is written whole, the step is done, whatever the pick said', async () => {
    const m = model({
      'settings.yaml': '```yaml\napp:\n  name: inventory\nlogging:\n  level: debug\n```',
      'app.py': '```python\nLEVEL = "debug"\n```',
    });
    const open = { stepDone: false as const };
    const yaml = { ...call('edit_file', { path: 'settings.yaml', old_string: 'info', new_string: 'x' }), ...open };
    const step = { ...yamlStep, expect: { changes: ['settings.yaml'] } };
    const [one] = (await withWholeFileWrites(m.client, [step], [yaml], TOOLS)).calls;
    expect(one).toMatchObject({ qualifiedName: 'workspace__write_file', args: { path: 'settings.yaml' } });
    expect(one).not.toHaveProperty('stepDone');

    // Two planned files: the first write leaves the step open as the pick said, the second closes it.
    const two = {
      ...step,
      files: [...yamlStep.files!, { path: 'app.py', text: 'LEVEL = "info"\n' }],
      expect: { changes: ['settings.yaml', './app.py'] },
    };
    const app = { ...call('edit_file', { path: 'app.py', old_string: 'info', new_string: 'x' }), ...open };
    const both = (await withWholeFileWrites(m.client, [two], [yaml, app], TOOLS)).calls;
    expect(both.map((c) => [c.args.path, c.stepDone])).toEqual([
      ['settings.yaml', false],
      ['app.py', undefined],
    ]);
    // Without a plan of changes, the pick's word stands.
    expect((await withWholeFileWrites(m.client, [yamlStep], [yaml], TOOLS)).calls[0].stepDone).toBe(false);
  });

  it('a step that is to fill a folder is done once a file written whole lands in it, not before', async () => {
    const m = model({ 'notes.txt': '```\nx\n```', 'logs/a.log': '```\na\n```' });
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Write logs/a.log',
      newFiles: ['logs/a.log', 'notes.txt'],
      expect: { changes: ['logs/'] },
    };
    const open = { stepDone: false as const };
    const outside = { ...call('write_file', { path: 'notes.txt', content: '' }), ...open };
    expect((await withWholeFileWrites(m.client, [step], [outside], TOOLS)).calls[0].stepDone).toBe(false);
    const inside = { ...call('write_file', { path: 'logs/a.log', content: '' }), ...open };
    expect((await withWholeFileWrites(m.client, [step], [inside], TOOLS)).calls[0]).not.toHaveProperty('stepDone');
  });

  it('a new file is written with the files the request names to read', async () => {
    const m = model({ 'test_wc.py': '```python\nfrom wc import count\n```' });
    const wc = { path: 'wc.py', text: 'def count(text):\n    return {}\n' };
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Create test_wc.py with two tests.',
      newFiles: ['test_wc.py'],
      requestFiles: [wc],
    };
    await withWholeFileWrites(m.client, [step], [call('write_file', { path: 'test_wc.py', content: '' })], TOOLS);
    expect(String(m.prompts[0].messages[0])).toContain('File wc.py (to read, not to change):\n```\ndef count(text):');
    // A step that names a file of its own reads that one too, and each file once.
    const own = { ...step, files: [{ path: 'README.md', text: 'wc counts words\n' }, wc] };
    await withWholeFileWrites(m.client, [own], [call('write_file', { path: 'test_wc.py', content: '' })], TOOLS);
    expect(String(m.prompts[1].messages[0])).toContain('File README.md (to read');
    expect(String(m.prompts[1].messages[0]).split('File wc.py').length).toBe(2);
  });

  it("a fix is written seeing the test the request names and what the step's last command printed", async () => {
    const slug = { path: 'slug.js', text: 'exports.slugify = (t) => t.replace(/ /g, "-");\n' };
    const test = { path: 'test/slug.test.js', text: 'assert.equal(slugify("A B"), "a-b");\n' };
    const m = model({ 'slug.js': '```js\nexports.slugify = (t) => t.toLowerCase().replace(/ /g, "-");\n```' });
    const failed = 'exit code: 1\nAssertionError: Expected values to be strictly equal:\n+ "A-B"\n- "a-b"';
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Fix slugify in slug.js.',
      files: [slug],
      requestFiles: [test, slug],
      earlierCalls: [
        { tool: 'workspace__run_command', args: { command: 'node test/slug.test.js' }, status: 'error', text: failed },
      ],
    };
    const edit = call('edit_file', { path: 'slug.js', old_string: 'x', new_string: 'y' });
    const out = await withWholeFileWrites(m.client, [step], [edit], TOOLS);
    expect(out.calls[0].args.content).toContain('toLowerCase');
    const prompt = String(m.prompts[0].messages[0]);
    expect(prompt).toContain('File test/slug.test.js (to read, not to change):\n```\nassert.equal');
    expect(prompt).toContain('`node test/slug.test.js` printed:\n```\nexit code: 1\nAssertionError');
    expect(prompt.split('slugify = ').length).toBe(2);
    // In a repair round, the evidence says what failed: the command's output is not shown twice.
    await withWholeFileWrites(m.client, [{ ...step, notDone: 'the check failed' }], [edit], TOOLS);
    expect(String(m.prompts[1].messages[0])).not.toContain('printed:');
  });

  it('a fix sees the failing command it made before a failed edit and a read; not once a file has changed', () => {
    const run = { tool: 'workspace__run_command', args: { command: 'node t.js' }, status: 'error', text: 'boom' };
    const badEdit = { tool: 'workspace__edit_file', args: { path: 'a.js' }, status: 'error', text: 'not found' };
    const read = { tool: 'workspace__read_file', args: { path: 'a.js' }, status: 'ok', text: 'x' };
    const write = { tool: 'workspace__write_file', args: { path: 'a.js' }, status: 'ok', text: 'wrote' };
    expect(lastOutput([run, badEdit, read])).toEqual({ command: 'node t.js', output: 'boom' });
    expect(lastOutput([run, write, read])).toBeUndefined();
    expect(lastOutput([read])).toBeUndefined();
    expect(lastOutput([write, run])).toEqual({ command: 'node t.js', output: 'boom' });
  });

  it('a new file the request names and its step does not is written to do all the request says', async () => {
    const m = model({ 'report.py': '```python\nprint(1)\n```' });
    const request = 'Write report.py that reads sales.csv and prints the total.';
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Read sales.csv into a list of rows.',
      newFiles: ['report.py'],
      expect: { changes: ['report.py'] },
    };
    const write = call('write_file', { path: 'report.py', content: '' });
    await withWholeFileWrites(m.client, [step], [write], TOOLS, { request });
    expect(String(m.prompts[0].messages[0])).toContain(
      'report.py is the file the request asks for: write it to do all that the request says.'
    );
    // A step that names the file itself says what the file is to do: nothing more is said.
    const own = { ...step, instruction: 'Write report.py: read sales.csv and print the total.' };
    await withWholeFileWrites(m.client, [own], [write], TOOLS, { request });
    expect(String(m.prompts[1].messages[0])).not.toContain('the file the request asks for');
  });

  it('calls that change no file are left as they are', async () => {
    const run = call('run_command', { command: 'cat settings.yaml' });
    const j = model({});
    expect((await withWholeFileWrites(j.client, [yamlStep], [run], TOOLS)).calls).toEqual([run]);
    expect(j.prompts.length).toBe(0);
  });

  it('a file not shown whole (cut, or not named) keeps the call the model made', async () => {
    const m = model({ 'big.txt': 'x' });
    const [big] = boundNamedFiles([{ path: 'big.txt', text: 'a\n'.repeat(3000) }]);
    const edit = call('edit_file', { path: 'big.txt', old_string: 'a', new_string: 'b' });
    const cut = { id: 's1', instruction: 'Fix big.txt', files: [big] };
    expect((await withWholeFileWrites(m.client, [cut], [edit], TOOLS)).calls).toEqual([edit]);
    expect((await withWholeFileWrites(m.client, [{ ...cut, files: [] }], [edit], TOOLS)).calls).toEqual([edit]);
    expect(m.prompts).toHaveLength(0);
  });

  it('a write never moves to another file: a file the step wrote, with nothing left to change, ends the step', async () => {
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Rename greet to welcome in greetings.py and main.py.',
      files: [
        { path: 'greetings.py', text: 'def welcome(name):\n    return name\n' },
        { path: 'main.py', text: 'from greetings import greet\n' },
      ],
      earlierCalls: [{ tool: 'workspace__write_file', args: { path: 'greetings.py', content: '…' }, status: 'ok' }],
    };
    const m = model({
      'greetings.py': '```python\ndef welcome(name):\n    return name\n```',
      'main.py': '```python\nfrom greetings import welcome\n```',
    });
    const again = call('write_file', { path: 'greetings.py', content: 'def welcome(name):\n    return name\n' });
    const r = await withWholeFileWrites(m.client, [step], [again], TOOLS);
    expect(r.calls).toEqual([]);
    expect(m.prompts).toHaveLength(1);
    expect(String(m.prompts[0].messages[0])).toMatch(/whole new content of greetings\.py\.$/);
  });

  it('a rewrite aimed at the test file stays on the test file; one that changes nothing keeps the model call', async () => {
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'The tests in test_calc.py fail. Fix the bug in calc.py; do not change the tests.',
      files: [
        { path: 'test_calc.py', text: 'assert add(2, 3) == 5\n' },
        { path: 'calc.py', text: 'def add(a, b):\n    return a - b\n' },
      ],
    };
    const same = model({
      'test_calc.py': '```\nassert add(2, 3) == 5\n```',
      'calc.py': '```\ndef add(a, b):\n    return a + b\n```',
    });
    const atTest = call('edit_file', { path: 'test_calc.py', old_string: 'x', new_string: 'y' });
    const r = await withWholeFileWrites(same.client, [step], [atTest], TOOLS);
    // calc.py is never written from a call aimed at test_calc.py.
    expect(r.calls).toEqual([atTest]);
    expect(r.rewritten).toEqual([]);
    expect(same.prompts).toHaveLength(1);
  });

  it('a rewrite that only takes out or puts in blank lines or trailing spaces changes nothing: the model call stays', async () => {
    const text = 'from mailer import send\n\n\ndef post(r):\n    send(r)\n';
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Define send in views.py.',
      files: [{ path: 'views.py', text }],
    };
    const edit = call('edit_file', { path: 'views.py', old_string: 'send(r)', new_string: 'send(r)' });
    const blank = model({ 'views.py': '```\nfrom mailer import send\n\ndef post(r):   \n    send(r)\n\n```' });
    const r = await withWholeFileWrites(blank.client, [step], [edit], TOOLS);
    expect(r.calls).toEqual([edit]);
    expect(r.rewritten).toEqual([]);
    // The control: a rewrite that changes a line is written.
    const changed = model({ 'views.py': '```\nfrom mailer import send\n\ndef post(r):\n    return send(r)\n```' });
    const w = await withWholeFileWrites(changed.client, [step], [edit], TOOLS);
    expect(w.rewritten).toEqual([{ stepId: 's1', path: 'views.py' }]);
  });

  it("a new file holding the user's own details asks them, only where it may; otherwise it is written", async () => {
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Create a file owner.txt that contains my full name.',
      newFiles: ['owner.txt'],
    };
    const m = model({ 'owner.txt': '```\nQUESTION: What is your full name?\n```' });
    const write = call('write_file', { path: 'owner.txt', content: 'My full name' });
    const asked = await withWholeFileWrites(m.client, [step], [write], TOOLS, { mayAsk: true });
    expect(asked.calls).toEqual([]);
    expect(asked.questions).toEqual([{ stepId: 's1', path: 'owner.txt', question: 'What is your full name?' }]);
    expect(m.prompts[0].system).toMatch(/QUESTION:/);

    // Where the step cannot stop to ask (a later pick), the question is never offered.
    const later = model({ 'owner.txt': '```\nAda Lovelace\n```' });
    const r = await withWholeFileWrites(later.client, [step], [write], TOOLS);
    expect(r.calls.map((c) => c.args)).toEqual([{ path: 'owner.txt', content: 'Ada Lovelace\n' }]);
    expect(later.prompts[0].system).not.toMatch(/QUESTION/);

    // An existing file is never asked about: the question is offered for new files only.
    const existing = model({ 'settings.yaml': 'QUESTION: what for?' });
    const e = await withWholeFileWrites(existing.client, [yamlStep], [write], TOOLS, { mayAsk: true });
    expect(e.questions).toEqual([]);
  });

  it("Klea's own name written where a fact about the user belongs becomes a question; elsewhere it is not written", async () => {
    const license = 'MIT License\n\nCopyright (c) 2026 <COPYRIGHT HOLDER>\n\nPermission is hereby granted.\n';
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'Replace the placeholder <COPYRIGHT HOLDER> in LICENSE with your name.',
      files: [{ path: 'LICENSE', text: license }],
    };
    const edit = call('edit_file', { path: 'LICENSE', old_string: '<COPYRIGHT HOLDER>', new_string: 'Klea' });
    const leaked = () => model({ LICENSE: `\`\`\`\n${license.replace('<COPYRIGHT HOLDER>', 'Klea')}\`\`\`` });
    const asked = await withWholeFileWrites(leaked().client, [step], [edit], TOOLS, { mayAsk: true });
    expect(asked.calls).toEqual([]);
    expect(asked.questions).toEqual([
      { stepId: 's1', path: 'LICENSE', question: 'What should replace "<COPYRIGHT HOLDER>" in LICENSE?' },
    ]);
    // Where the step cannot stop to ask, the rewrite is not used (the model's own call stays, for the gate).
    const later = await withWholeFileWrites(leaked().client, [step], [edit], TOOLS);
    expect(later.questions).toEqual([]);
    expect(later.rewritten).toEqual([]);

    // The control: with the user's answer in the step, the name they gave is written.
    const answered = { ...step, instruction: `${step.instruction}\nAnswer: Northwind Traders Ltd.` };
    const holder = model({
      LICENSE: `\`\`\`\n${license.replace('<COPYRIGHT HOLDER>', 'Northwind Traders Ltd.')}\`\`\``,
    });
    const written = await withWholeFileWrites(holder.client, [answered], [edit], TOOLS, { mayAsk: true });
    expect(written.questions).toEqual([]);
    expect(String(written.calls[0].args.content)).toMatch(/^Copyright \(c\) 2026 Northwind Traders Ltd\.$/m);
  });
});

describe('a blank the request points at', () => {
  const license = 'MIT License\n\nCopyright (c) 2026 <COPYRIGHT HOLDER>\n\nPermission is hereby granted.\n';
  const step: WholeFileStep = {
    id: 's1',
    instruction: 'In LICENSE, fill in the holder.',
    files: [{ path: 'LICENSE', text: license }],
  };
  const request = 'LICENSE still says <COPYRIGHT HOLDER>: fill it in.';
  const edit = call('edit_file', { path: 'LICENSE', old_string: 'MIT License', new_string: 'Apache License 2.0' });

  it('left as it was by the rewrite, becomes a question for the user, in the step’s first pick only', async () => {
    const same = () => model({ LICENSE: `\`\`\`\n${license}\`\`\`` });
    const asked = await withWholeFileWrites(same().client, [step], [edit], TOOLS, { mayAsk: true, request });
    expect(asked.calls).toEqual([]);
    expect(asked.questions).toEqual([
      { stepId: 's1', path: 'LICENSE', question: 'What should replace "<COPYRIGHT HOLDER>" in LICENSE?' },
    ]);
    // A rewrite that changes another line and keeps the blank's line is no answer either.
    const other = model({ LICENSE: `\`\`\`\n${license.replace('MIT License', 'Apache License 2.0')}\`\`\`` });
    const renamed = await withWholeFileWrites(other.client, [step], [edit], TOOLS, { mayAsk: true, request });
    expect(renamed.questions.map((q) => q.question)).toEqual(['What should replace "<COPYRIGHT HOLDER>" in LICENSE?']);
    // Once the step was asked (a later pick), the model's own call goes on as before.
    const later = await withWholeFileWrites(same().client, [step], [edit], TOOLS, { request });
    expect(later.questions).toEqual([]);
    expect(later.calls).toEqual([edit]);
  });

  it('filled in by the rewrite, or named by no request, asks nothing', async () => {
    const filled = model({ LICENSE: `\`\`\`\n${license.replace('<COPYRIGHT HOLDER>', 'Ada Lovelace')}\`\`\`` });
    const given = 'Put Ada Lovelace in place of <COPYRIGHT HOLDER> in LICENSE.';
    const w = await withWholeFileWrites(filled.client, [step], [edit], TOOLS, { mayAsk: true, request: given });
    expect(w.questions).toEqual([]);
    expect(String(w.calls[0].args.content)).toMatch(/^Copyright \(c\) 2026 Ada Lovelace$/m);
    // The control: a request that names no blank of the file is not asked about, whatever the rewrite keeps.
    const same = model({ LICENSE: `\`\`\`\n${license.replace('MIT License', 'MIT Licence')}\`\`\`` });
    const plain = await withWholeFileWrites(same.client, [step], [edit], TOOLS, {
      mayAsk: true,
      request: 'Spell licence the British way in LICENSE.',
    });
    expect(plain.questions).toEqual([]);
    expect(plain.calls[0].args).toMatchObject({ path: 'LICENSE' });
  });
});

describe('a file whose content was cut at the output limit', () => {
  /** A model that answers with `answers` in turn, each cut at the limit or not. */
  const turns = (...answers: Array<{ text: string; cut?: boolean }>) => {
    const prompts: string[] = [];
    const penalized: boolean[] = [];
    const client = {
      profile: 'small',
      async text(prompt: NodePrompt, opts?: TextOptions) {
        prompts.push(String(prompt.messages[0]));
        penalized.push(opts?.afterCutOff === true);
        const a = answers[prompts.length - 1];
        return { text: a.text, usage: { inputTokens: 10, outputTokens: 512 }, ...(a.cut ? { cutShort: true } : {}) };
      },
    } as unknown as ModelClient;
    return { client, prompts, penalized };
  };
  const step: WholeFileStep = { id: 's1', instruction: 'Write tests.', newFiles: ['test_d.py'] };
  const write = call('write_file', { path: 'test_d.py', content: 'x' });
  const looping = '```python\nimport unittest\n' + '    self.assertRaises(ValueError)\n'.repeat(40);

  it('is asked for once more, complete and shorter; that answer is written', async () => {
    const m = turns({ text: looping, cut: true }, { text: '```python\nimport unittest\n```' });
    const out = await withWholeFileWrites(m.client, [step], [write], TOOLS);
    expect(out.calls.map((c) => c.args)).toEqual([{ path: 'test_d.py', content: 'import unittest\n' }]);
    expect(out.modelCalls).toBe(2);
    expect(m.prompts[0]).not.toContain('cut off');
    expect(m.prompts[1]).toContain('Your first answer was cut off at the output limit before the file was complete');
    // Asked the second time with the client's penalty on repeats (the same prompt at temperature 0 loops again).
    expect(m.penalized).toEqual([false, true]);
  });

  it('cut again, it is not used: the call stays as the model made it', async () => {
    const m = turns({ text: looping, cut: true }, { text: looping, cut: true });
    const out = await withWholeFileWrites(m.client, [step], [write], TOOLS);
    expect(out.calls).toEqual([write]);
    expect(out.rewritten).toEqual([]);
  });
});

describe('a write the repair round planned', () => {
  it('is filled by the whole-file write, or dropped when nothing can be written: never sent empty', async () => {
    const [planned] = writesForUnchanged(
      [{ id: 's1', unchanged: ['hello.py'], newFiles: ['hello.py'] }],
      [call('read_file', { path: 'README.md' })]
    );
    const step: WholeFileStep = { id: 's1', instruction: 'In hello.py, print hello world.', newFiles: ['hello.py'] };
    const filled = await withWholeFileWrites(
      model({ 'hello.py': '```python\nprint("hello world")\n```' }).client,
      [step],
      [planned],
      TOOLS
    );
    expect(filled.calls.map((c) => c.args)).toEqual([{ path: 'hello.py', content: 'print("hello world")\n' }]);
    const empty = await withWholeFileWrites(model({ 'hello.py': '' }).client, [step], [planned], TOOLS);
    expect(empty.calls).toEqual([]);
  });
});

describe('a rewrite that drops most of the file', () => {
  it('is not used: the model call stays, and the function the step never mentioned is not lost', async () => {
    const dates =
      'def is_leap(year):\n    """True for leap years."""\n    return year % 4 == 0\n\n\ndef days_in_february(year):\n    return 29 if is_leap(year) else 28\n';
    const step: WholeFileStep = {
      id: 's1',
      instruction: 'In dates.py, fix is_leap for 1900.',
      files: [{ path: 'dates.py', text: dates }],
    };
    const dropped = model({
      'dates.py':
        '```python\ndef is_leap(year):\n    """True for leap years."""\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n```',
    });
    const own = call('edit_file', { path: 'dates.py', old_string: 'year % 4 == 0', new_string: 'year % 400 == 0' });
    const r = await withWholeFileWrites(dropped.client, [step], [own], TOOLS);
    expect(r.calls).toEqual([own]);
    expect(r.rewritten).toEqual([]);
    // It was asked once more, shown the lines it left out.
    expect(dropped.prompts).toHaveLength(2);
    expect(String(dropped.prompts[1].messages[0])).toMatch(
      /Your first answer left out these lines of dates\.py\. Keep each one the step does not ask to change:\n```\n {4}return year % 4 == 0\ndef days_in_february\(year\):\n {4}return 29 if is_leap\(year\) else 28\n```/
    );
    expect(r.modelCalls).toBe(2);
  });

  it('asked again with what it left out, a rewrite that keeps them is used', async () => {
    const dates =
      'def is_leap(year):\n    return year % 4 == 0\n\n\ndef days_in_february(year):\n    return 29 if is_leap(year) else 28\n';
    const fixed = dates.replace('year % 4 == 0', 'year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)');
    const prompts: NodePrompt[] = [];
    const answers = ['```python\ndef is_leap(year):\n    return year % 400 == 0\n```', `\`\`\`python\n${fixed}\`\`\``];
    const client = {
      profile: 'small',
      async text(prompt: NodePrompt) {
        prompts.push(prompt);
        return { text: answers[prompts.length - 1], usage: { inputTokens: 10, outputTokens: 5 } };
      },
    } as unknown as ModelClient;
    const step: WholeFileStep = { id: 's1', instruction: 'Fix is_leap.', files: [{ path: 'dates.py', text: dates }] };
    const own = call('edit_file', { path: 'dates.py', old_string: 'x', new_string: 'y' });
    const r = await withWholeFileWrites(client, [step], [own], TOOLS);
    expect(r.calls).toEqual([
      {
        ...own,
        tool: 'write_file',
        qualifiedName: 'workspace__write_file',
        args: { path: 'dates.py', content: fixed },
      },
    ]);
    expect(r.modelCalls).toBe(2);
  });
});

describe('a new file that copies in the file it was shown to read', () => {
  const durations =
    'import re\n\n\ndef parse_duration(text):\n    if not re.fullmatch(r"\\d+[hms]", text):\n        raise ValueError(text)\n    return int(text[:-1])\n';
  const copy = `\`\`\`python\nimport unittest\n\n${durations}\n\nclass T(unittest.TestCase):\n    def test_s(self):\n        self.assertEqual(parse_duration("45s"), 45)\n\`\`\``;
  const own = `import unittest\nfrom durations import parse_duration\n\n\nclass T(unittest.TestCase):\n    def test_s(self):\n        self.assertEqual(parse_duration("45s"), 45)\n`;
  const step: WholeFileStep = {
    id: 's1',
    instruction: 'Add unittest tests for parse_duration in tests/test_durations.py.',
    files: [{ path: 'durations.py', text: durations }],
    newFiles: ['tests/test_durations.py'],
  };
  const picked = call('write_file', { path: 'tests/test_durations.py', content: '45s' });

  function scripted(answers: string[]) {
    const prompts: NodePrompt[] = [];
    const client = {
      profile: 'small',
      async text(prompt: NodePrompt) {
        prompts.push(prompt);
        return { text: answers[prompts.length - 1] ?? '', usage: { inputTokens: 10, outputTokens: 5 } };
      },
    } as unknown as ModelClient;
    return { client, prompts };
  }

  it('is asked once more, told which file it copied; an answer that uses it from there is written', async () => {
    const m = scripted([copy, `\`\`\`python\n${own}\`\`\``]);
    const r = await withWholeFileWrites(m.client, [step], [picked], TOOLS);
    expect(r.calls.map((c) => c.args)).toEqual([{ path: 'tests/test_durations.py', content: own }]);
    expect(m.prompts).toHaveLength(2);
    expect(String(m.prompts[1].messages[0])).toContain(
      'Your first answer copied durations.py into it: use it from its own file (import it, say).\n\n' +
        'Reply with the whole new content of tests/test_durations.py.'
    );
    expect(String(m.prompts[0].messages[0])).not.toContain('Your first answer copied');
  });

  it('the control: copied again, it is not used, and the model’s own call stays', async () => {
    const m = scripted([copy, copy]);
    const r = await withWholeFileWrites(m.client, [step], [picked], TOOLS);
    expect(r.calls).toEqual([picked]);
    expect(r.modelCalls).toBe(2);
  });
});

describe('a change to a file no prompt showed, which the step has read whole', () => {
  const dotenv = '# local\nAPP=ledger\nDEBUG=true\n';
  const read = { tool: 'workspace__read_file', args: { path: '.env' }, status: 'ok', text: dotenv.trimEnd() };
  const edit = call('edit_file', { path: '.env', old_string: 'DEBUG', new_string: 'false' });

  it('is written whole, from the file as the read showed it', async () => {
    const m = model({ '.env': `\`\`\`\n${dotenv.replace('true', 'false')}\`\`\`` });
    const step: WholeFileStep = { id: 's1', instruction: 'In .env, set DEBUG to false.', earlierCalls: [read] };
    const r = await withWholeFileWrites(m.client, [step], [edit], TOOLS);
    expect(r.calls.map((c) => [c.qualifiedName, c.args])).toEqual([
      ['workspace__write_file', { path: '.env', content: dotenv.replace('true', 'false') }],
    ]);
    expect(String(m.prompts[0].messages[0])).toContain(`File .env:\n\`\`\`\n${dotenv}\`\`\``);
  });

  it('the control: not read, the model’s own call stays', async () => {
    const m = model({ '.env': 'DEBUG=false' });
    const r = await withWholeFileWrites(m.client, [{ id: 's1', instruction: 'Set DEBUG.' }], [edit], TOOLS);
    expect(r.calls).toEqual([edit]);
    expect(m.prompts).toEqual([]);
  });
});
