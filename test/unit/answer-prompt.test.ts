/** What the answer composer is told: the results, and for a read-only task that a change asked for was not made. */
import type { ModelClient } from '../../activities/llm/model';
import { CUT_MARK } from '../../activities/llm/named-files';
import {
  ANSWER_AGAIN,
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
      '## Files the request names, as they are now\n#### calc.py (2 lines; defines 1 function: add)\n<untrusted source="calc.py">\ndef add(a, b):'
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

  it('a code file shown whole is headed by what it defines; a cut one is not (the rest is not known)', () => {
    const code = 'import re\n\n\ndef a():\n    pass\n\n\nclass B:\n    def c(self):\n        pass\n';
    const files = [
      { path: 'utils/tools.py', text: code },
      { path: 'long.py', text: `def a():\n${CUT_MARK}` },
    ];
    const [text] = composeAnswerPrompt({ ...input, files }, '').messages as string[];
    expect(text).toContain('#### utils/tools.py (10 lines; defines 1 function: a; 1 class: B (methods c))\n');
    expect(text).toContain('#### long.py\n');
  });

  it('where the names of code the request mentions are defined, fenced as untrusted, before the request', () => {
    const defined = ['send_invoice: a function in billing/core/mailer.py, line 4'];
    const [text] = composeAnswerPrompt({ ...input, defined }, '').messages as string[];
    expect(text).toContain(
      '## Where the names the request mentions are defined\n<untrusted source="the project\'s code">\n' + defined[0]
    );
    expect(text.indexOf('## Request')).toBeGreaterThan(text.indexOf(defined[0]));
    const [none] = composeAnswerPrompt({ ...input, defined: [] }, '').messages as string[];
    expect(none).not.toContain('Where the names');
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

describe('an answer that only repeats what it was shown (small profile)', () => {
  const calc = 'def add(a, b):\n    total = a + b\n    return total * 2\n';
  const question = {
    projectDir: '/p',
    request: 'Read calc.py and tell me what add(2, 3) returns.',
    goal: 'g',
    results: [{ id: 's1', title: 'Read calc.py', status: 'done', result: calc }],
    files: [{ path: 'calc.py', text: calc }],
  };
  const scripted = (profile: 'small' | 'standard', ...answers: string[]) => {
    const prompts: string[] = [];
    const model = {
      profile,
      text: async (p: { messages: string[] }) => {
        prompts.push(p.messages[0]);
        return { text: answers[prompts.length - 1], usage: { inputTokens: 10, outputTokens: 5 } };
      },
    } as unknown as ModelClient;
    return { model, prompts };
  };

  it('is asked for once more, in the same prompt with another last line; the second answer is the answer', async () => {
    const m = scripted('small', '```python\n' + calc + '```', 'add(2, 3) returns 10.');
    const answer = await composeAnswer(m.model, question, '');
    expect(answer.text).toBe('add(2, 3) returns 10.');
    expect(answer.usage).toMatchObject({ inputTokens: 20, outputTokens: 10, modelCalls: 2 });
    expect(m.prompts[1]).toBe(m.prompts[0].replace(ANSWER_NOW, ANSWER_AGAIN));
    // An answer that repeats the request is one too.
    const echo = scripted('small', `\`\`\`\n${question.request}\n\`\`\``, '10.');
    expect((await composeAnswer(echo.model, question, '')).text).toBe('10.');
  });

  it('an answer of its own, a one-line quote, or a standard model is not asked again', async () => {
    for (const [profile, first] of [
      ['small', 'add(2, 3) returns 10.'],
      ['small', 'return total * 2'],
      ['standard', '```python\n' + calc + '```'],
    ] as const) {
      const m = scripted(profile, first, 'again');
      await composeAnswer(m.model, question, '');
      expect(m.prompts).toHaveLength(1);
    }
  });

  it('a second answer that repeats too leaves the first', async () => {
    const m = scripted('small', '```python\n' + calc + '```', calc);
    expect((await composeAnswer(m.model, question, '')).text).toBe('```python\n' + calc.trim() + '\n```');
  });
});
