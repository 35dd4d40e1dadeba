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

  it('once an answer is cut at it, structured requests bound every list and text to it; before, they are not', async () => {
    const model = createModelClient(resolveConfig({ model: { ...config.model, base_url: fake.url } }, {}));
    fake.on('write_plan', { call: plan });
    await model.structured(prompt, PlanLike, 'The plan.', fit);
    // A run-on plan, cut by the server after 512 tokens, then the plan asked again.
    fake.on(
      'write_plan',
      { content: '{"goal": "Fix it.", "steps": [{"instruction": "1, 2, 3, 4, 5', truncated: true, outputTokens: 512 },
      { call: plan }
    );
    const out = await model.structured(prompt, PlanLike, 'The plan.', fit);
    expect(out).toMatchObject({ value: plan, attempts: 2 });
    fake.on('write_plan', { call: plan }, { call: plan });
    await model.structured(prompt, PlanLike, 'The plan.', fit);
    // A node that does not ask for it (a chat reply, one text) is not bounded.
    await model.structured(prompt, PlanLike, 'The plan.');

    const unbounded = { steps: 500, instruction: 4000, goal: 2000 };
    const bounds = (n: number) => ({
      steps: sent(n).properties.steps.maxItems,
      instruction: sent(n).properties.steps.items.properties.instruction.maxLength,
      goal: sent(n).properties.goal.maxLength,
    });
    expect(bounds(0)).toEqual(unbounded);
    expect(bounds(1)).toEqual(unbounded);
    expect(bounds(2)).toEqual({ steps: 5, instruction: 256, goal: 256 });
    expect(bounds(3)).toEqual({ steps: 5, instruction: 256, goal: 256 });
    expect(bounds(4)).toEqual(unbounded);
    expect(fake.requestsFor('write_plan')[2].text).toContain('Keep it shorter: brief texts, nothing repeated.');
    expect(model.textBound).toBe(256);
  });

  it('control: a short answer cut (a prompt that filled the context, say) bounds nothing', async () => {
    fake.reset();
    const model = createModelClient(resolveConfig({ model: { ...config.model, base_url: fake.url } }, {}));
    fake.on('write_plan', { content: '{"goal": "Fi', truncated: true, outputTokens: 12 }, { call: plan });
    await model.structured(prompt, PlanLike, 'The plan.', fit);
    fake.on('write_plan', { call: plan });
    await model.structured(prompt, PlanLike, 'The plan.', fit);
    expect(fake.requestsFor('write_plan').map((_, n) => sent(n).properties.steps.maxItems)).toEqual([500, 500, 500]);
  });
});
