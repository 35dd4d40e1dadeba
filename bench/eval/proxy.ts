/**
 * A recording HTTP proxy between an agent (Klea, or the peer) and llama.cpp's server: it passes every request and
 * response through unchanged (streamed answers as they come) and records, for each chat completion, what the
 * server says it did: `timings.prompt_n` (prompt tokens really evaluated), `timings.cache_n` (prompt tokens served
 * from the KV cache), `timings.predicted_n`, and `usage`. Tasks run one at a time, so each call is put down to the
 * task running when it was made (`label`); calls made between tasks are kept apart.
 */
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServerCall {
  /** The task running when the call was made (null: between tasks). */
  label: string | null;
  path: string;
  status: number;
  /** Prompt tokens the server evaluated (not served from its cache). */
  promptEvaluated: number;
  /** Prompt tokens served from the server's KV cache. */
  promptCached: number;
  /** Tokens the server generated. */
  predicted: number;
  /** `usage` as the server reported it. */
  promptTokens: number;
  completionTokens: number;
  ms: number;
}

export interface CallTotals {
  calls: number;
  promptEvaluated: number;
  promptCached: number;
  promptTokens: number;
  completionTokens: number;
}

export const NO_CALLS: CallTotals = {
  calls: 0,
  promptEvaluated: 0,
  promptCached: 0,
  promptTokens: 0,
  completionTokens: 0,
};

export function totals(calls: readonly ServerCall[]): CallTotals {
  return calls.reduce(
    (t, c) => ({
      calls: t.calls + 1,
      promptEvaluated: t.promptEvaluated + c.promptEvaluated,
      promptCached: t.promptCached + c.promptCached,
      promptTokens: t.promptTokens + c.promptTokens,
      completionTokens: t.completionTokens + c.completionTokens,
    }),
    NO_CALLS
  );
}

type Json = Record<string, unknown>;
const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);

/**
 * What a chat-completion response body says of the work done: a JSON body, or a stream of server-sent events whose
 * last chunks carry `timings` and `usage`.
 */
export function readServerWork(body: string): Omit<ServerCall, 'label' | 'path' | 'status' | 'ms'> {
  const objects: Json[] = [];
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) {
    try {
      objects.push(JSON.parse(trimmed) as Json);
    } catch {
      /* not JSON after all: nothing to read */
    }
  } else {
    for (const line of body.split('\n')) {
      const data = line.startsWith('data:') ? line.slice(5).trim() : '';
      if (!data.startsWith('{')) continue;
      try {
        objects.push(JSON.parse(data) as Json);
      } catch {
        /* a cut chunk */
      }
    }
  }
  const timings = [...objects].reverse().find((o) => o.timings)?.timings as Json | undefined;
  const usage = [...objects].reverse().find((o) => o.usage)?.usage as Json | undefined;
  return {
    promptEvaluated: num(timings?.prompt_n),
    promptCached: num(timings?.cache_n),
    predicted: num(timings?.predicted_n),
    promptTokens: num(usage?.prompt_tokens),
    completionTokens: num(usage?.completion_tokens),
  };
}

export interface RecordingProxy {
  /** The proxy's base URL, with the upstream's path (`http://127.0.0.1:PORT/v1`). */
  baseUrl: string;
  /** The task that the next calls belong to (null: none). */
  label: string | null;
  /** The calls made so far, in order. */
  readonly calls: readonly ServerCall[];
  /** The calls put down to `label`. */
  callsOf(label: string | null): ServerCall[];
  stop(): Promise<void>;
}

/** Starts a proxy on a free loopback port in front of `upstreamBaseUrl` (`http://127.0.0.1:PORT/v1`). */
export async function startRecordingProxy(
  upstreamBaseUrl: string,
  /** A file to append each exchange to (a JSON line: the task, the request and the answer), to read why. */
  exchangesFile?: string
): Promise<RecordingProxy> {
  const upstream = new URL(upstreamBaseUrl);
  const calls: ServerCall[] = [];
  const proxy: RecordingProxy = {
    baseUrl: '',
    label: null,
    calls,
    callsOf: (label) => calls.filter((c) => c.label === label),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  const server = http.createServer((req, res) => {
    const label = proxy.label;
    const started = Date.now();
    const path = req.url ?? '/';
    const recorded = req.method === 'POST' && /\/(chat\/)?completions$/.test(path.split('?')[0]);
    const sent: Buffer[] = [];
    if (recorded && exchangesFile) req.on('data', (chunk: Buffer) => sent.push(chunk));
    const headers = { ...req.headers, host: upstream.host };
    const out = http.request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => {
          if (recorded) chunks.push(chunk);
          res.write(chunk);
        });
        answer.on('end', () => {
          res.end();
          if (recorded && exchangesFile)
            appendFileSync(
              exchangesFile,
              `${JSON.stringify({ label, request: Buffer.concat(sent).toString('utf8'), answer: Buffer.concat(chunks).toString('utf8') })}\n`
            );
          if (recorded)
            calls.push({
              label,
              path,
              status: answer.statusCode ?? 0,
              ms: Date.now() - started,
              ...readServerWork(Buffer.concat(chunks).toString('utf8')),
            });
        });
        answer.on('error', () => res.destroy());
      }
    );
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `eval proxy: ${err.message}` } }));
    });
    // A client that goes away (a cancelled task) cancels the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  proxy.baseUrl = `http://127.0.0.1:${port}${upstream.pathname.replace(/\/$/, '')}`;
  return proxy;
}
