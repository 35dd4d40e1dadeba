/**
 * The small profile's check of a question's plan (activities/llm/asked-changes.ts): a request put as a question keeps
 * in `expect.changes` only the files the model says carrying it out changes; so does the data file a new script
 * reads; any other plan is left alone.
 */
import { asksQuestion, keepAskedChanges, wantedChanges } from '../../activities/llm/asked-changes';
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

  it('a question anywhere in a request asks one, with a sentence after it or not', () => {
    expect(asksQuestion('Which file defines compute_tax? The code is spread over several folders.')).toBe(true);
    expect(asksQuestion('Welche Stadt ist am wärmsten? Nenne den Durchschnitt.')).toBe(true);
    expect(asksQuestion('哪个文件定义了它？代码在很多文件夹里。')).toBe(true);
    expect(asksQuestion('How many lines are in data.txt?')).toBe(true);
    // A question mark inside a word or a URL is no question.
    expect(asksQuestion('Fetch https://example.com/a?b=1 and save it to page.html.')).toBe(false);
    expect(asksQuestion('Is the port 8080? Set it to 9090 in config.json.')).toBe(true);
    // French sets a space before the mark, a plain or a narrow no-break one.
    expect(asksQuestion("Dans ventes.csv, à combien s'élève le total pour la région Nord ?")).toBe(true);
    expect(asksQuestion('Quel fichier définit la classe Panier\u202f? Le code est dans plusieurs dossiers.')).toBe(
      true
    );
    // Nor one in code, or in text the request quotes.
    expect(asksQuestion('Make `x ? a : b` in calc.js an if statement.')).toBe(false);
    expect(asksQuestion('Print $? after the command in run.sh, and use WHERE id = ? in db.py.')).toBe(false);
    expect(asksQuestion('Add a FAQ entry answering "How do I install it?" to README.md.')).toBe(false);
    expect(asksQuestion('Set the port to 9090.')).toBe(false);
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

  it('so does a question with a sentence after it: the data file it asks about is not written over', async () => {
    const { client } = model({ 'weather.csv': 'reads it' });
    const written = plan(step('s1', { changes: ['weather.csv'] }));
    const request = 'Which city in weather.csv is warmest on average? Give the city and its average.';
    const r = await keepAskedChanges(client, request, written, ['weather.csv']);
    expect(r.plan.steps[0].expect).toBeUndefined();
    expect(r.notAsked).toEqual(['weather.csv']);
    // And the plan left changing nothing is not asked for again with the file the verdict left out.
    const asked = wants({ 'weather.csv': 'yes' });
    expect(await wantedChanges(asked.client, request, r.plan, ['weather.csv'], r.notAsked)).toMatchObject({
      files: [],
      modelCalls: 0,
    });
    expect((await wantedChanges(asked.client, request, r.plan, ['weather.csv'])).files).toEqual(['weather.csv']);
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

describe("a question's plan that changes a folder it does not name", () => {
  const files = ['billing/core/mailer.py', 'billing/api/views.py', 'logs/a.log', 'app.py'];
  const where = "Where's send_invoice defined? Not where it's called.";

  it('leaves the folder out without asking the model: a question asks nothing of it', async () => {
    // The 0.5B plan: the folders of the path it was told, as its changes (`billing` is written `billing/` first).
    const { client, prompts } = model({});
    const written = plan(step('s1', { changes: ['billing/', 'core', 'mailer'], check: 'exit 0' }));
    const r = await keepAskedChanges(client, where, written, files);
    expect(r.plan.steps[0].expect).toEqual({ changes: ['core', 'mailer'], check: 'exit 0' });
    expect(r.repairs).toEqual([
      'step "s1": expect.changes named "billing/", which the request does not ask to change: left out',
    ]);
    expect(prompts).toEqual([]);
    expect(r.modelCalls).toBe(0);
  });

  it('keeps a folder the request names, a new folder, and any folder of a request not put as a question', async () => {
    const { client, prompts } = model({});
    const deleting = plan(step('s1', { changes: ['logs/'] }));
    for (const request of ['Which files in logs/ are empty? Delete them.', 'Which logs are empty? Delete them.'])
      expect((await keepAskedChanges(client, request, deleting, files)).plan).toEqual(deleting);
    const making = plan(step('s1', { changes: ['reports/'] }));
    expect((await keepAskedChanges(client, where, making, files)).plan).toEqual(making);
    const work = plan(step('s1', { changes: ['billing/'] }));
    expect((await keepAskedChanges(client, 'Move send_invoice to app.py.', work, files)).plan).toEqual(work);
    expect(prompts).toEqual([]);
  });
});

describe('the data file a new script reads', () => {
  const files = ['orders.csv', 'notes.md', 'tool.py'];
  const request = 'Write best.py that reads orders.csv and prints the best customer.';

  it('is asked about where the plan changes it and creates the new script, in one step or another; read only, it is left out', async () => {
    const { client, prompts } = model({ 'orders.csv': 'reads it' });
    const written = plan(step('s1', { changes: ['orders.csv'] }), step('s2', { changes: ['best.py', 'orders.csv'] }));
    const r = await keepAskedChanges(client, request, written, files);
    expect(prompts.map((p) => String(p.messages[0]).split('\n').pop())).toEqual([
      'What does carrying out this request do to orders.csv?',
    ]);
    expect(r.plan.steps.map((s) => s.expect?.changes)).toEqual([undefined, ['best.py']]);
    expect(r.notAsked).toEqual(['orders.csv']);
    // Where the model says the script's work changes it, the change stays.
    const changes = model({ 'orders.csv': 'changes it' });
    expect((await keepAskedChanges(changes.client, request, written, files)).plan).toEqual(written);
  });

  it("is asked about where only another step than the new script's is to change it", async () => {
    // The 0.5B plan: "Read orders.csv" changing orders.csv, the script in a later step.
    const { client, prompts } = model({ 'orders.csv': 'reads it' });
    const written = plan(step('s1', { changes: ['orders.csv'] }), step('s2', { changes: ['best.py'] }));
    const r = await keepAskedChanges(client, request, written, files);
    expect(prompts).toHaveLength(1);
    expect(r.plan.steps.map((s) => s.expect?.changes)).toEqual([undefined, ['best.py']]);
  });

  it('is no such file beside an existing script, a new file that is no program, or a file the request does not name', async () => {
    const { client, prompts } = model({ 'orders.csv': 'reads it', 'notes.md': 'reads it' });
    for (const changes of [
      ['orders.csv', 'tool.py'],
      ['orders.csv', 'report.md'],
      ['notes.md', 'best.py'],
    ]) {
      const written = plan(step('s1', { changes }));
      expect((await keepAskedChanges(client, `${request} Put it in report.md.`, written, files)).plan).toEqual(written);
    }
    // Nor a data kind that is as often configuration: a script may be added to package.json.
    const config = plan(step('s1', { changes: ['package.json', 'build.js'] }));
    const request2 = 'Write build.js and add a build script for it to package.json.';
    expect((await keepAskedChanges(client, request2, config, [...files, 'package.json'])).plan).toEqual(config);
    expect(prompts).toEqual([]);
  });
});

/** A model that answers `answers[file]` (yes or no) of each file it is asked whether the user wants changed. */
function wants(answers: Record<string, 'yes' | 'no'>) {
  const prompts: NodePrompt[] = [];
  const client = {
    profile: 'small',
    async structured(prompt: NodePrompt) {
      prompts.push(prompt);
      const file = /edit, move or delete (\S+)\? Answer yes or no\.$/.exec(String(prompt.messages[0]))![1];
      return { value: { answer: answers[file] }, usage: { inputTokens: 5, outputTokens: 2 } };
    },
  } as unknown as ModelClient;
  return { client, prompts };
}

describe('a plan that changes nothing, for a request that wants a file changed', () => {
  const files = ['count.sh', 'logs/a.log', 'README.md'];
  const running = plan(step('s1', { check: 'bash count.sh' }), step('s2'));

  it('says which of the files the request names the user wants changed, asking once per file', async () => {
    const { client, prompts } = wants({ 'count.sh': 'yes', 'logs/a.log': 'no' });
    const r = await wantedChanges(
      client,
      'count.sh prints a line per log like logs/a.log; make it print the sum.',
      running,
      files
    );
    expect(r.files).toEqual(['count.sh']);
    expect(r.modelCalls).toBe(2);
    expect(r.usage).toMatchObject({ inputTokens: 10, outputTokens: 4 });
    expect(prompts.map((p) => p.node)).toEqual(['wants_changes', 'wants_changes']);
  });

  it('nothing when the model says yes of every one of several files: that is a verdict on the request, not the files', async () => {
    const { client } = wants({ 'count.sh': 'yes', 'logs/a.log': 'yes' });
    const r = await wantedChanges(client, 'count.sh miscounts logs/a.log; fix it.', running, files);
    expect(r).toMatchObject({ files: [], modelCalls: 2 });
    // One file named, and yes of it: taken.
    expect((await wantedChanges(client, 'count.sh miscounts; fix it.', running, files)).files).toEqual(['count.sh']);
  });

  it('nothing when the user wants none of them changed', async () => {
    const { client } = wants({ 'count.sh': 'no' });
    expect((await wantedChanges(client, 'Run count.sh and tell me the sum.', running, files)).files).toEqual([]);
  });

  it('asks nothing of a question, of a plan that changes a file or a folder, or of a request that names no file', async () => {
    const { client, prompts } = wants({ 'count.sh': 'yes' });
    expect((await wantedChanges(client, 'What does count.sh print?', running, files)).modelCalls).toBe(0);
    const changing = plan(step('s1', { changes: ['total.txt'] }));
    expect((await wantedChanges(client, 'Fix count.sh.', changing, files)).modelCalls).toBe(0);
    const folder = plan(step('s1', { changes: ['logs/'] }));
    expect((await wantedChanges(client, 'Tidy logs/ for count.sh.', folder, files)).modelCalls).toBe(0);
    expect((await wantedChanges(client, 'Count the errors.', running, files)).modelCalls).toBe(0);
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
