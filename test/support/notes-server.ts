/**
 * A real remote MCP server for tests: the SDK's `McpServer` on node:http, on a free loopback port, speaking
 * streamable HTTP with sessions (as hosted servers do) and/or the older HTTP+SSE transport. Its tools keep notes
 * in memory: `search_notes` (annotated read-only) and `add_note` (no annotations, so a client must take it as a
 * writing tool). It can demand a bearer token, and can forget its sessions the way a restarted server does.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';

export interface Note {
  title: string;
  text: string;
}

export interface NotesServer {
  /** `http://127.0.0.1:<port>`: streamable HTTP is served at `/mcp`, HTTP+SSE at `/sse`. */
  origin: string;
  notes: Note[];
  /** The transport of each request that reached a session, with its Authorization header. */
  requests: Array<{ transport: 'streamable-http' | 'sse'; authorization?: string }>;
  /** Forgets every session, as a server does when it restarts or expires them; later requests in them get 404. */
  forgetSessions(): void;
  close(): Promise<void>;
}

function notesMcp(notes: Note[]): McpServer {
  const server = new McpServer({ name: 'notes', version: '1.0.0' });
  server.registerTool(
    'search_notes',
    {
      description: 'Find notes whose title or text contains the query.',
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true },
    },
    ({ query }) => {
      const hits = notes.filter((n) => `${n.title}\n${n.text}`.toLowerCase().includes(query.toLowerCase()));
      return {
        content: [
          { type: 'text', text: hits.length ? hits.map((n) => `${n.title}: ${n.text}`).join('\n') : 'no notes match' },
        ],
      };
    }
  );
  server.registerTool(
    'add_note',
    { description: 'Add a note.', inputSchema: { title: z.string(), text: z.string() } },
    ({ title, text }) => {
      notes.push({ title, text });
      return { content: [{ type: 'text', text: `added note "${title}" (${notes.length} in all)` }] };
    }
  );
  return server;
}

export async function startNotesServer(
  opts: { speaks?: Array<'streamable-http' | 'sse'>; token?: string; notes?: Note[] } = {}
): Promise<NotesServer> {
  const speaks = opts.speaks ?? ['streamable-http'];
  const notes = [...(opts.notes ?? [])];
  const requests: NotesServer['requests'] = [];
  const sessions = new Map<string, { transport: Transport; server: McpServer }>();

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const reply = (status: number, message: string) =>
      res.writeHead(status, { 'content-type': 'text/plain' }).end(message);
    if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`)
      return reply(401, 'a bearer token is needed');

    if (url.pathname === '/mcp' && speaks.includes('streamable-http')) {
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const session = sessions.get(id);
        // The streamable HTTP spec: an unknown session is a 404, and the client starts a new one.
        if (!session) return reply(404, 'no such session');
        requests.push({ transport: 'streamable-http', authorization: req.headers.authorization });
        return (session.transport as StreamableHTTPServerTransport).handleRequest(req, res);
      }
      const server = notesMcp(notes);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, { transport, server }),
      });
      await server.connect(transport);
      requests.push({ transport: 'streamable-http', authorization: req.headers.authorization });
      return transport.handleRequest(req, res);
    }

    if (url.pathname === '/sse' && req.method === 'GET' && speaks.includes('sse')) {
      const server = notesMcp(notes);
      const transport = new SSEServerTransport('/messages', res);
      sessions.set(transport.sessionId, { transport, server });
      requests.push({ transport: 'sse', authorization: req.headers.authorization });
      return server.connect(transport);
    }
    if (url.pathname === '/messages' && req.method === 'POST' && speaks.includes('sse')) {
      const session = sessions.get(url.searchParams.get('sessionId') ?? '');
      if (!session) return reply(404, 'no such session');
      requests.push({ transport: 'sse', authorization: req.headers.authorization });
      return (session.transport as SSEServerTransport).handlePostMessage(req, res);
    }
    return reply(404, `nothing at ${req.method} ${url.pathname}`);
  };

  const httpServer = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const forgotten: McpServer[] = [];
  const forgetSessions = () => {
    forgotten.push(...[...sessions.values()].map((s) => s.server));
    sessions.clear();
  };
  return {
    origin: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`,
    notes,
    requests,
    forgetSessions,
    async close() {
      forgetSessions();
      await Promise.all(forgotten.map((s) => s.close().catch(() => undefined)));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
