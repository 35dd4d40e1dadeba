/**
 * How the model client asks again, against a real HTTP server speaking the chat-completions API (test/support/
 * fake-model): a plain-text answer cut at the output limit is asked again with a frequency penalty, and under
 * `structured_output: auto` a first answer in the wrong shape is asked again at once under json_schema, unquoted.
 */
import { z } from 'zod';
import { createModelClient, RUN_ON_PENALTY } from '../../activities/llm/model';
import { resolveConfig } from '../../common/config-resolve';
import { FakeModel } from '../support/fake-model';

const clientFor = (baseUrl: string) =>
  createModelClient(resolveConfig({ model: { base_url: baseUrl, api_key: 'k', structured_output: 'auto' } }, {}));

describe('asking again', () => {
  let fake: FakeModel;
  beforeAll(async () => {
    fake = await FakeModel.start();
  });
  afterEach(() => {
    fake.reset();
    fake.dialect = 'openai';
  });
  afterAll(() => fake.close());

  it('a text answer cut at the output limit is asked again with the frequency penalty; no other request has one', async () => {
    const prompt = { node: 'write_file_content' as const, system: 'Write the file.', messages: ['a.py'] };
    fake.on('write_file_content', { content: 'x = 1\n'.repeat(50), truncated: true }, { content: 'x = 1\n' });
    const model = clientFor(fake.url);
    const first = await model.text(prompt);
    expect(first.cutShort).toBe(true);
    const again = await model.text(prompt, { afterCutOff: true });
    expect(again).toMatchObject({ text: 'x = 1\n' });
    expect(again.cutShort).toBeUndefined();
    const [a, b] = fake.requestsFor('write_file_content');
    expect(a.body).not.toHaveProperty('frequency_penalty');
    expect(b.body.frequency_penalty).toBe(RUN_ON_PENALTY);
    expect(b.body.temperature).toBe(a.body.temperature);
  });

  it('under auto, a first answer written as text that does not fit the schema is asked under json_schema at once, unquoted', async () => {
    fake.dialect = 'writes_calls_as_text';
    // The endpoint writes the forced function's arguments as fenced text: first the call of a function it made up.
    fake.on('write_plan', { call: { name: 'check.py', arguments: { year: 1900 } } }, { call: { goal: 'Fix it.' } });
    const prompt = { node: 'write_plan' as const, system: 'Plan.', messages: ['Fix it.'] };
    const out = await clientFor(fake.url).structured(prompt, z.strictObject({ goal: z.string() }), 'The plan.');
    expect(out).toMatchObject({ value: { goal: 'Fix it.' }, attempts: 1 });
    const [first, second] = fake.requestsFor('write_plan');
    expect(first.outcome).toBe('fenced');
    expect(second.responseFormat).not.toBeNull();
    // Not quoted back with the schema's complaints: the same conversation, asked in the other form.
    expect(second.text).not.toContain('rejected');
    expect(second.text).not.toContain('check.py');
    expect(second.messages.filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('control: under auto, a first answer written as text that fits the schema is taken (one request)', async () => {
    fake.dialect = 'writes_calls_as_text';
    fake.on('write_plan', { call: { goal: 'Fix it.' } });
    const prompt = { node: 'write_plan' as const, system: 'Plan.', messages: ['Fix it.'] };
    const out = await clientFor(fake.url).structured(prompt, z.strictObject({ goal: z.string() }), 'The plan.');
    expect(out).toMatchObject({ value: { goal: 'Fix it.' }, attempts: 1 });
    expect(fake.requestsFor('write_plan').map((r) => r.outcome)).toEqual(['fenced']);
  });
});

describe('the output limit', () => {
  let fake: FakeModel;
  beforeAll(async () => {
    fake = await FakeModel.start();
  });
  afterAll(() => fake.close());

  const PlanLike = z.strictObject({
    goal: z.string().max(2000),
    steps: z.array(z.strictObject({ instruction: z.string().min(1).max(4000) })).max(500),
  });
  const prompt = { node: 'write_plan' as const, system: 'Plan.', messages: ['Fix it.'] };
  const plan = { goal: 'Fix it.', steps: [{ instruction: 'Fix calc.py.' }] };
  const sent = (n: number) => fake.requestsFor('write_plan')[n].responseFormat!.schema as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const fit = { fitOutputLimit: true };
  const config = { model: { base_url: '', api_key: 'k', structured_output: 'json_schema' as const } };

  const runOn = { content: '{"goal": "Fix it.", "steps": [{"instruction": "1, 2, 3, 4, 5', truncated: true };
  const bounds = (n: number) => ({
    steps: sent(n).properties.steps.maxItems,
    instruction: sent(n).properties.steps.items.properties.instruction.maxLength,
    goal: sent(n).properties.goal.maxLength,
  });
  const unbounded = { steps: 500, instruction: 4000, goal: 2000 };
  const within512 = { steps: 5, instruction: 256, goal: 256 };

  it('once two answers are cut after the same number of tokens, plans are asked within that limit; before, they are not', async () => {
    fake.reset();
    const model = createModelClient(resolveConfig({ model: { ...config.model, base_url: fake.url } }, {}));
    // Two run-on plans, each cut by the server after 512 tokens and asked again.
    fake.on(
      'write_plan',
      { ...runOn, outputTokens: 512 },
      { call: plan },
      { ...runOn, outputTokens: 512 },
      { call: plan }
    );
    const first = await model.structured(prompt, PlanLike, 'The plan.', fit);
    expect(first).toMatchObject({ value: plan, attempts: 2 });
    expect(first.textBound).toBeUndefined();
    const second = await model.structured(prompt, PlanLike, 'The plan.', fit);
    expect(second).toMatchObject({ value: plan, attempts: 2, textBound: 256 });
    fake.on('write_plan', { call: plan }, { call: plan });
    expect(await model.structured(prompt, PlanLike, 'The plan.', fit)).toMatchObject({ textBound: 256 });
    // A node that does not ask for it (a chat reply, one text) is not bounded.
    expect((await model.structured(prompt, PlanLike, 'The plan.')).textBound).toBeUndefined();

    expect([0, 1, 2].map(bounds)).toEqual([unbounded, unbounded, unbounded]);
    expect([3, 4].map(bounds)).toEqual([within512, within512]);
    expect(bounds(5)).toEqual(unbounded);
    expect(fake.requestsFor('write_plan')[1].text).toContain('Keep it shorter: brief texts, nothing repeated.');
  });

  it('under tool_calling the forced function is sent with the bounded parameters', async () => {
    fake.reset();
    const model = createModelClient(
      resolveConfig({ model: { ...config.model, base_url: fake.url, structured_output: 'tool_calling' } }, {})
    );
    const cut = { call: '{"goal": "Fix it.", "steps": [{"instruction": "1, 2, 3', truncated: true, outputTokens: 512 };
    fake.on('write_plan', cut, { call: plan }, cut, { call: plan }, { call: plan });
    for (let n = 0; n < 3; n++) await model.structured(prompt, PlanLike, 'The plan.', fit);
    const steps = fake
      .requestsFor('write_plan')
      .map((r) => (r.toolSchemas?.[0]?.parameters as Record<string, any>).properties.steps.maxItems); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(steps).toEqual([500, 500, 500, 5, 5]);
  });

  it('control: answers cut after different numbers of tokens (the context was full), or too few, bound nothing', async () => {
    fake.reset();
    const model = createModelClient(resolveConfig({ model: { ...config.model, base_url: fake.url } }, {}));
    fake.on(
      'write_plan',
      { ...runOn, outputTokens: 300 },
      { call: plan },
      { ...runOn, outputTokens: 400 },
      { call: plan }
    );
    fake.on(
      'write_plan',
      { ...runOn, outputTokens: 90 },
      { call: plan },
      { ...runOn, outputTokens: 90 },
      { call: plan }
    );
    for (let n = 0; n < 4; n++) await model.structured(prompt, PlanLike, 'The plan.', fit);
    fake.on('write_plan', { call: plan });
    expect(await model.structured(prompt, PlanLike, 'The plan.', fit)).not.toHaveProperty('textBound');
    expect(fake.requestsFor('write_plan').map((_, n) => bounds(n).steps)).toEqual(Array(9).fill(500));
  });
});
