/**
 * Klea's Prometheus metrics (prom-client). The worker's are one registry per process (`workerMetrics`), served at
 * `worker.metrics_address` by `serveMetrics`; the API makes a registry per app (`apiMetrics`) and serves it at
 * GET /metrics. Nothing here listens or collects until asked: with no address configured there is no server.
 *
 * The Temporal SDK's own worker metrics come from its Core runtime's Prometheus exporter, which binds a listener
 * of its own: the worker points it at a free loopback port (worker/run.ts) and serves its text after Klea's, so
 * one scrape of `worker.metrics_address` gets both.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface WorkerMetrics {
  registry: Registry;
  modelCalls: Counter<'node' | 'model'>;
  modelErrors: Counter<'node' | 'model'>;
  modelTokens: Counter<'node' | 'model' | 'direction'>;
  toolCalls: Counter<'server' | 'tool' | 'outcome'>;
  toolCallSeconds: Histogram<'server' | 'tool'>;
  permissionDecisions: Counter<'decision'>;
  tasksFinished: Counter<'status'>;
  sandboxRefusals: Counter;
}

function makeWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    modelCalls: new Counter({
      name: 'klea_model_calls_total',
      help: 'Model requests the model answered, by node and model',
      labelNames: ['node', 'model'],
      registers,
    }),
    modelErrors: new Counter({
      name: 'klea_model_errors_total',
      help: 'Model requests that failed (refused, unreachable, timed out), by node and model',
      labelNames: ['node', 'model'],
      registers,
    }),
    modelTokens: new Counter({
      name: 'klea_model_tokens_total',
      help: 'Tokens as the model reported them, by node, model and direction (input or output)',
      labelNames: ['node', 'model', 'direction'],
      registers,
    }),
    toolCalls: new Counter({
      name: 'klea_tool_calls_total',
      help: 'MCP tool calls by server, tool and outcome (ok, error: the tool reported an error, refused: by policy, failed: transport)',
      labelNames: ['server', 'tool', 'outcome'],
      registers,
    }),
    toolCallSeconds: new Histogram({
      name: 'klea_tool_call_seconds',
      help: 'Duration of MCP tool calls (the whole activity attempt), by server and tool',
      labelNames: ['server', 'tool'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    permissionDecisions: new Counter({
      name: 'klea_permission_decisions_total',
      help: 'Permission decisions a task took (allow_once, allow_session, deny), counted by the worker running the task',
      labelNames: ['decision'],
      registers,
    }),
    tasksFinished: new Counter({
      name: 'klea_tasks_finished_total',
      help: 'Tasks that reached a final result, by status, counted by the worker running the task when it ends',
      labelNames: ['status'],
      registers,
    }),
    sandboxRefusals: new Counter({
      name: 'klea_sandbox_refusals_total',
      help: 'run_command calls the workspace server refused because the command sandbox could not run',
      registers,
    }),
  };
}

let worker: WorkerMetrics | undefined;
/** The worker process's metrics (made on first use). */
export function workerMetrics(): WorkerMetrics {
  worker ??= makeWorkerMetrics();
  return worker;
}

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  requestSeconds: Histogram<'method' | 'route' | 'status'>;
  openStreams: Gauge;
}

export function apiMetrics(): ApiMetrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: 'klea_api_requests_total',
      help: 'API requests by method, route (the route pattern, e.g. /tasks/:id) and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    requestSeconds: new Histogram({
      name: 'klea_api_request_seconds',
      help: 'API request latency until the response is sent (an event stream: until it ends), by method, route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    openStreams: new Gauge({
      name: 'klea_api_open_event_streams',
      help: 'Server-sent event streams open now',
      registers,
    }),
  };
}

export interface MetricsServer {
  /** host:port it listens on (the port is the real one when 0 was asked for). */
  address: string;
  close(): Promise<void>;
}

/** Splits `host:port` (`[::1]:9464` for IPv6); throws naming the setting when it is not one. */
export function parseHostPort(value: string, setting: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`${setting} must be host:port (e.g. 127.0.0.1:9464), not "${value}"`);
  return { host: m[1] ?? m[2], port };
}

/** A loopback port nothing listens on now (for a listener that cannot report the port it got, like Core's). */
export async function freeLoopbackPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * Another exporter's Prometheus text (the Core runtime's), to serve after Klea's. A scrape still answers when it
 * does not: with a comment saying why, so Klea's own metrics are never lost to the SDK's.
 */
export async function scrapeText(url: string): Promise<string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return `# ${url} answered ${res.status}\n`;
    return await res.text();
  } catch (err) {
    return `# ${url} could not be read: ${err instanceof Error ? err.message : String(err)}\n`;
  }
}

/**
 * Serves a registry as Prometheus text at GET /metrics on `address` (host:port), followed by what `more` returns
 * (the Temporal SDK's metrics).
 */
export async function serveMetrics(
  registry: Registry,
  address: string,
  setting: string,
  more?: () => Promise<string>
): Promise<MetricsServer> {
  const { host, port } = parseHostPort(address, setting);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || (path !== '/metrics' && path !== '/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    Promise.all([registry.metrics(), more ? more() : '']).then(
      ([own, other]) =>
        res.writeHead(200, { 'content-type': registry.contentType }).end(other ? `${own}\n${other}` : own),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err))
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `${setting} ${address} is already in use: stop what uses it or choose another port`
            : `cannot serve metrics on ${address} (${setting}): ${err.message}`
        )
      )
    );
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  return {
    address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
