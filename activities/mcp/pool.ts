/**
 * One MCP client per server per worker process: connected on first use, reused, reconnected after its server
 * dies. `listTools` is cached and refreshed when the server says its list changed. `shutdown` ends every
 * stdio server's whole process group.
 *
 * Tool failures (`isError`) come back as data; transport failures (the server died, timed out, cannot start)
 * throw, so the activity that called fails and Temporal retries it as the tool's retry policy allows.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../runtime/log';
import { GroupStdioTransport } from './group-stdio-transport';
import type { ServerSpec } from './servers';

export class McpServerUnavailable extends Error {
  constructor(
    readonly server: string,
    message: string
  ) {
    super(message);
    this.name = 'McpServerUnavailable';
  }
}

interface Connection {
  spec: ServerSpec;
  client: Client;
  transport: GroupStdioTransport | StreamableHTTPClientTransport;
  tools?: Promise<Tool[]>;
  alive: boolean;
}

export interface CallOptions {
  timeoutMs?: number;
  meta?: Record<string, unknown>;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  signal?: AbortSignal;
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
    const conn = await this.connect(spec);
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
  }

  async callTool(
    spec: ServerSpec,
    name: string,
    args: Record<string, unknown>,
    opts: CallOptions = {}
  ): Promise<CallToolResult> {
    const conn = await this.connect(spec);
    const timeout = opts.timeoutMs ?? spec.timeoutMs;
    const result = await conn.client.callTool(
      { name, arguments: args, ...(opts.meta ? { _meta: opts.meta } : {}) },
      CallToolResultSchema,
      {
        timeout,
        // Progress notifications keep a long call alive, up to four times its timeout in all.
        resetTimeoutOnProgress: true,
        maxTotalTimeout: timeout * 4,
        onprogress: opts.onProgress,
        signal: opts.signal,
      }
    );
    return result as CallToolResult;
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
    const client = new Client({ name: 'klea', version: '0.1.0' }, { capabilities: {} });
    const transport =
      spec.kind === 'stdio'
        ? new GroupStdioTransport({ command: spec.command, args: spec.args, env: spec.env, cwd: spec.cwd })
        : new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } });
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
      const tail =
        transport instanceof GroupStdioTransport && transport.stderrTail
          ? `; it said: ${transport.stderrTail.split('\n').slice(-5).join(' | ')}`
          : '';
      const what = spec.kind === 'stdio' ? `${spec.command} ${spec.args.join(' ')}`.trim() : spec.url;
      throw new McpServerUnavailable(
        spec.name,
        `MCP server "${spec.name}" failed to start (${what}): ${(err as Error).message}${tail}`
      );
    }
    this.log.debug('MCP server connected', {
      server: spec.name,
      pid: transport instanceof GroupStdioTransport ? transport.pid : undefined,
    });
    return conn;
  }
}
