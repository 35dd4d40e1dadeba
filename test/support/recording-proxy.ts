/**
 * A loopback HTTP proxy in front of a model server that keeps every chat-completions exchange (request body,
 * status, response body, time taken), so a test can check what a real server answered to each request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  node: string | null;
  request: Record<string, unknown>;
  status: number;
  response: Record<string, unknown> | null;
  /** The response as it came, when it was not JSON. */
  raw: string;
  ms: number;
}

export class RecordingProxy {
  readonly exchanges: Exchange[] = [];
  /** Requests sent on and not answered yet. */
  inFlight = 0;
  private server!: http.Server;
  url = '';

  private constructor(private readonly target: string) {}

  /** `target` is the server's base URL (…/v1); the proxy's `url` stands in for it. */
  static async start(target: string): Promise<RecordingProxy> {
    const proxy = new RecordingProxy(target.replace(/\/$/, ''));
    proxy.server = http.createServer((req, res) => void proxy.forward(req, res));
    await new Promise<void>((r) => proxy.server.listen(0, '127.0.0.1', r));
    proxy.url = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}/v1`;
    return proxy;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const started = Date.now();
    this.inFlight++;
    try {
      const upstream = await fetch(`${this.target}${(req.url ?? '').replace(/^\/v1/, '')}`, {
        method: req.method,
        headers: { 'content-type': 'application/json' },
        body: req.method === 'POST' ? body : undefined,
      });
      const text = await upstream.text();
      if (req.url?.endsWith('/chat/completions')) {
        const request = JSON.parse(body) as Record<string, unknown>;
        const messages = (request.messages ?? []) as Array<{ role: string; content: unknown }>;
        const system = messages.find((m) => m.role === 'system');
        let response: Record<string, unknown> | null = null;
        try {
          response = JSON.parse(text) as Record<string, unknown>;
        } catch {
          /* kept raw */
        }
        this.exchanges.push({
          node: /^# klea:([a-z_]+)/.exec(typeof system?.content === 'string' ? system.content : '')?.[1] ?? null,
          request,
          status: upstream.status,
          response,
          raw: text,
          ms: Date.now() - started,
        });
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `recording proxy: ${String(err)}` } }));
    } finally {
      this.inFlight--;
    }
  }
}
