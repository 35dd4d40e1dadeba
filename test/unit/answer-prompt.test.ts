/** What the answer composer is told: the results, and for a read-only task that a change asked for was not made. */
import { composeAnswerPrompt, READ_ONLY_NOTE } from '../../activities/llm/nodes';
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
      '## Files the request names, as they are now\n#### calc.py\n<untrusted source="calc.py">\ndef add(a, b):'
    );
    expect(text.indexOf('#### calc.py')).toBeGreaterThan(text.indexOf('Shopping list'));
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
