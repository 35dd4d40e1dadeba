/** What the answer composer is told: the results, and for a read-only task that a change asked for was not made. */
import type { ModelClient } from '../../activities/llm/model';
import { CUT_MARK } from '../../activities/llm/named-files';
import {
  ANSWER_NOW,
  composeAnswer,
  composeAnswerPrompt,
  READ_ONLY_NOTE,
  withoutLoops,
} from '../../activities/llm/nodes';
import { answerWithAccess, READ_ONLY_ANSWER_NOTE } from '../../workflows/task/status';

const input = {
  projectDir: '/p',
  request: "Add 'buy milk' to my shopping list in notes.txt.",
  goal: 'Add buy milk',
  results: [{ id: 's1', title: 'Add', status: 'done', instruction: 'Add buy milk', result: 'Shopping list:\n- bread' }],
};

describe('the answer prompt', () => {
  it('a read-only task is told that no change could be made, after the results', () => {
    const [text] = composeAnswerPrompt({ ...input, toolAccess: 'read_only' }, '').messages as string[];
    expect(text).toContain(READ_ONLY_NOTE);
    expect(text.indexOf(READ_ONLY_NOTE)).toBeGreaterThan(text.indexOf('Shopping list'));
  });

  it('the files the request names are shown as they are now, fenced as untrusted, after the results', () => {
    const files = [{ path: 'calc.py', text: 'def add(a, b):\n    return (a + b) * 2' }];
    const [text] = composeAnswerPrompt({ ...input, files }, '').messages as string[];
    expect(text).toContain(
      '## Files the request names, as they are now\n#### calc.py (2 lines)\n<untrusted source="calc.py">\ndef add(a, b):'
    );
    expect(text.indexOf('#### calc.py')).toBeGreaterThan(text.indexOf('Shopping list'));
  });

  it('a file shown whole is headed by its count of lines; a cut one is not (its count is not known)', () => {
    const files = [
      { path: 'one.txt', text: 'x\n' },
      { path: 'empty.txt', text: '' },
      { path: 'long.txt', text: `a\nb\n${CUT_MARK}` },
    ];
    const [text] = composeAnswerPrompt({ ...input, files }, '').messages as string[];
    expect(text).toContain('#### one.txt (1 line)\n');
    expect(text).toContain('#### empty.txt (0 lines)\n');
    expect(text).toContain('#### long.txt\n');
  });

  it('ends with the request and the call to answer it, after the results and the files', () => {
    const files = [{ path: 'notes.txt', text: 'Shopping list:\n- bread\n' }];
    const [text] = composeAnswerPrompt({ ...input, files, toolAccess: 'read_only' }, '').messages as string[];
    expect(text.endsWith(`## Request\n${input.request}\n\n${ANSWER_NOW}`)).toBe(true);
    expect(text.indexOf('## Request')).toBeGreaterThan(text.indexOf('#### notes.txt'));
    expect(text.indexOf('## Request')).toBeGreaterThan(text.indexOf(READ_ONLY_NOTE));
  });

  it('a task with full access is told nothing of access', () => {
    const [text] = composeAnswerPrompt({ ...input, toolAccess: 'full' }, '').messages as string[];
    expect(text).not.toMatch(/read-only/);
  });
});

describe('the answer of a read-only task', () => {
  it('says under it that nothing was changed, whatever the model wrote', () => {
    expect(answerWithAccess('Shopping list:\n- bread\n', 'read_only')).toBe(
      `Shopping list:\n- bread\n\n${READ_ONLY_ANSWER_NOTE}`
    );
    expect(answerWithAccess('Done.', 'full')).toBe('Done.');
  });
});

describe('an answer that loops', () => {
  it('a line the model wrote again and again is kept once, and a fence it left open with nothing in it goes', () => {
    expect(withoutLoops('Done.\n' + '```markdown\n'.repeat(40))).toBe('Done.');
    expect(withoutLoops('a\n\n\n\nb')).toBe('a\n\n\n\nb');
    expect(withoutLoops('- x\n- x\n- y')).toBe('- x\n- x\n- y');
    expect(withoutLoops('```sh\nls\n```')).toBe('```sh\nls\n```');
  });

  it('with nothing usable left, the answer says what the steps did, from their results', async () => {
    const model = {
      text: async () => ({ text: '```markdown\n'.repeat(100), usage: { inputTokens: 1, outputTokens: 512 } }),
    } as unknown as ModelClient;
    const results = [
      { id: 's1', title: 'Write .gitignore', status: 'done', result: 'wrote .gitignore (21 bytes, new file)' },
      { id: 's2', title: 'Run it', status: 'failed', result: 'exit 1', notAchieved: 'it failed' },
    ];
    const answer = await composeAnswer(model, { ...input, results }, '');
    expect(answer.text).toBe('What the steps did:\n- Write .gitignore: wrote .gitignore (21 bytes, new file)');
  });
});
