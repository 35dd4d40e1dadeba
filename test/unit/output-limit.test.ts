/**
 * A structured node's schema bounded to the endpoint's output limit (activities/llm/output-limit.ts): every list and
 * every free text fits a share of the limit, the schema's own tighter bounds and its floors are kept, and what is
 * not free text (ids held to a pattern, enums, constants) is left as it is.
 */
import { boundedSchema, MIN_OUTPUT_LIMIT, OutputLimit } from '../../activities/llm/output-limit';
import { jsonSchemaOf } from '../../activities/llm/structured-output';
import { PlanSchema } from '../../common/plan';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('boundedSchema', () => {
  const plan = jsonSchemaOf(PlanSchema) as Json;
  const bounded = boundedSchema(plan, 512) as Json;
  const step = (s: Json) => s.properties.steps.items;

  it('bounds the plan: at most 5 steps, each text at most 256 characters, each list at most 5 items', () => {
    expect(bounded.properties.steps).toMatchObject({ minItems: 1, maxItems: 5 });
    expect(bounded.properties.goal.maxLength).toBe(256);
    expect(step(bounded).properties.instruction).toMatchObject({ minLength: 1, maxLength: 256 });
    expect(step(bounded).properties.title.maxLength).toBe(200);
    expect(step(bounded).properties.expect.properties.check.maxLength).toBe(256);
    expect(step(bounded).properties.depends_on.maxItems).toBe(5);
    expect(step(bounded).properties.questions.maxItems).toBe(5);
  });

  it('leaves what is not free text as it is, and the node schema itself untouched', () => {
    expect(step(bounded).properties.id).toEqual(step(plan).properties.id);
    expect(plan.properties.steps.maxItems).toBe(500);
    expect(step(plan).properties.instruction.maxLength).toBe(4000);
    const choice = { type: 'object', properties: { route: { type: 'string', enum: ['chat', 'task'] } } };
    expect(boundedSchema(choice, 512)).toEqual(choice);
  });

  it('reaches texts and lists inside anyOf, items lists and $defs, and keeps floors above the bound', () => {
    const schema = {
      type: 'object',
      properties: {
        reply: { anyOf: [{ type: 'string', maxLength: 2000 }, { type: 'null' }] },
        many: { type: 'array', minItems: 8, items: { $ref: '#/$defs/t' } },
        long: { type: 'string', minLength: 900 },
      },
      $defs: { t: { type: ['string', 'null'] } },
    };
    expect(boundedSchema(schema, 600)).toEqual({
      type: 'object',
      properties: {
        reply: { anyOf: [{ type: 'string', maxLength: 300 }, { type: 'null' }] },
        many: { type: 'array', minItems: 8, maxItems: 8, items: { $ref: '#/$defs/t' } },
        long: { type: 'string', minLength: 900, maxLength: 900 },
      },
      $defs: { t: { type: ['string', 'null'], maxLength: 300 } },
    });
  });
});

describe('OutputLimit', () => {
  it('is known once two answers are cut after the same number of tokens, the largest such; not from one cut alone', () => {
    const limit = new OutputLimit();
    limit.cutAt(512);
    expect(limit.known).toBeUndefined();
    // An answer cut because the context was full, after whatever room was left.
    limit.cutAt(300);
    expect(limit.known).toBeUndefined();
    limit.cutAt(512);
    expect(limit.known).toBe(512);
    limit.cutAt(300);
    expect(limit.known).toBe(512);
  });

  it('a cut under MIN_OUTPUT_LIMIT tokens is never taken for it, however often', () => {
    const limit = new OutputLimit();
    for (let n = 0; n < 3; n++) limit.cutAt(MIN_OUTPUT_LIMIT - 1);
    expect(limit.known).toBeUndefined();
  });
});
