/**
 * One MCP client per server per worker process: connected on first use, reused, reconnected after its server
 * dies. `listTools` is cached and refreshed when the server says its list changed. `shutdown` ends every
 * stdio server's whole process group. Remote servers speak streamable HTTP or, when configured `type: sse` (or
 * found to need it), the older HTTP+SSE transport.
 *
 * Tool failures (`isError`) come back as data; transport failures (the server died, timed out, cannot start)
 * throw, so the activity that called fails and Temporal retries it as the tool's retry policy allows.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { SpanKind } from '@opentelemetry/api';
import { Failure } from '../../common/failures';
import type { Logger } from '../../runtime/log';
import { inSpan } from '../../runtime/tracing';
import { GroupStdioTransport } from './group-stdio-transport';
import type { ServerSpec } from './servers';

export class McpServerUnavailable extends Error {
  constructor(
    readonly server: string,
    message: string
  ) {
    super(message);
    this.name = Failure.McpServerUnavailable;
  }
}

interface Connection {
  spec: ServerSpec;
  client: Client;
  transport: Transport;
  tools?: Promise<Tool[]>;
  alive: boolean;
}

export interface CallOptions {
  timeoutMs?: number;
  meta?: Record<string, unknown>;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  signal?: AbortSignal;
}

/**
 * A signal of the request's own, following the caller's while the request runs. The MCP client adds an abort
 * listener to a request's signal and never removes it, so an activity making its calls under its one cancellation
 * signal (`/init` makes a dozen) kept a listener, and what it holds, per call until the activity ended.
 */
function requestSignal(outer: AbortSignal | undefined): { signal?: AbortSignal; done(): void } {
  if (!outer) return { done() {} };
  const own = new AbortController();
  const follow = () => own.abort(outer.reason);
  if (outer.aborted) follow();
  else outer.addEventListener('abort', follow, { once: true });
  return { signal: own.signal, done: () => outer.removeEventListener('abort', follow) };
}

export class McpPool {
  private readonly connections = new Map<string, Promise<Connection>>();
  private closing = false;

  constructor(private readonly log: Logger) {}

  /** The server process id of a connected stdio server (for tests and diagnostics). */
  async pidOf(spec: ServerSpec): Promise<number | undefined> {
    const conn = await this.connections.get(spec.key);
    return conn?.transport instanceof GroupStdioTransport ? conn.transport.pid : undefined;
  }

