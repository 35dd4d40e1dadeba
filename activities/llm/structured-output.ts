/**
 * The json_schema method of structured output (docs/architecture.md §7): for endpoints that ignore or refuse a forced
 * function (llama.cpp's server answers prose), each structured node asks through `response_format` with a JSON
 * schema named after the node, derived from the node's zod schema in `common/`, so one schema serves both methods.
 * Native tool calls (pick_tools) become one schema, `{"calls": [{"name": <function>, "arguments": {...}}]}`,
 * whose items are the offered functions with their own parameters.
 */
import { z } from 'zod';

export type StructuredOutputMethod = 'tool_calling' | 'json_schema';

export interface OpenAIFunction {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface JsonSchemaResponseFormat {
  type: 'json_schema';
  json_schema: { name: string; description?: string; schema: Record<string, unknown>; strict: boolean };
}

/** A function call read from either method's answer. */
export interface ModelCall {
  name: string;
  args: Record<string, unknown>;
}

/** A call whose arguments could not be read; `args` is the raw text, for the error and for salvaging ids. */
export interface InvalidModelCall {
  name: string;
  args: string;
  error: string;
}

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Each node's schema is converted once per worker: the conversion costs more than the rest of a request. */
const jsonSchemas = new WeakMap<z.ZodType, JsonObject>();

/** JSON Schema of a zod schema, as a model endpoint reads it (function parameters or a response format). */
export function jsonSchemaOf(schema: z.ZodType): JsonObject {
  let json = jsonSchemas.get(schema);
  if (!json) {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
    delete json.$schema;
    jsonSchemas.set(schema, json);
  }
  // A copy: callers build requests from it.
  return structuredClone(json);
}

/**
 * Whether OpenAI's strict mode can take the schema: every object closed and every property required. Servers
 * that constrain output with a grammar (llama.cpp, vLLM) hold the answer to the schema either way.
 */
export function strictCompatible(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(strictCompatible);
  if (!isObject(schema)) return true;
  if (isObject(schema.properties)) {
    const keys = Object.keys(schema.properties);
    const required = Array.isArray(schema.required) ? schema.required : [];
    if (schema.additionalProperties !== false || !keys.every((k) => required.includes(k))) return false;
  }
  return Object.entries(schema).every(([k, v]) => k === 'const' || k === 'enum' || strictCompatible(v));
}

export function responseFormat(name: string, schema: JsonObject, description?: string): JsonSchemaResponseFormat {
  return {
    type: 'json_schema',
    json_schema: { name, ...(description ? { description } : {}), schema, strict: strictCompatible(schema) },
  };
}

/**
 * A function's parameters, made fit to sit inside another schema: `$schema` goes, and local definitions are
 * hoisted into `defs` under names prefixed with the function's, with their references rewritten to match.
 */
function embeddable(fn: string, parameters: JsonObject, defs: JsonObject): JsonObject {
  const renamed = (kind: string, name: string) => `${fn}__${kind === 'definitions' ? 'd_' : ''}${name}`;
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (!isObject(v)) return v;
    const out: JsonObject = {};
    for (const [k, child] of Object.entries(v)) {
      const ref = k === '$ref' && typeof child === 'string' ? /^#\/(\$defs|definitions)\/(.+)$/.exec(child) : null;
      out[k] = ref ? `#/$defs/${renamed(ref[1], ref[2])}` : rewrite(child);
    }
    return out;
  };
  const { $schema: _schema, $defs, definitions, ...rest } = parameters;
  for (const [kind, group] of [
    ['$defs', $defs],
    ['definitions', definitions],
  ] as const) {
    if (isObject(group)) for (const [name, def] of Object.entries(group)) defs[renamed(kind, name)] = rewrite(def);
  }
  return rewrite(rest) as JsonObject;
}

