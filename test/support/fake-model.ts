/**
 * A fake OpenAI-compatible chat-completions server on loopback, scripted per test by node name (the
 * `# klea:<node>` first line of the system prompt) and optionally by the forced function's name (or the
 * `response_format` schema's name).
 *
 * It records every request, answers with content or tool calls, can inject HTTP errors (429/500...) and
 * malformed output, and fails loudly on a request nobody scripted: it answers HTTP 400 (which Klea treats as
 * non-retryable) and `assertDone()` throws, naming the request.
 *
 * A request with a `response_format` json_schema is answered with JSON content made from the same script: a
 * `call` is sent as the arguments object, `calls` as `{"calls": [{"name", "arguments"}]}`. The `dialect` emulates
 * servers that handle structured output differently (see FakeDialect).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as it is (use it for malformed JSON). */
  args: Record<string, unknown> | string;
}

/**
 * How the server treats structured output, after real ones:
 * - `openai`: tools with any tool_choice, and response_format, are honoured.
 * - `ignores_tool_choice`: like llama.cpp's server with a small model: a forced function (the object form of
 *   tool_choice, or "required") is ignored and answered in prose; response_format is honoured.
 * - `refuses_tool_choice`: the object form of tool_choice is refused with HTTP 400; "required" and
 *   response_format are honoured.
 * - `response_format_only`: any request with tools is refused with HTTP 400; response_format is honoured.
 * - `writes_calls_as_text`: like llama.cpp's server with a larger model and no tool template: a forced function is
 *   not called, but its arguments are written as the answer's text, in a ```json fence (the scripted reply; "required"
 *   is answered in prose); response_format is honoured.
 * Prose and refusals do not use up a scripted reply: the script is what the model says once asked in a form the
 * server takes.
 */
export type FakeDialect =
  'openai' | 'ignores_tool_choice' | 'refuses_tool_choice' | 'response_format_only' | 'writes_calls_as_text';

/** Prompt tokens every answer of the fake says came from the server's cache (`timings.cache_n`). */
export const FAKE_CACHED_TOKENS = 3;

export const PROSE_INSTEAD_OF_CALL = 'Sure! I would be glad to help with that. Let me know what else you need.';

export type FakeReply =
  /** `truncated`: the answer was cut at the token limit (finish_reason "length"). */
  | { content: string; truncated?: boolean; delayMs?: number }
  | { call: Record<string, unknown> | string; name?: string; delayMs?: number }
  | { calls: FakeToolCall[]; content?: string; delayMs?: number }
  | { status: number; message?: string; delayMs?: number }
  | ((req: RecordedRequest) => FakeReply);

export interface RecordedRequest {
  node: string | null;
  forcedFunction: string | null;
  /** The object or string form of tool_choice, as sent. */
  toolChoice: unknown;
  /** The `response_format` json_schema, when the request asked for one. */
  responseFormat: { name: string; schema: Record<string, unknown>; strict?: boolean } | null;
  /** What the server did with it: answered from the script, or as its dialect has it. */
  outcome: 'scripted' | 'unscripted' | 'prose' | 'refused' | 'fenced';
  model: string;
  messages: Array<{ role: string; content: unknown; tool_calls?: unknown; tool_call_id?: string }>;
  /** Names of the functions offered (as tools, or as the variants of a json_schema `calls` answer). */
  tools: string[];
  toolSchemas: Array<{ name: string; description?: string; parameters?: Record<string, unknown> }>;
  body: Record<string, unknown>;
  /** All message text joined, for easy `toContain` assertions on prompts. */
  text: string;
  system: string;
  /** The usage this fake answered with (a successful completion only). */
  usage?: { inputTokens: number; outputTokens: number; promptEvaluated: number; promptCached: number };
  /** The client went away before the answer was sent (it aborted the request). */
  aborted?: boolean;
}

interface Script {
  replies: FakeReply[];
  always?: FakeReply;
}

export class FakeModel {
  readonly requests: RecordedRequest[] = [];
  readonly unscripted: string[] = [];
  private readonly scripts = new Map<string, Script>();
  private server!: http.Server;
  url = '';
  dialect: FakeDialect = 'openai';

  /** `host`: the address it listens on (default 127.0.0.1; the cluster tests' hosts reach it on their bridge). */
  static async start(opts: { dialect?: FakeDialect; host?: string } = {}): Promise<FakeModel> {
    const fake = new FakeModel();
    fake.dialect = opts.dialect ?? 'openai';
    await fake.listen(opts.host ?? '127.0.0.1');
    return fake;
  }

  private key(node: string, fn?: string | null) {
    return fn ? `${node}:${fn}` : node;
  }

  private script(key: string): Script {
    let s = this.scripts.get(key);
    if (!s) this.scripts.set(key, (s = { replies: [] }));
    return s;
  }

  /** Queues replies for a node (in order, each used once). `node` may be `node:function` to match the forced function. */
  on(node: string, ...replies: FakeReply[]): this {
    this.script(node).replies.push(...replies);
    return this;
  }

