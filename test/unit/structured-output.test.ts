import { z } from 'zod';
import { pickToolsFunctions } from '../../activities/llm/nodes';
import {
  callsSchema,
  jsonSchemaOf,
  parseCalls,
  refusesToolRequest,
  responseFormat,
  strictCompatible,
  unfence,
  jsonObjectIn,
} from '../../activities/llm/structured-output';
import { RouteRequestOutputSchema } from '../../common/model-protocol';
import { EvaluateStepOutputSchema, MAX_PLAN_STEPS, planSchema, SMALL_PLAN_BOUNDS, type Plan } from '../../common/plan';
import { describeTool } from '../../common/tools';

/** Paths of every array without maxItems and every free string without maxLength in a JSON schema. */
function unbounded(schema: unknown, at = '$'): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => unbounded(s, `${at}[${i}]`));
  if (typeof schema !== 'object' || schema === null) return [];
  const s = schema as Record<string, unknown>;
  const types = ([] as unknown[]).concat(s.type ?? []);
  const own: string[] = [];
  if (types.includes('array') && typeof s.maxItems !== 'number') own.push(`${at} (array)`);
  if (types.includes('string') && typeof s.maxLength !== 'number' && !s.enum && !s.pattern && s.const === undefined)
    own.push(`${at} (string)`);
  return [...own, ...Object.entries(s).flatMap(([k, v]) => (typeof v === 'object' ? unbounded(v, `${at}.${k}`) : []))];
}

const plan: Plan = {
  goal: 'Find the TODOs',
  steps: [
    { id: 's1', title: 'Search', instruction: 'grep TODO', depends_on: [], needs_tool: true, questions: [] },
    { id: 's2', title: 'Sum up', instruction: 'list them', depends_on: ['s1'], needs_tool: false, questions: [] },
  ],
  review: { before_work: false, after_step_ids: ['s1'] },
};

