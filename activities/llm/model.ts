/**
 * The one place that talks to the model. Builds the `@langchain/openai` chat-completions model from config and
 * implements the model protocol of ARCHITECTURE §7: the `# klea:<node>` first line, one forced function for
 * structured nodes, zod validation and bounded re-asks with the validation error.
 *
 * Token counting is never done locally (it would fetch encodings from the internet); usage comes from the server.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ChatOpenAICompletions } from '@langchain/openai';
import { type AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { z } from 'zod';
import { isModelConfigured, MODEL_NOT_CONFIGURED_HINT, type Config } from '../../common/config';
import { nodeHeader, ZERO_USAGE, addUsage, type ModelUsage, type NodeName } from '../../common/model-protocol';

export const MODEL_NOT_CONFIGURED = `No model is configured: ${MODEL_NOT_CONFIGURED_HINT}.`;

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

export interface TextResult {
  text: string;
  usage: ModelUsage;
}

export interface OpenAIFunction {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ToolCallsResult {
  message: AIMessage;
  usage: ModelUsage;
}

export interface ModelClient {
  readonly configured: boolean;
  readonly modelName: string;
  /** A node with structured output: forces the function named after the node and validates its arguments. */
  structured<S extends z.ZodType>(
    prompt: NodePrompt,
    schema: S,
    description: string
  ): Promise<StructuredResult<z.infer<S>>>;
  /** A node with plain-text output. */
  text(prompt: NodePrompt): Promise<TextResult>;
  /** A node that answers with native tool calls over the given functions (the model must call at least one). */
  toolCalls(prompt: NodePrompt, functions: OpenAIFunction[]): Promise<ToolCallsResult>;
}

/** JSON Schema for a function's parameters, from the zod schema that validates them. */
export function functionParameters(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

function usageOf(message: AIMessage): ModelUsage {
  const u = message.usage_metadata;
  return u ? { inputTokens: u.input_tokens ?? 0, outputTokens: u.output_tokens ?? 0 } : ZERO_USAGE;
}

function httpStatusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; response?: { status?: unknown }; lc_error_code?: string };
  if (typeof e?.status === 'number') return e.status;
  if (typeof e?.response?.status === 'number') return e.response.status;
  if (e?.lc_error_code === 'MODEL_AUTHENTICATION') return 401;
  return undefined;
}

/**
 * Client errors that a retry cannot fix (bad request, auth, unknown model) fail the activity at once;
 * rate limits, server errors, timeouts and connection failures are thrown as they are so Temporal retries them.
 */
export function classifyModelError(node: NodeName, err: unknown): unknown {
  const status = httpStatusOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429) {
    return ApplicationFailure.nonRetryable(
      `model request for ${node} was refused (HTTP ${status}): ${message}`,
      'ModelRequestRefused'
    );
  }
  return err;
}

export function createModelClient(config: Config): ModelClient {
  const configured = isModelConfigured(config);
  const model = configured
    ? new ChatOpenAICompletions({
        model: config.model.name,
        apiKey: config.model.api_key ?? 'not-needed',
        configuration: config.model.base_url ? { baseURL: config.model.base_url } : undefined,
        temperature: config.model.temperature,
        timeout: config.model.timeout_ms,
        // Temporal owns retries (with backoff and visibility); a hidden inner retry loop would hide them.
        maxRetries: 0,
        streaming: false,
      })
    : undefined;

  const requireModel = (): ChatOpenAICompletions => {
    if (!model) throw ApplicationFailure.nonRetryable(MODEL_NOT_CONFIGURED, 'ModelNotConfigured');
    return model;
  };

  const toMessages = (prompt: NodePrompt): BaseMessage[] => [
    new SystemMessage(`${nodeHeader(prompt.node)}\n${prompt.system}`),
    ...prompt.messages.map((m) => (typeof m === 'string' ? new HumanMessage(m) : m)),
  ];

  async function invoke(node: NodeName, run: () => Promise<AIMessage>): Promise<AIMessage> {
    try {
      return await run();
    } catch (err) {
      throw classifyModelError(node, err);
    }
  }

  return {
    configured,
    modelName: config.model.name,

    async structured(prompt, schema, description) {
      const m = requireModel();
      const fn: OpenAIFunction = {
        type: 'function',
        function: { name: prompt.node, description, parameters: functionParameters(schema) },
      };
      const bound = m.bindTools([fn], { tool_choice: { type: 'function', function: { name: prompt.node } } });
      const messages = toMessages(prompt);
      let usage = ZERO_USAGE;
      let lastError = '';
      const maxAttempts = config.model.max_reasks + 1;
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const reply = (await invoke(prompt.node, () => bound.invoke(messages))) as AIMessage;
        usage = addUsage(usage, usageOf(reply));
        const call = reply.tool_calls?.find((c) => c.name === prompt.node);
        const invalid = reply.invalid_tool_calls?.find((c) => c.name === prompt.node);
        let raw = '';
        if (call) {
          raw = JSON.stringify(call.args);
          const parsed = schema.safeParse(call.args);
          if (parsed.success) return { value: parsed.data, usage, attempts: attempt };
          lastError = z.prettifyError(parsed.error).replace(/\n+/g, '; ');
        } else if (invalid) {
          raw = String(invalid.args ?? '');
          lastError = `the arguments are not valid JSON${invalid.error ? ` (${invalid.error})` : ''}`;
        } else {
          raw = typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content);
          lastError = `no call to the function ${prompt.node} was made`;
        }
        // Re-ask as a user turn (not a tool result), so no dangling tool-call ids reach the endpoint.
        messages.push(
          new HumanMessage(
            `Your previous output was rejected: ${lastError}.\nIt was: ${raw.slice(0, 2000)}\n` +
              `Call the function ${prompt.node} exactly once with arguments that satisfy its schema.`
          )
        );
      }
      throw ApplicationFailure.nonRetryable(
        `the model's output for ${prompt.node} was invalid after ${maxAttempts} attempts: ${lastError}`,
        'ModelOutputInvalid'
      );
    },

    async text(prompt) {
      const m = requireModel();
      const reply = (await invoke(prompt.node, () => m.invoke(toMessages(prompt)))) as AIMessage;
      const text =
        typeof reply.content === 'string'
          ? reply.content
          : reply.content.map((p) => ('text' in p ? p.text : '')).join('');
      return { text, usage: usageOf(reply) };
    },

    async toolCalls(prompt, functions) {
      const m = requireModel();
      const bound = m.bindTools(functions, { tool_choice: 'required' });
      const reply = (await invoke(prompt.node, () => bound.invoke(toMessages(prompt)))) as AIMessage;
      return { message: reply, usage: usageOf(reply) };
    },
  };
}