  /** A reply used for every request to the node once its queue is empty. */
  always(node: string, reply: FakeReply): this {
    this.script(node).always = reply;
    return this;
  }

  /** The usage this fake reported, summed over the requests that `which` keeps (all by default). */
  reportedUsage(which: (r: RecordedRequest) => boolean = () => true): {
    inputTokens: number;
    outputTokens: number;
    modelCalls: number;
    promptEvaluated: number;
    promptCached: number;
  } {
    const sum = { inputTokens: 0, outputTokens: 0, modelCalls: 0, promptEvaluated: 0, promptCached: 0 };
    for (const r of this.requests.filter((q) => q.usage && which(q))) {
      sum.inputTokens += r.usage!.inputTokens;
      sum.outputTokens += r.usage!.outputTokens;
      sum.promptEvaluated += r.usage!.promptEvaluated;
      sum.promptCached += r.usage!.promptCached;
      sum.modelCalls++;
    }
    return sum;
  }

  /** Requests recorded for one node. */
  requestsFor(node: string): RecordedRequest[] {
    return this.requests.filter((r) => r.node === node);
  }

  /** Throws if a request was not scripted or a queued reply was never used. */
  assertDone(): void {
    const leftovers = [...this.scripts.entries()]
      .filter(([, s]) => s.replies.length > 0)
      .map(([k, s]) => `${k} (${s.replies.length} unused)`);
    const problems = [
      ...this.unscripted.map((u) => `unscripted request: ${u}`),
      ...leftovers.map((l) => `scripted replies never requested: ${l}`),
    ];
    if (problems.length) throw new Error(`fake model:\n  ${problems.join('\n  ')}`);
  }

  reset(): void {
    this.requests.length = 0;
    this.unscripted.length = 0;
    this.scripts.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private listen(host: string): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void this.handle(req, res, Buffer.concat(chunks).toString('utf8'));
      });
    });
    return new Promise((resolve) => {
      this.server.listen(0, host, () => {
        this.url = `http://${host}:${(this.server.address() as AddressInfo).port}/v1`;
        resolve();
      });
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    let recorded: RecordedRequest | undefined = undefined;
    const send = (status: number, body: unknown) => {
      const { usage, timings } = body as {
        usage?: { prompt_tokens: number; completion_tokens: number };
        timings?: { prompt_n: number; cache_n: number };
      };
      if (recorded && status === 200 && usage)
        recorded.usage = {
          inputTokens: usage.prompt_tokens,
          outputTokens: usage.completion_tokens,
          promptEvaluated: timings?.prompt_n ?? 0,
          promptCached: timings?.cache_n ?? 0,
        };
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      this.unscripted.push(`${req.method} ${req.url}`);
      return send(404, {
        error: { message: `fake model: no route ${req.method} ${req.url}`, type: 'invalid_request_error' },
      });
    }
    const body = JSON.parse(raw) as Record<string, unknown>;
    const messages = (body.messages ?? []) as RecordedRequest['messages'];
    const system = messages.find((m) => m.role === 'system' || m.role === 'developer');
    const systemText = typeof system?.content === 'string' ? system.content : JSON.stringify(system?.content ?? '');
    const node = /^# klea:([a-z_]+)/.exec(systemText)?.[1] ?? null;
    const toolChoice = body.tool_choice as { function?: { name?: string } } | string | undefined;
    const forcedFunction = typeof toolChoice === 'object' ? (toolChoice.function?.name ?? null) : null;
    const format = body.response_format as
      { type?: string; json_schema?: { name: string; schema: Record<string, unknown>; strict?: boolean } } | undefined;
    const responseFormat = format?.type === 'json_schema' && format.json_schema ? format.json_schema : null;
    const toolDefs = responseFormat
      ? callVariants(responseFormat.schema)
      : (
          (body.tools ?? []) as Array<{
            function: { name: string; description?: string; parameters?: Record<string, unknown> };
          }>
        ).map((t) => t.function);
    recorded = {
      node,
      forcedFunction,
      toolChoice: toolChoice ?? null,
      responseFormat,
      outcome: 'scripted',
      model: String(body.model),
      messages,
      tools: toolDefs.map((t) => t.name),
      toolSchemas: toolDefs,
      body,
      system: systemText,
      text: messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n'),
    };
    this.requests.push(recorded);
    const entry = recorded;
    res.on('close', () => {
      if (!res.writableFinished) entry.aborted = true;
    });

    const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
    if (this.dialect === 'response_format_only' && hasTools) {
      recorded.outcome = 'refused';
      return send(400, {
        error: {
          message: 'tools are not supported by this server: use response_format',
          type: 'invalid_request_error',
        },
      });
    }
    if (this.dialect === 'refuses_tool_choice' && typeof toolChoice === 'object') {
      recorded.outcome = 'refused';
      return send(400, {
        error: {
          message: `Invalid 'tool_choice': expected one of "none", "auto", "required", got an object`,
          type: 'invalid_request_error',
        },
      });
    }
    const prose =
      (this.dialect === 'ignores_tool_choice' && (forcedFunction || toolChoice === 'required')) ||
      (this.dialect === 'writes_calls_as_text' && toolChoice === 'required');
    if (hasTools && prose) {
      recorded.outcome = 'prose';
      return send(200, completion(this.requests.length, body, raw, PROSE_INSTEAD_OF_CALL, []));
    }

    const fn = forcedFunction ?? responseFormat?.name ?? null;
    const script = (fn && node && this.scripts.get(this.key(node, fn))) || (node ? this.scripts.get(node) : undefined);
    let reply = script?.replies.shift() ?? script?.always;
    if (!reply) {
      const what = `node=${node ?? '(no # klea: line)'} function=${fn ?? '-'}`;
      recorded.outcome = 'unscripted';
      this.unscripted.push(what);
      console.error(`fake model: UNSCRIPTED request ${what}`);
      return send(400, {
        error: { message: `fake model: no scripted reply for ${what}`, type: 'invalid_request_error' },
      });
    }
    while (typeof reply === 'function') reply = reply(recorded);
    // A delayed answer is not sent to a client that went away meanwhile (a server stops on an aborted request).
    if (reply.delayMs)
      await new Promise<void>((r) => {
        const timer = setTimeout(r, reply.delayMs);
        res.on('close', () => {
          clearTimeout(timer);
          r();
        });
      });
    if (entry.aborted) return;

    if ('status' in reply) {
      return send(reply.status, {
        error: { message: reply.message ?? `fake model: injected HTTP ${reply.status}`, type: 'server_error' },
      });
    }
    const finish = 'truncated' in reply && reply.truncated ? 'length' : undefined;
    if (this.dialect === 'writes_calls_as_text' && hasTools && forcedFunction) {
      recorded.outcome = 'fenced';
      return send(200, completion(this.requests.length, body, raw, `\`\`\`json\n${jsonContent(reply)}\n\`\`\``, []));
    }
    if (responseFormat) return send(200, completion(this.requests.length, body, raw, jsonContent(reply), [], finish));
    let toolCalls: FakeToolCall[] = [];
    let content: string | null = null;
    if ('content' in reply && !('calls' in reply)) content = reply.content;
    if ('call' in reply) toolCalls = [{ name: reply.name ?? forcedFunction ?? node ?? 'unknown', args: reply.call }];
    if ('calls' in reply) {
      toolCalls = reply.calls;
      content = reply.content ?? null;
    }
    send(200, completion(this.requests.length, body, raw, content, toolCalls, finish));
  }
}

