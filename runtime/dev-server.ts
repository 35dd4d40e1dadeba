/**
 * Starts and stops `temporal server start-dev` (the real Temporal server, SQLite or in-memory, with its Web UI).
 * Used by `make start` (persistent, in a network namespace of its own: runtime/temporal-isolation.ts) and by the
 * test harness (in memory, free ports).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { ensureSearchAttributes, temporalCliPath } from './temporal';

export interface DevServerOptions {
  ip?: string;
  port: number;
  uiPort?: number | null;
  httpPort?: number;
  metricsPort?: number;
  /** SQLite file for persistence; in memory when omitted. */
  dbFile?: string;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Where the server's output goes; ignored when omitted. */
  onOutput?: (chunk: string) => void;
  /** Start in its own process group, so stopping it ends any helper it spawned. */
  detached?: boolean;
  /** Where the Web UI sends payloads to be decoded (Klea's API's /codec, when payloads are encrypted). */
  uiCodecEndpoint?: string;
  /** The only `Host` names Temporal's HTTP API answers (403 for any other); all when omitted. */
  httpAllowedHosts?: readonly string[];
  /** Starts the server through another program (runtime/temporal-isolation.ts: its own network namespace). */
  wrap?: (file: string, args: string[]) => { file: string; args: string[] };
  /** How long the namespace keeps closed runs, in days (the dev server's own default is one day). */
  retentionDays?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(opts.port),
    '--log-level',
    opts.logLevel ?? 'warn',
    '--namespace',
    opts.namespace ?? 'default',
    ...SEARCH_ATTRIBUTES.flatMap(({ name, type }) => ['--search-attribute', `${name}=${type}`]),
    // As deploy/temporal-dynamicconfig.yaml has it for the cluster: the history service reads its transfer queue up
    // to 500 times a second, not 20, so a workflow task that comes through it (a run's first, one after an activity
    // that was not eager) waits a few milliseconds for it, not up to 50.
    '--dynamic-config-value',
    'history.transferProcessorMaxPollRPS=500',
  ];
  if (opts.httpPort) args.push('--http-port', String(opts.httpPort));
  if (opts.metricsPort) args.push('--metrics-port', String(opts.metricsPort));
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort), '--ui-disable-news-fetch');
  else args.push('--headless');
  if (opts.uiPort && opts.uiCodecEndpoint) args.push('--ui-codec-endpoint', opts.uiCodecEndpoint);
  if (opts.httpAllowedHosts)
    args.push('--dynamic-config-value', `frontend.httpAllowedHosts=${JSON.stringify(opts.httpAllowedHosts)}`);

  const launch = opts.wrap ? opts.wrap(temporalCliPath(), args) : { file: temporalCliPath(), args };
  const child = spawn(launch.file, launch.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
  });
  let output = '';
  const collect = (b: Buffer) => {
    const s = b.toString();
    if (output.length < 20_000) output += s;
    opts.onOutput?.(s);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));

  const address = `${ip}:${opts.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const early = await Promise.race([
      exited.then((code) => new Error(`temporal server exited early (code ${code}):\n${output.trim().slice(-2000)}`)),
      spawnFailed.then(
        (err) =>
          new Error(
            `cannot run the Temporal CLI (${temporalCliPath()}): ${err.message}. Run scripts/install-temporal.sh.`
          )
      ),
      new Promise<null>((r) => setTimeout(() => r(null), 250)),
    ]);
    if (early) throw early;
    try {
      const conn = await Connection.connect({ address, connectTimeout: '1s' });
      try {
        await conn.workflowService.describeNamespace({ namespace: opts.namespace ?? 'default' });
        await ensureSearchAttributes(conn, opts.namespace ?? 'default');
        if (opts.retentionDays)
          await conn.workflowService.updateNamespace({
            namespace: opts.namespace ?? 'default',
            // protobufjs takes a number where its types say Long.
            config: { workflowExecutionRetentionTtl: { seconds: (opts.retentionDays * 86_400) as never } },
          });
      } finally {
        await conn.close();
      }
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`temporal server did not become ready on ${address}: ${String(err)}\n${output.slice(-2000)}`);
      }
    }
  }

  return {
    address,
    uiUrl: opts.uiPort ? `http://${ip}:${opts.uiPort}` : null,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const target = opts.detached && child.pid ? -child.pid : child.pid!;
      try {
        process.kill(target, 'SIGTERM');
      } catch {
        return;
      }
      const timer = setTimeout(() => {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }, 10_000);
      await exited;
      // A wrapped server may outlive the program that started it (bubblewrap ends at the signal; the server inside
      // is still writing its database): its process group is gone only when every process in it is.
      // (Bounded: a process whose parent is gone may stay a zombie where nothing reaps orphans.)
      const until = Date.now() + 15_000;
      while (opts.detached && child.pid && Date.now() < until) {
        try {
          process.kill(-child.pid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      clearTimeout(timer);
    },
  };
}
