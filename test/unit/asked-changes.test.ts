/**
 * The small profile's check of a question's plan (activities/llm/asked-changes.ts): a request put as a question keeps
 * in `expect.changes` only the files the model says carrying it out changes; any other request's plan is left alone.
 */
import { addAskedChanges, keepAskedChanges } from '../../activities/llm/asked-changes';
import type { ModelClient, NodePrompt } from '../../activities/llm/model';
import { isQuestion, withoutChanges } from '../../activities/llm/small-model';
import type { Plan } from '../../common/plan';

const step = (id: string, expect?: Plan['steps'][number]['expect']) => ({
  id,
  title: id,
  instruction: `do ${id}`,
  depends_on: [],
  needs_tool: true,
  questions: [],
  ...(expect ? { expect } : {}),
});
const plan = (...steps: Plan['steps']): Plan => ({
  goal: 'g',
  steps,
  review: { before_work: false, after_step_ids: [] },
});

/** A model that says `effects[file]` of each file it is asked about, recording the prompts. */
function model(effects: Record<string, string>) {
  const prompts: NodePrompt[] = [];
  const client = {
    profile: 'small',
    async structured(prompt: NodePrompt) {
      prompts.push(prompt);
      const file = /do to (\S+)\?$/.exec(String(prompt.messages[0]))![1];
      return { value: { effect: effects[file] }, usage: { inputTokens: 7, outputTokens: 3 } };
    },
  } as unknown as ModelClient;
  return { client, prompts };
}

describe('a request put as a question', () => {
  it('ends with a question mark in any script, closing quotes or brackets after it', () => {
    expect(isQuestion('How many lines are in data.txt?')).toBe(true);
    expect(isQuestion('utils/text_tools.py 里一共定义了几个函数？')).toBe(true);
    expect(isQuestion('¿Qué puerto usa server.yaml?  ')).toBe(true);
    expect(isQuestion('ما هو المنفذ في config.ini؟')).toBe(true);
    expect(isQuestion('Which port does it use (in config.ini?)')).toBe(true);
    expect(isQuestion('Fix calc.py. Why does it fail? Then run the tests.')).toBe(false);
    expect(isQuestion('Set the port to 9090.')).toBe(false);
  });
});

describe("a question's plan keeps only the changes the model says it asks for", () => {
  it('leaves out a file the question only reads, and tells it; a file it changes and a new file stay', async () => {
    const { client, prompts } = model({ 'users.json': 'reads it', 'notes.txt': 'changes it' });
    const written = plan(
      step('s1', { changes: ['users.json', 'report.txt'], check: 'python3 count.py' }),
      step('s2', { changes: ['./users.json'] }),
      step('s3', { changes: ['notes.txt'] })
    );
    const r = await keepAskedChanges(client, 'How many users are active?', written, ['users.json', 'notes.txt']);
    expect(r.plan.steps.map((s) => s.expect)).toEqual([
      { changes: ['report.txt'], check: 'python3 count.py' },
      undefined,
      { changes: ['notes.txt'] },
    ]);
    expect(r.repairs).toEqual([
      'step "s1": expect.changes named "users.json", which the request does not ask to change: left out',
      'step "s2": expect.changes named "./users.json", which the request does not ask to change: left out',
    ]);
    // One question per file of the project the plan would change; a new file is never asked about.
    expect(prompts.map((p) => String(p.messages[0]).split('\n').pop())).toEqual([
      'What does carrying out this request do to users.json?',
      'What does carrying out this request do to notes.txt?',
    ]);
    expect(r.modelCalls).toBe(2);
    expect(r.usage).toMatchObject({ inputTokens: 14, outputTokens: 6 });
  });

  it('a moved or deleted file stays planned', async () => {
    const { client } = model({ 'a.log': 'moves or deletes it' });
    const written = plan(step('s1', { changes: ['a.log'] }));
    expect((await keepAskedChanges(client, 'Can you tidy a.log away?', written, ['a.log'])).plan).toEqual(written);
  });

  it('asks nothing about a request that is not put as a question, or a plan that changes no file of the project', async () => {
    const { client, prompts } = model({ 'data.txt': 'reads it' });
    const changing = plan(step('s1', { changes: ['data.txt'] }));
    expect((await keepAskedChanges(client, 'Sort data.txt.', changing, ['data.txt'])).plan).toEqual(changing);
    const creating = plan(step('s1', { changes: ['new.txt'] }), step('s2'));
    expect((await keepAskedChanges(client, 'Which is it?', creating, ['data.txt'])).plan).toEqual(creating);
    expect(prompts).toEqual([]);
  });
});

describe('withoutChanges', () => {
  it('leaves everything as it is when no file is left out', () => {
    const written = plan(step('s1', { changes: ['a.txt'] }));
    expect(withoutChanges(written, [])).toEqual({ plan: written, repairs: [] });
    expect(withoutChanges(written, ['b.txt'])).toEqual({ plan: written, repairs: [] });
  });
});

describe('a plan that changes nothing, for a request that is not a question', () => {
  const files = ['count_errors.sh', 'logs/api.log', 'stats.py'];
  const byHand = plan(
    { ...step('s1'), instruction: 'Find the log files in logs/.' },
    { ...step('s2'), instruction: 'Count the ERROR lines in each.', depends_on: ['s1'] },
    { ...step('s3', { check: 'echo $?' }), instruction: 'Print the total.', depends_on: ['s2'] }
  );

  it('changes a file the request names that the model says carrying it out changes, in the steps with nothing to do', async () => {
    const { client, prompts } = model({ 'count_errors.sh': 'changes it' });
    const request = 'count_errors.sh prints a line per file instead of one total. Fix it.';
    const r = await addAskedChanges(client, request, byHand, files, false);
    expect(r.plan.steps.map((s) => s.expect)).toEqual([
      { changes: ['count_errors.sh'] },
      { changes: ['count_errors.sh'] },
      { check: 'echo $?' },
    ]);
    expect(r.repairs).toEqual([
      'step "s1": the request changes count_errors.sh (as the model reads it) and no step was to change any file',
      'step "s2": the request changes count_errors.sh (as the model reads it) and no step was to change any file',
    ]);
    expect(r.modelCalls).toBe(1);
    expect(prompts[0].messages[0]).toBe(
      `Request: ${request}\n\nWhat does carrying out this request do to count_errors.sh?`
    );
  });

  it('leaves the plan of a request that only runs or reads what it names as it is', async () => {
    const { client } = model({ 'stats.py': 'runs it' });
    const reading = plan({ ...step('s1'), instruction: 'Run stats.py.' });
    const r = await addAskedChanges(client, 'Run stats.py and tell me the average it prints.', reading, files, false);
    expect(r).toMatchObject({ plan: reading, repairs: [], modelCalls: 1 });
  });

  it('asks nothing for a question, a plan that changes something, read-only access, or a request naming no file', async () => {
    const { client, prompts } = model({ 'count_errors.sh': 'changes it' });
    const changing = plan(step('s1', { changes: ['count_errors.sh'] }));
    for (const [request, p, readOnly] of [
      ['Why does count_errors.sh print a line per file?', byHand, false],
      ['Fix count_errors.sh.', changing, false],
      ['Fix count_errors.sh.', byHand, true],
      ['Fix the log counter.', byHand, false],
    ] as const) {
      expect(await addAskedChanges(client, request, p, files, readOnly)).toMatchObject({ plan: p, modelCalls: 0 });
    }
    expect(prompts).toEqual([]);
  });
});