type ScriptedAnswer = Exclude<FakeReply, ((req: RecordedRequest) => FakeReply) | { status: number }>;

/** A scripted reply as the JSON content a response_format request gets (strings are sent as they are). */
function jsonContent(reply: ScriptedAnswer): string {
  if ('call' in reply) return typeof reply.call === 'string' ? reply.call : JSON.stringify(reply.call);
  if ('calls' in reply) {
    const items = reply.calls.map(
      (c) =>
        `{"name":${JSON.stringify(c.name)},"arguments":${typeof c.args === 'string' ? c.args : JSON.stringify(c.args)}}`
    );
    return `{"calls":[${items.join(',')}]}`;
  }
  return reply.content;
}

/** The functions a json_schema `calls` answer may name (the variants of its items), as tool definitions. */
function callVariants(schema: Record<string, unknown>): RecordedRequest['toolSchemas'] {
  const calls = (schema.properties as { calls?: { items?: { anyOf?: unknown[] } } } | undefined)?.calls;
  return (calls?.items?.anyOf ?? []).map((v) => {
    const props = (v as { properties: { name: { const: string }; arguments: Record<string, unknown> } }).properties;
    return { name: props.name.const, parameters: props.arguments };
  });
}

function completion(
  n: number,
  body: Record<string, unknown>,
  raw: string,
  content: string | null,
  toolCalls: FakeToolCall[],
  finishReason?: string
): Record<string, unknown> {
  return {
    id: `chatcmpl-fake-${n}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: String(body.model),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(toolCalls.length
            ? {
                tool_calls: toolCalls.map((c, i) => ({
                  id: `call_${n}_${i}`,
                  type: 'function',
                  function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) },
                })),
              }
            : {}),
        },
        finish_reason: finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
      },
    ],
    usage: {
      prompt_tokens: Math.ceil(raw.length / 4),
      completion_tokens: 10,
      total_tokens: Math.ceil(raw.length / 4) + 10,
    },
    // As llama.cpp's server says it: the prompt tokens it evaluated, and those it took from its cache.
    timings: { prompt_n: Math.ceil(raw.length / 4) - FAKE_CACHED_TOKENS, cache_n: FAKE_CACHED_TOKENS },
  };
}