describe('structured output through response_format (json_schema)', () => {
  it.each([
    ['route_request', RouteRequestOutputSchema],
    ['write_plan', planSchema()],
    ['evaluate_step', EvaluateStepOutputSchema],
  ])('the %s schema bounds every array and string, so a model that repeats itself is stopped', (_node, schema) => {
    expect(unbounded(jsonSchemaOf(schema))).toEqual([]);
  });

  it('step ids keep their pattern, and the plan schema accepts a good plan as zod does', () => {
    const json = jsonSchemaOf(planSchema());
    expect(JSON.stringify(json)).toContain('"pattern":"^[A-Za-z0-9_-]{1,40}$"');
    expect(z.fromJSONSchema(json).safeParse(plan).success).toBe(true);
    expect(
      z.fromJSONSchema(json).safeParse({ ...plan, steps: Array(MAX_PLAN_STEPS + 1).fill(plan.steps[0]) }).success
    ).toBe(false);
  });

  it("a small model's plan schema holds it to tighter bounds, and says the same of every field", () => {
    const small = jsonSchemaOf(planSchema([], true)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const steps = small.properties.steps;
    expect(steps.maxItems).toBe(SMALL_PLAN_BOUNDS.steps);
    expect(steps.items.properties.instruction.maxLength).toBe(SMALL_PLAN_BOUNDS.instruction);
    expect(steps.items.properties.expect.properties.check.maxLength).toBe(SMALL_PLAN_BOUNDS.check);
    // Only the bounds differ from the contract's schema.
    const bounds = /"(maxItems|maxLength)":\d+/g;
    expect(JSON.stringify(small).replace(bounds, '')).toBe(
      JSON.stringify(jsonSchemaOf(planSchema())).replace(bounds, '')
    );
    expect(unbounded(small)).toEqual([]);
    // A plan over the bounds is refused with the reason (a server that does not hold answers to the schema).
    const six = {
      ...plan,
      steps: ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ ...plan.steps[0], id, depends_on: [] })),
    };
    expect(planSchema().safeParse(six).success).toBe(true);
    const refused = planSchema([], true).safeParse(six);
    expect(refused.success).toBe(false);
    expect(JSON.stringify(refused.error?.issues)).toContain('steps');
  });

  it('the response format is named after the node, and strict when every object is closed and fully required', () => {
    const format = responseFormat('route_request', jsonSchemaOf(RouteRequestOutputSchema), 'route it');
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: 'route_request', strict: true } });
    expect(strictCompatible({ type: 'object', properties: { a: { type: 'string' } }, required: [] })).toBe(false);
    expect(strictCompatible({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })).toBe(false);
  });

  it('pick_tools: one schema whose calls name an offered tool with its own arguments, or no_suitable_tool', () => {
    const grep = describeTool('workspace', {
      name: 'grep',
      description: 'Search files\nwith a regex',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { pattern: { type: 'string' }, path: { $ref: '#/definitions/Path' } },
        required: ['pattern'],
        definitions: { Path: { type: 'string' } },
      },
    });
    const fns = pickToolsFunctions([grep], ['s1', 's2']);
    const schema = callsSchema(fns, 8);
    const validate = z.fromJSONSchema(schema);

    expect(schema).toMatchObject({ properties: { calls: { minItems: 1, maxItems: 8 } } });
    expect(JSON.stringify(schema)).not.toContain('$schema');
    expect(JSON.stringify(schema)).toContain('"$ref":"#/$defs/workspace__grep__d_Path"');
    const good = {
      calls: [
        { name: 'workspace__grep', arguments: { step_id: 's1', pattern: 'TODO', path: 'notes', step_done: true } },
        { name: 'no_suitable_tool', arguments: { step_id: 's2', reason: 'no tool reads PDF files' } },
      ],
    };
    expect(validate.safeParse(good).success).toBe(true);
    for (const bad of [
      { calls: [] },
      { calls: [{ name: 'workspace__rm', arguments: { step_id: 's1' } }] },
      { calls: [{ name: 'workspace__grep', arguments: { step_id: 's9', pattern: 'x' } }] },
      { calls: [{ name: 'workspace__grep', arguments: { step_id: 's1' } }] },
      { calls: [{ name: 'no_suitable_tool', arguments: { step_id: 's1', reason: 'x'.repeat(501) } }] },
    ])
      expect(validate.safeParse(bad).success).toBe(false);
  });

  it('reads calls from an answer, reports what it cannot read, and takes JSON out of a code fence', () => {
    expect(parseCalls('{"calls":[{"name":"a","arguments":{"x":1}},{"name":"b"}]}')).toEqual({
      calls: [{ name: 'a', args: { x: 1 } }],
      invalid: [{ name: 'b', args: '{"name":"b"}', error: expect.stringMatching(/arguments/) }],
    });
    expect(parseCalls('{"calls":[{"name":"a","arguments":{"step_id":"s1"').invalid).toEqual([
      expect.objectContaining({ name: 'calls', error: expect.stringMatching(/not valid JSON/) }),
    ]);
    expect(unfence('```json\n{"a": 1}\n```')).toBe('{"a": 1}');
    expect(unfence('{"a": "```"}')).toBe('{"a": "```"}');
  });

  it('takes prose that is a JSON object, fenced or not, as arguments; anything else is not', () => {
    expect(jsonObjectIn('```json\n{"route": "chat"}\n```')).toEqual({ route: 'chat' });
    expect(jsonObjectIn(' {"a": [1]} ')).toEqual({ a: [1] });
    expect(jsonObjectIn('Sure! Here is the plan: {"a": 1}')).toBeUndefined();
    expect(jsonObjectIn('[1, 2]')).toBeUndefined();
    expect(jsonObjectIn('"text"')).toBeUndefined();
  });

  it('tells a refusal of tools or tool_choice from other client errors', () => {
    const http = (status: number, message: string) => Object.assign(new Error(message), { status });
    expect(refusesToolRequest(http(400, "Invalid 'tool_choice': expected a string"))).toBe(true);
    expect(refusesToolRequest(http(400, 'tools are not supported by this server'))).toBe(true);
    expect(refusesToolRequest(http(400, 'tools param requires --jinja flag'))).toBe(true);
    expect(refusesToolRequest(http(400, 'the request exceeds the available context size'))).toBe(false);
    expect(refusesToolRequest(http(401, 'tool_choice: invalid api key'))).toBe(false);
    expect(refusesToolRequest(new Error('tool_choice'))).toBe(false);
  });
});