/** The response schema that stands for a choice of function calls: at least one, at most `maxCalls`. */
export function callsSchema(functions: readonly OpenAIFunction[], maxCalls: number): JsonObject {
  const defs: JsonObject = {};
  const variants = functions.map((f) => ({
    type: 'object',
    properties: {
      name: { const: f.function.name },
      arguments: embeddable(f.function.name, f.function.parameters, defs),
    },
    required: ['name', 'arguments'],
    additionalProperties: false,
  }));
  return {
    type: 'object',
    properties: {
      calls: { type: 'array', minItems: 1, maxItems: Math.max(1, maxCalls), items: { anyOf: variants } },
    },
    required: ['calls'],
    additionalProperties: false,
    ...(Object.keys(defs).length ? { $defs: defs } : {}),
  };
}

/** `name(a, b, c?)`: what a function takes, for a prompt that cannot offer it as a tool. */
function signature(f: OpenAIFunction): string {
  const params = f.function.parameters;
  const required = Array.isArray(params.required) ? (params.required as string[]) : [];
  const names = Object.keys(isObject(params.properties) ? params.properties : {});
  return `${f.function.name}(${names.map((n) => (required.includes(n) ? n : `${n}?`)).join(', ')})`;
}

/**
 * Appended to a structured node's system prompt under json_schema: the prompts speak of calling the node's
 * function, which this endpoint cannot be asked to do.
 */
export const argumentsInstruction = (node: string) =>
  `This endpoint takes no function calls. Where these instructions say to call the function ${node}, answer ` +
  `instead with only its arguments, as one JSON object and nothing else.`;

/** The same for native tool calls: the offered functions are listed, since no `tools` are sent. */
export function callsInstruction(functions: readonly OpenAIFunction[]): string {
  const list = functions.map((f) => `- ${signature(f)}: ${f.function.description.split('\n')[0]}`).join('\n');
  return (
    'This endpoint takes no function calls. Answer instead with one JSON object and nothing else: ' +
    '{"calls": [{"name": "<function>", "arguments": {...}}]}, one item for every call you would make. ' +
    `The functions:\n${list}`
  );
}

/** The JSON inside a markdown code fence, which endpoints without a grammar sometimes wrap an answer in. */
export function unfence(text: string): string {
  const fenced = /^\s*```[A-Za-z]*[ \t]*\n([\s\S]*?)\n?[ \t]*```\s*$/.exec(text);
  return fenced ? fenced[1] : text;
}

/** The JSON object a prose answer is (fenced or not), or undefined when it is anything else. */
export function jsonObjectIn(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(unfence(text));
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The calls in a json_schema answer; anything malformed is reported, never dropped silently. */
export function parseCalls(content: string): { calls: ModelCall[]; invalid: InvalidModelCall[] } {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (err) {
    return { calls: [], invalid: [{ name: 'calls', args: content, error: `not valid JSON (${errorText(err)})` }] };
  }
  if (!isObject(value) || !Array.isArray(value.calls))
    return { calls: [], invalid: [{ name: 'calls', args: content, error: 'the answer has no "calls" array' }] };
  const calls: ModelCall[] = [];
  const invalid: InvalidModelCall[] = [];
  for (const item of value.calls as unknown[]) {
    if (isObject(item) && typeof item.name === 'string' && isObject(item.arguments))
      calls.push({ name: item.name, args: item.arguments });
    else
      invalid.push({
        name: isObject(item) && typeof item.name === 'string' ? item.name : 'unknown',
        args: JSON.stringify(item) ?? '',
        error: 'a call needs a "name" and an "arguments" object',
      });
  }
  return { calls, invalid };
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** HTTP status of an error from the OpenAI client, if it has one. */
export function httpStatusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; response?: { status?: unknown }; lc_error_code?: string };
  if (typeof e?.status === 'number') return e.status;
  if (typeof e?.response?.status === 'number') return e.response.status;
  if (e?.lc_error_code === 'MODEL_AUTHENTICATION') return 401;
  return undefined;
}

/**
 * A refusal of the request's form rather than of its content: a 400 (or 422) whose message is about tools or
 * tool_choice, as servers without function calling, or without the object form of tool_choice, answer.
 */
export function refusesToolRequest(err: unknown): boolean {
  const status = httpStatusOf(err);
  if (status !== 400 && status !== 422) return false;
  return /tool[_ ]?choice|\btools\b|tool[_ ]calls?|function[_ ]call/i.test(errorText(err));
}
