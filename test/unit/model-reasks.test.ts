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