  async listTools(spec: ServerSpec): Promise<Tool[]> {
    return this.onConnection(spec, (conn) => {
      conn.tools ??= (async () => {
        const tools: Tool[] = [];
        let cursor: string | undefined;
        do {
          const page = await conn.client.listTools(cursor ? { cursor } : undefined, { timeout: spec.timeoutMs });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
        return tools;
      })().catch((err: unknown) => {
        conn.tools = undefined;
        throw err;
      });
      return conn.tools;
    });
  }

  private async callToolRequest(
    spec: ServerSpec,
    name: string,
    args: Record<string, unknown>,
    opts: CallOptions,
    timeout: number
  ): Promise<CallToolResult> {
    const cancel = requestSignal(opts.signal);
    try {
      const result = await this.onConnection(spec, (conn) =>
        conn.client.callTool(
          { name, arguments: args, ...(opts.meta ? { _meta: opts.meta } : {}) },
          CallToolResultSchema,
          {
            timeout,
            // Progress notifications keep a long call alive, up to four times its timeout in all.
            resetTimeoutOnProgress: true,
            maxTotalTimeout: timeout * 4,
            onprogress: opts.onProgress,
            signal: cancel.signal,
          }
        )
      );
      return result as CallToolResult;
    } finally {
      cancel.done();
    }
  }

  async callTool(
    spec: ServerSpec,
    name: string,
    args: Record<string, unknown>,
    opts: CallOptions = {}
  ): Promise<CallToolResult> {
    const timeout = opts.timeoutMs ?? spec.timeoutMs;
    // The MCP request as a client span: server and tool names only, never the arguments.
    return inSpan(
      `mcp tools/call ${spec.name}.${name}`,
      { 'rpc.system': 'jsonrpc', 'rpc.method': 'tools/call', 'mcp.server': spec.name, 'mcp.tool': name },
      (span) =>
        this.callToolRequest(spec, name, args, opts, timeout).then((r) => {
          span.setAttribute('mcp.is_error', Boolean(r.isError));
          return r;
        }),
      SpanKind.CLIENT
    );
  }

  /**
   * Runs `use` on the server's connection. A streamable HTTP server answers 404 to a session it no longer knows
   * (it restarted, or let the session expire): the request did not run, and the MCP spec has the client start a
   * new session, so it is sent once more on a new one.
   */
  private async onConnection<T>(spec: ServerSpec, use: (conn: Connection) => Promise<T>): Promise<T> {
    const conn = await this.connect(spec);
    try {
      return await use(conn);
    } catch (err) {
      const sessionLost =
        conn.transport instanceof StreamableHTTPClientTransport &&
        err instanceof StreamableHTTPError &&
        err.code === 404;
      if (!sessionLost) throw err;
      this.log.info('MCP server no longer knows the session; starting a new one', { server: spec.name });
      await this.forget(conn);
      return use(await this.connect(spec));
    }
  }

  private async forget(conn: Connection): Promise<void> {
    conn.alive = false;
    const pending = this.connections.get(conn.spec.key);
    const current = await pending?.catch(() => undefined);
    // Another call may have replaced it already; that newer connection stays.
    if (current === conn && this.connections.get(conn.spec.key) === pending) this.connections.delete(conn.spec.key);
    await conn.client.close().catch(() => undefined);
  }

  /** Stops one server, if running (what it runs is no longer approved); the next call starts it again. */
  async stop(spec: Pick<ServerSpec, 'key'>): Promise<void> {
    const pending = this.connections.get(spec.key);
    if (!pending) return;
    this.connections.delete(spec.key);
    const conn = await pending.catch(() => undefined);
    if (!conn) return;
    conn.alive = false;
    await conn.client.close().catch(() => undefined);
    await conn.transport.close().catch(() => undefined);
  }

  async shutdown(): Promise<void> {
    this.closing = true;
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(
      all.map(async (p) => {
        const conn = await p.catch(() => undefined);
        if (!conn) return;
        conn.alive = false;
        await conn.client.close().catch(() => undefined);
        await conn.transport.close().catch(() => undefined);
      })
    );
  }

  private connect(spec: ServerSpec): Promise<Connection> {
    if (this.closing)
      return Promise.reject(new McpServerUnavailable(spec.name, 'the MCP client pool is shutting down'));
    const existing = this.connections.get(spec.key);
    if (existing) return existing;
    const pending = this.open(spec).catch((err: unknown) => {
      this.connections.delete(spec.key);
      throw err;
    });
    this.connections.set(spec.key, pending);
    return pending;
  }

  private async open(spec: ServerSpec): Promise<Connection> {
    if (spec.kind === 'stdio') {
      const transport = new GroupStdioTransport({
        command: spec.command,
        args: spec.args,
        env: spec.env,
        cwd: spec.cwd,
        secretFd3: spec.secretFd3,
      });
      try {
        return await this.connectOver(spec, transport);
      } catch (err) {
        const tail = transport.stderrTail ? `; it said: ${transport.stderrTail.split('\n').slice(-5).join(' | ')}` : '';
        const what = `${spec.command} ${spec.args.join(' ')}`.trim();
        throw new McpServerUnavailable(
          spec.name,
          `MCP server "${spec.name}" failed to start (${what}): ${(err as Error).message}${tail}`
        );
      }
    }
    const over = (kind: 'http' | 'sse') => {
      const init = { requestInit: { headers: spec.headers } };
      const url = new URL(spec.url);
      return kind === 'sse' ? new SSEClientTransport(url, init) : new StreamableHTTPClientTransport(url, init);
    };
    const unreachable = (failures: string[]) =>
      new McpServerUnavailable(
        spec.name,
        `MCP server "${spec.name}" could not be reached at ${shownUrl(spec.url)}: ${failures.join('; ')}`
      );
    const first = spec.kind === 'sse' ? 'sse' : 'http';
    try {
      return await this.connectOver(spec, over(first));
    } catch (err) {
      const failure = `${first === 'sse' ? 'HTTP+SSE' : 'streamable HTTP'}: ${reason(err)}`;
      // The MCP spec's rule for a client that does not know which transport a URL speaks: a 4xx to the
      // streamable HTTP POST means an older server, which takes a GET for an SSE stream instead.
      const status = err instanceof StreamableHTTPError ? (err.code ?? 0) : 0;
      const olderServer = status >= 400 && status < 500;
      if (spec.kind !== 'http' || !spec.sseFallback || !olderServer) throw unreachable([failure]);
      this.log.debug('MCP server refused streamable HTTP; trying HTTP+SSE', { server: spec.name, status });
      try {
        return await this.connectOver(spec, over('sse'));
      } catch (sseErr) {
        throw unreachable([failure, `HTTP+SSE: ${reason(sseErr)}`]);
      }
    }
  }

  /** Connects a client over the transport; on failure the transport is closed and the error thrown as it is. */
  private async connectOver(spec: ServerSpec, transport: Transport): Promise<Connection> {
    const client = new Client({ name: 'klea', version: '0.1.0' }, { capabilities: {} });
    const conn: Connection = { spec, client, transport, alive: true };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      conn.tools = undefined;
    });
    client.onclose = () => {
      if (!conn.alive) return;
      conn.alive = false;
      // Forget the dead connection, so the next call starts the server again.
      void this.connections.get(spec.key)?.then(
        (c) => {
          if (c === conn) this.connections.delete(spec.key);
        },
        () => undefined
      );
      if (!this.closing) this.log.warn('MCP server connection closed', { server: spec.name });
    };
    try {
      await client.connect(transport, { timeout: Math.min(spec.timeoutMs, 30_000) });
    } catch (err) {
      conn.alive = false;
      await transport.close().catch(() => undefined);
      throw err;
    }
    this.log.debug('MCP server connected', {
      server: spec.name,
      transport: transport.constructor.name,
      pid: transport instanceof GroupStdioTransport ? transport.pid : undefined,
    });
    return conn;
  }
}

function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return err instanceof StreamableHTTPError && err.code !== undefined && err.code > 0
    ? `HTTP ${err.code}, ${message}`
    : message;
}

/** A URL fit for error messages, which end up in workflow history. */
function shownUrl(url: string): string {
  // Security: query strings and user info often carry API keys (`?api_key=...`).
  const u = new URL(url);
  return `${u.origin}${u.pathname}${u.search ? '?…' : ''}`;
}
