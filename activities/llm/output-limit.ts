/**
 * The endpoint's output limit, learnt from an answer cut at it, and a structured node's schema bounded to fit it
 * (docs/models.md, "An answer cut at the output limit").
 *
 * A local server stops every answer at its own output limit (llama.cpp's `n_predict`), which the client is not told.
 * A structured answer that runs on (a plan step whose instruction lists one more case after another, a `check`
 * whose pattern repeats itself, a tenth step that searches one more folder) reaches that limit unfinished: the
 * request is lost (on a CPU, 512 tokens of a 1.5B model take 45 s) and asked again. Once two answers of the worker's
 * life have been cut after the same number of tokens, that number is the limit. From then on each structured
 * request's JSON schema, which the server turns into a grammar, bounds every list and every free text to a share of
 * that limit, so a run-on is closed by the grammar and the rest of the answer still fits. Only for a node that asks
 * for it (`fitOutputLimit`: the plan), not one whose answer is a single text (a chat reply). An answer that was never
 * near the limit is not changed by it. The node's own schema still validates the answer; only the request's copy is
 * bounded.
 */

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A cut answer shorter than this is not taken for the limit. A server also cuts an answer when the prompt and the
 * answer fill its context, after however many tokens were left: such a cut says nothing of the output limit.
 */
export const MIN_OUTPUT_LIMIT = 128;
/** Tokens of the limit per item of a list (a plan step takes 70 to 100): 5 items under a limit of 512. */
export const TOKENS_PER_ITEM = 100;
/**
 * Characters of free text per token of the limit: a text may take about a sixth of the answer (256 characters under a
 * limit of 512; in the plans of the eval's runs, 2 of 463 step instructions were longer, and no goal or check).
 */
export const CHARS_PER_TOKEN = 0.5;

/**
 * The endpoint's output limit in tokens, once answers cut at it have shown it (for the worker's life): two answers
 * cut after the same number of tokens, at least `MIN_OUTPUT_LIMIT`. An answer cut because the context was full ends
 * after whatever room was left, which two such cuts hardly share.
 */
export class OutputLimit {
  private readonly seen = new Set<number>();
  private tokens: number | undefined;

  /** An answer was cut at the limit after `outputTokens` tokens (the server's count). */
  cutAt(outputTokens: number): void {
    if (!Number.isInteger(outputTokens) || outputTokens < MIN_OUTPUT_LIMIT) return;
    if (this.seen.has(outputTokens)) this.tokens = Math.max(this.tokens ?? 0, outputTokens);
    this.seen.add(outputTokens);
  }

  get known(): number | undefined {
    return this.tokens;
  }
}

/** The longest free text of a structured answer under an output limit of `tokens`. */
export const textBoundOf = (tokens: number) => Math.max(1, Math.floor(tokens * CHARS_PER_TOKEN));

/** Keywords whose values are schemas, or lists or maps of schemas (not data such as `enum`, `const`, `default`). */
const SCHEMA = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties']);

const isType = (s: JsonObject, type: string) => s.type === type || (Array.isArray(s.type) && s.type.includes(type));

/**
 * `schema` with every list at most `tokens / TOKENS_PER_ITEM` items long (at least one, and never below its
 * `minItems`) and every free text (a string with no `enum`, `const`, `pattern` or `format`) at most
 * `tokens * CHARS_PER_TOKEN` characters (never below its `minLength`). Tighter bounds of its own are kept.
 */
export function boundedSchema(schema: JsonObject, tokens: number): JsonObject {
  const items = Math.max(1, Math.floor(tokens / TOKENS_PER_ITEM));
  const chars = textBoundOf(tokens);
  const bound = (node: unknown): unknown => {
    if (!isObject(node)) return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (SCHEMA.has(key)) out[key] = Array.isArray(value) ? value.map(bound) : bound(value);
      else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map(bound);
      else if (SCHEMA_MAPS.has(key) && isObject(value))
        out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bound(v)]));
      else out[key] = value;
    }
    const atMost = (own: unknown, cap: number, floor: unknown) =>
      Math.max(typeof floor === 'number' ? floor : 0, Math.min(typeof own === 'number' ? own : Infinity, cap));
    if (isType(out, 'array')) out.maxItems = atMost(out.maxItems, items, out.minItems);
    const freeText = !('enum' in out) && !('const' in out) && !('pattern' in out) && !('format' in out);
    if (isType(out, 'string') && freeText) out.maxLength = atMost(out.maxLength, chars, out.minLength);
    return out;
  };
  return bound(schema) as JsonObject;
}
