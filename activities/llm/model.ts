/**
 * The one place that talks to the model. Builds the `@langchain/openai` chat-completions model from config and
 * implements the model protocol of docs/architecture.md §7: the `# klea:<node>` first line, structured output by one
 * forced function (tool_calling) or by `response_format` (json_schema, see ./structured-output), zod validation
 * and bounded re-asks with the validation error.
 *
 * Under `model.structured_output: auto` the client starts with tool calling and moves to json_schema, for the rest
 * of its life (the worker's), the first time the endpoint answers a forced function with prose or refuses the
 * request's tools: llama.cpp's server, Ollama and others then work with no configuration. Prose that is valid
 * arguments of the function as JSON (fenced or not) is taken as the answer, not asked for again. A plain-text
 * answer cut at the output token limit may be asked again with `RUN_ON_PENALTY`.
 *
 * Token counting is never done locally (it would fetch encodings from the internet, and hang offline): usage
 * comes from the server, and streaming stays off because LangChain counts streamed tokens itself.
 *
 * Beside it: ./chat-model (the LangChain model requests go through), ./structured-output-choice (the method in
 * force), ./model-reply (what a reply says besides its answer), ./model-observe (each request's span and metrics)
 * and ./model-errors (what a failed request means).
 */
import { ApplicationFailure } from '@temporalio/common';
import { type AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import type { z } from 'zod';
import {
  isModelConfigured,
  MODEL_NOT_CONFIGURED_HINT,
  outputLimit,
  type Config,
  type ModelProfile,
} from '../../common/config';
import { Failure } from '../../common/failures';
import { nodeHeader, ZERO_USAGE, addUsage, type ModelUsage, type NodeName } from '../../common/model-protocol';
import { formatZodIssues } from '../../common/zod-issues';
import { ChatCompletionsModel } from './chat-model';
import { classifyModelError, errorText } from './model-errors';
import { messagesKey, replyMemo } from './model-memo';
import { observeModelCalls } from './model-observe';
import { contentOf, CUT_SHORT, cutShort, usageOf } from './model-reply';
import { silentLogger, type Logger } from '../../runtime/log';
import { StructuredOutputChoice } from './structured-output-choice';
import { activityContext } from '../activity-context';
import {
  argumentsInstruction,
  callsInstruction,
  callsSchema,
  jsonObjectIn,
  jsonSchemaOf,
  parseCalls,
  refusesToolRequest,
  responseFormat,
  unfence,
  type InvalidModelCall,
  type ModelCall,
  type OpenAIFunction,
  type StructuredOutputMethod,
} from './structured-output';

/**
 * The request's abort signal: the activity's cancellation (a cancelled task, a workflow that ended), so the model
 * server stops working on an answer nobody will read. A local server answers one request at a time: an abandoned
 * one held up the next task's requests until the client's own timeout.
 */
function aborting(): { signal?: AbortSignal } {
  const ctx = activityContext();
  return ctx ? { signal: ctx.cancellationSignal } : {};
}

export type { OpenAIFunction, StructuredOutputMethod } from './structured-output';

export const MODEL_NOT_CONFIGURED = `No model is configured: ${MODEL_NOT_CONFIGURED_HINT}.`;

/**
 * The `frequency_penalty` of a plain-text request that asks again for an answer cut at the output token limit
 * (`TextOptions.afterCutOff`). A file's content that runs to the limit has mostly fallen into a loop (one more test
 * case, each a little longer, until the limit), and at temperature 0 the same prompt falls into the same loop. The
 * penalty, a standard parameter of the chat-completions API, makes each repeat less likely; it is sent on such a
 * re-ask only, so no other answer is changed by it. Not for structured answers: a JSON answer repeats its keys by
 * design, and a plan asked again with it came back no better.
 */
export const RUN_ON_PENALTY = 0.5;

export interface NodePrompt {
  node: NodeName;
  /** System prompt body (the `# klea:<node>` line is added here). */
  system: string;
  /** The conversation after the system prompt: strings are user turns. */
  messages: Array<string | BaseMessage>;
}

export interface StructuredResult<T> {
  value: T;
  usage: ModelUsage;
  attempts: number;
}

export interface StructuredOptions<T> {
  /**
   * A check beyond the schema: what is wrong with a valid answer, or null. A problem is asked again like a schema
   * error, with the reason, within the same bounded re-asks.
   */
  check?: (value: T) => string | null;
  /**
   * The prompt to ask instead, afresh, the first time `check` refuses an answer (what it asks for, not a quote of the
   * refused answer and the reason, which a small model at temperature 0 repeats: an example it copied, say).
   */
  afresh?: NodePrompt;
}

export interface TextOptions {
  /** The previous answer to this prompt was cut at the output token limit: ask with `RUN_ON_PENALTY`. */
  afterCutOff?: boolean;
}

export interface TextResult {
  text: string;
  usage: ModelUsage;
  /** The answer stopped at the output token limit (`finish_reason: "length"`): it may be incomplete. */
  cutShort?: boolean;
}

export interface ToolCallsResult {
  calls: ModelCall[];
  /** Calls whose arguments could not be read (malformed JSON, a truncated answer). */
  invalid: InvalidModelCall[];
  usage: ModelUsage;
}

export interface ModelClient {
  readonly configured: boolean;
  readonly modelName: string;
  /** How structured nodes are asked now (under `auto` it may move from tool_calling to json_schema, once). */
  readonly structuredOutput: StructuredOutputMethod;
  /** What the model can do (`model.profile`): `small` turns on ./small-model's help. */
  readonly profile: ModelProfile;
  /** A node with structured output: the node's zod schema validates the answer, with bounded re-asks. */
  structured<S extends z.ZodType>(
    prompt: NodePrompt,
    schema: S,
    description: string,
    opts?: StructuredOptions<z.infer<S>>
  ): Promise<StructuredResult<z.infer<S>>>;
  /** A node with plain-text output. */
  text(prompt: NodePrompt, opts?: TextOptions): Promise<TextResult>;
  /**
   * A node that answers with calls of the given functions (at least one): native tool calls, or under json_schema
   * one `{"calls": [...]}` answer of at most `maxCalls` items.
   */
  toolCalls(prompt: NodePrompt, functions: OpenAIFunction[], opts: { maxCalls: number }): Promise<ToolCallsResult>;
}

type Answer =
  | { kind: 'value'; value: unknown; raw: string }
  | { kind: 'invalid' | 'no_call' | 'cut_short'; raw: string; error: string };

export function createModelClient(config: Config, log: Logger = silentLogger): ModelClient {
  const configured = isModelConfigured(config);
  const fields = configured
    ? {
        model: config.model.name,
        apiKey: config.model.api_key ?? 'not-needed',
        configuration: config.model.base_url ? { baseURL: config.model.base_url } : undefined,
        temperature: config.model.temperature,
        timeout: config.model.timeout_ms,
        // Temporal owns retries (with backoff and visibility); a hidden inner retry loop would hide them.
        maxRetries: 0,
        streaming: false,
        // The whole answer beside the message: llama.cpp's server says in `timings` how much of the prompt came from
        // its cache (`promptCacheOf` in ./model-reply).
        __includeRawResponse: true,
      }
    : undefined;
  const choice = new StructuredOutputChoice(config.model.structured_output, config.model.name, log);

  /** The models made so far, one per output limit and penalty (`requireModel`). */
  const models = new Map<string, ChatCompletionsModel>();
  /**
   * The model for `node`, its every answer bounded by the node's output limit (a small model's run-on is cut, not
   * waited out: common/config.ts, `outputLimit`), or after an answer cut at that limit the same one with
   * `RUN_ON_PENALTY`.
   */
  const requireModel = (node: NodeName, afterCutOff = false): ChatCompletionsModel => {
    if (!fields) throw ApplicationFailure.nonRetryable(MODEL_NOT_CONFIGURED, Failure.ModelNotConfigured);
    const maxTokens = outputLimit(config.model, node);
    const key = `${maxTokens ?? 'none'}:${afterCutOff}`;
    let m = models.get(key);
    if (!m) {
      m = new ChatCompletionsModel({
        ...fields,
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        ...(afterCutOff ? { frequencyPenalty: RUN_ON_PENALTY } : {}),
      });
      models.set(key, m);
    }
    return m;
  };

  const toMessages = (prompt: NodePrompt, turns: BaseMessage[], instruction?: string): BaseMessage[] => [
    new SystemMessage(`${nodeHeader(prompt.node)}\n${prompt.system}${instruction ? `\n\n${instruction}` : ''}`),
    ...turns,
  ];

  const turnsOf = (prompt: NodePrompt): BaseMessage[] =>
    prompt.messages.map((m) => (typeof m === 'string' ? new HumanMessage(m) : m));

  /**
   * One model request as a span and in the worker's metrics (./model-observe): klea_model_calls_total and
   * klea_model_tokens_total for answered requests, klea_model_errors_total for failed.
   */
  const observed = observeModelCalls(config.model.name);
  /** A request sent again word for word in a task, at temperature 0, is answered from memory (./model-memo). */
  const remember = replyMemo(config.model.temperature === 0);

  /** One request: `sent` is all it sends (its messages and what they are asked with), for ./model-memo. */
  async function invoke(node: NodeName, sent: readonly unknown[], run: () => Promise<AIMessage>): Promise<AIMessage> {
    try {
      return await remember(sent, () => observed(node, run));
    } catch (err) {
      throw classifyModelError(node, err);
    }
  }

  /** A request with tools; null when the endpoint refused its form and auto moved to json_schema. */
  async function invokeWithTools(
    node: NodeName,
    sent: readonly unknown[],
    run: () => Promise<AIMessage>
  ): Promise<AIMessage | null> {
    try {
      return await remember(sent, () => observed(node, run));
    } catch (err) {
      if (refusesToolRequest(err) && choice.fallBack(node, `refused a request with tools: ${errorText(err)}`))
        return null;
      throw classifyModelError(node, err, refusesToolRequest(err) ? choice.hint : '');
    }
  }

  return {
    configured,
    modelName: config.model.name,
    get structuredOutput() {
      return choice.method;
    },
    profile: config.model.profile,

    async structured(firstPrompt, schema, description, opts = {}) {
      let prompt = firstPrompt;
      const node = prompt.node;
      const m = requireModel(node);
      const parameters = jsonSchemaOf(schema);
      const fn: OpenAIFunction = { type: 'function', function: { name: node, description, parameters } };
      const bound = m.bindTools([fn], { tool_choice: { type: 'function', function: { name: node } } });
      const format = responseFormat(node, parameters, description);
      let turns = turnsOf(prompt);

      const ask = async (): Promise<{ answer: Answer; usage: ModelUsage }> => {
        let usage = ZERO_USAGE;
        if (choice.method === 'tool_calling') {
          const sent = toMessages(prompt, turns);
          const reply = await invokeWithTools(
            node,
            ['function', fn, messagesKey(sent)],
            () => bound.invoke(sent, aborting()) as Promise<AIMessage>
          );
          if (reply) {
            usage = usageOf(reply);
            const call = reply.tool_calls?.find((c) => c.name === node);
            if (call) return { answer: { kind: 'value', value: call.args, raw: JSON.stringify(call.args) }, usage };
            const invalid = reply.invalid_tool_calls?.find((c) => c.name === node);
            if (invalid) {
              const raw = String(invalid.args ?? '');
              if (cutShort(reply)) return { answer: { kind: 'cut_short', raw, error: CUT_SHORT }, usage };
              const error = `the arguments are not valid JSON${invalid.error ? ` (${invalid.error})` : ''}`;
              return { answer: { kind: 'invalid', raw, error }, usage };
            }
            const raw = contentOf(reply);
            if (!choice.fallBack(node, 'answered without the forced function call'))
              return { answer: { kind: 'no_call', raw, error: `no call to the function ${node} was made` }, usage };
            // The endpoint ignores tools: an answer that is valid arguments as JSON is taken, not asked for again
            // under json_schema (a model on a CPU spends a minute on one). Anything else is asked again at once
            // under json_schema, unquoted: a small model's first answer in another shape (a call of a function it
            // made up), quoted back with the schema's complaints, led it to copy the prompt's example instead.
            const value = jsonObjectIn(raw);
            if (value !== undefined && schema.safeParse(value).success)
              return { answer: { kind: 'value', value, raw }, usage };
          }
        }
        const sent = toMessages(prompt, turns, argumentsInstruction(node));
        const reply = await invoke(node, [format, messagesKey(sent)], () =>
          m.invoke(sent, { ...aborting(), response_format: format })
        );
        usage = addUsage(usage, usageOf(reply));
        const raw = contentOf(reply);
        try {
          return { answer: { kind: 'value', value: JSON.parse(unfence(raw)), raw }, usage };
        } catch (err) {
          if (cutShort(reply)) return { answer: { kind: 'cut_short', raw, error: CUT_SHORT }, usage };
          return { answer: { kind: 'invalid', raw, error: `the answer is not valid JSON (${errorText(err)})` }, usage };
        }
      };

      let usage = ZERO_USAGE;
      let lastError = '';
      let lastKind: Answer['kind'] = 'value';
      const maxAttempts = config.model.max_reasks + 1;
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const { answer, usage: used } = await ask();
        usage = addUsage(usage, used);
        lastKind = answer.kind;
        if (answer.kind === 'value') {
          const parsed = schema.safeParse(answer.value);
          const problem = parsed.success ? (opts.check?.(parsed.data) ?? null) : null;
          if (parsed.success && problem === null) return { value: parsed.data, usage, attempts: attempt };
          lastError = parsed.success ? (problem ?? '') : formatZodIssues(parsed.error, { whole: 'answer' });
          // Once: the same prompt again, at temperature 0, gets the same answer; a second refusal is quoted as usual.
          if (problem !== null && opts.afresh && prompt !== opts.afresh) {
            prompt = opts.afresh;
            turns = turnsOf(prompt);
            continue;
          }
        } else {
          lastError = answer.error;
        }
        const again =
          (choice.method === 'json_schema'
            ? `Answer again with only the JSON object of the arguments of ${node}, satisfying its schema.`
            : `Call the function ${node} exactly once with arguments that satisfy its schema.`) +
          (answer.kind === 'cut_short' ? ' Keep it much shorter: fewer items in every list, and shorter text.' : '');
        // A cut answer is quoted only as far as it shows the way it went: in full it invites the same run-on.
        const quoted = answer.kind === 'cut_short' ? `${answer.raw.slice(0, 300)}…` : answer.raw.slice(0, 2000);
        // Re-ask as a user turn (not a tool result), so no dangling tool-call ids reach the endpoint.
        turns.push(new HumanMessage(`Your previous output was rejected: ${lastError}.\nIt was: ${quoted}\n${again}`));
      }
      throw ApplicationFailure.nonRetryable(
        `the model's output for ${node} was invalid after ${maxAttempts} attempts: ${lastError}` +
          (lastKind === 'no_call' ? choice.hint : ''),
        Failure.ModelOutputInvalid
      );
    },

    async text(prompt, opts = {}) {
      const m = requireModel(prompt.node, opts.afterCutOff === true);
      const sent = toMessages(prompt, turnsOf(prompt));
      const reply = await invoke(prompt.node, [opts.afterCutOff === true, messagesKey(sent)], () =>
        m.invoke(sent, aborting())
      );
      return { text: contentOf(reply), usage: usageOf(reply), ...(cutShort(reply) ? { cutShort: true } : {}) };
    },

    async toolCalls(prompt, functions, opts) {
      const node = prompt.node;
      const m = requireModel(node);
      const turns = turnsOf(prompt);
      let usage = ZERO_USAGE;
      if (choice.method === 'tool_calling') {
        const bound = m.bindTools(functions, { tool_choice: 'required' });
        const sent = toMessages(prompt, turns);
        const reply = await invokeWithTools(
          node,
          ['functions', functions, messagesKey(sent)],
          () => bound.invoke(sent, aborting()) as Promise<AIMessage>
        );
        if (reply) {
          usage = usageOf(reply);
          const calls = (reply.tool_calls ?? []).map((c) => ({
            name: c.name,
            args: c.args as Record<string, unknown>,
          }));
          const invalid = (reply.invalid_tool_calls ?? []).map((c) => ({
            name: c.name ?? 'unknown',
            args: String(c.args ?? ''),
            error: `the arguments are not valid JSON${c.error ? ` (${c.error})` : ''}`,
          }));
          if (calls.length || invalid.length || !choice.fallBack(node, 'answered without any function call'))
            return { calls, invalid, usage };
        }
      }
      const format = responseFormat(node, callsSchema(functions, opts.maxCalls));
      const sent = toMessages(prompt, turns, callsInstruction(functions));
      const reply = await invoke(node, [format, messagesKey(sent)], () =>
        m.invoke(sent, { ...aborting(), response_format: format })
      );
      const parsed = parseCalls(unfence(contentOf(reply)));
      if (cutShort(reply)) for (const bad of parsed.invalid) bad.error = CUT_SHORT;
      return { ...parsed, usage: addUsage(usage, usageOf(reply)) };
    },
  };
}
