/**
 * A real Temporal cluster on this machine, for `make cluster` and the cluster tests: PostgreSQL (Debian's package,
 * its own database cluster in Klea's data directory, unprivileged, loopback only) holding Temporal's history and its
 * SQL visibility, and the Temporal server's four services (frontend, history, matching, worker) each as a process
 * of its own, configured by deploy/temporal-server.yaml and deploy/temporal-dynamicconfig.yaml, the files
 * docker-compose.yml runs. The server's binaries come from scripts/install-temporal-server.sh (built once per
 * machine, cached outside the clone). Registers the namespace (with its retention) and Klea's search attributes.
 * Its ports are in cluster-ports.ts, PostgreSQL's programs in cluster-postgres.ts, and its Web UI in cluster-ui.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freeClusterPorts, TEMPORAL_SERVICES, type ClusterPorts, type TemporalService } from './cluster-ports';
import { postgresBinDir, unprivileged } from './cluster-postgres';
import { ensureSearchAttributes } from './temporal';
import { portProblem } from './ports';
import { REPO_ROOT } from './repo-root';
import { stopProcessGroup } from './supervisor';

export interface ClusterOptions {
  /** The cached server build (scripts/install-temporal-server.sh prints it): bin/, schema/. */
  serverDir: string;
  /** Where PostgreSQL's files and the cluster's password live (`cluster/` in Klea's data directory). */
  dataDir: string;
  /** deploy/temporal-server.yaml and deploy/temporal-dynamicconfig.yaml. */
  configFile: string;
  dynamicConfigFile: string;
  ports: ClusterPorts;
  namespace: string;
  retentionDays: number;
  logLevel?: string;
  /**
   * The address the services listen on and reach each other by (default 127.0.0.1): a test whose worker hosts are
   * network namespaces of their own gives the address of the bridge it made between them.
   */
  bindIp?: string;
  /** Each process's output, by name (`postgres`, `frontend`, …). */
  onOutput?: (name: string, chunk: string) => void;
  say?: (msg: string) => void;
}

export interface TemporalCluster {
  address: string;
  /** Every process of the cluster, by name: postgres and the four services. */
  processes: ReadonlyMap<string, ChildProcess>;
  /** Called once when any of them exits while the cluster is not being stopped. */
  onExit(listener: (name: string, code: number | null, signal: NodeJS.Signals | null) => void): void;
  /** Stops the services, then PostgreSQL; resolves when all have exited. */
  stop(): Promise<void>;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, what: string): string {
  const res = spawnSync(file, args, { env, encoding: 'utf8' });
  if (res.status !== 0)
    throw new Error(
      `${what} failed (${res.error?.message ?? `exit ${res.status}`}): ${(res.stderr || res.stdout).trim()}`
    );
  return res.stdout;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A failure no retry can mend (a process of the cluster exited): `until` gives up at once. */
class Fatal extends Error {}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof Fatal) throw new Error(`${what} did not happen: ${err.message}`);
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen within ${timeoutMs / 1000} s${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

export async function startCluster(opts: ClusterOptions): Promise<TemporalCluster> {
  const say = opts.say ?? (() => undefined);
  const bindIp = opts.bindIp ?? '127.0.0.1';
  const { ports } = opts;
  const pgBin = postgresBinDir();
  const pgData = path.join(opts.dataDir, 'postgres');
  const pwFile = path.join(opts.dataDir, 'postgres.password');
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  if (!existsSync(pwFile)) writeFileSync(pwFile, randomBytes(18).toString('base64url') + '\n', { mode: 0o600 });
  chmodSync(pwFile, 0o600);
  const password = readFileSync(pwFile, 'utf8').trim();

  const processes = new Map<string, ChildProcess>();
  type Listener = (name: string, code: number | null, signal: NodeJS.Signals | null) => void;
  const listeners: Listener[] = [];
  /** Processes that exited while the cluster was not being stopped (told to every listener, late ones too). */
  const exited: Array<[string, number | null, NodeJS.Signals | null]> = [];
  let stopping = false;
  const track = (name: string, proc: ChildProcess) => {
    processes.set(name, proc);
    const out = (chunk: Buffer) => opts.onOutput?.(name, chunk.toString());
    proc.stdout?.on('data', out);
    proc.stderr?.on('data', out);
    proc.once('exit', (code, signal) => {
      if (stopping) return;
      exited.push([name, code, signal]);
      for (const l of listeners) l(name, code, signal);
    });
  };

  async function stop(): Promise<void> {
    stopping = true;
    // The services first (each drains its own work), then the database they write to.
    await Promise.all(
      TEMPORAL_SERVICES.map((s) => processes.get(s)).map((p) => (p ? stopProcessGroup(p, 15_000) : undefined))
    );
    const pg = processes.get('postgres');
    if (pg && pg.exitCode === null && pg.signalCode === null) {
      // SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for every client to leave).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => pg.kill('SIGKILL'), 20_000);
        pg.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        pg.kill('SIGINT');
      });
    }
  }

  try {
    // 1. PostgreSQL: a database cluster of Klea's own, made once; password logins over loopback TCP only.
    if (!existsSync(path.join(pgData, 'PG_VERSION'))) {
      say(`creating a PostgreSQL database cluster in ${pgData}`);
      mkdirSync(pgData, { recursive: true, mode: 0o700 });
      const init = unprivileged(path.join(pgBin, 'initdb'), [
        '-D',
        pgData,
        '-U',
        'temporal',
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '-E',
        'UTF8',
        '--locale=C',
      ]);
      run(init.file, init.args, process.env, 'initdb');
    }
    const pg = unprivileged(path.join(pgBin, 'postgres'), [
      '-D',
      pgData,
      '-p',
      String(ports.postgres),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=300',
    ]);
    say(`starting PostgreSQL on 127.0.0.1:${ports.postgres}`);
    track('postgres', spawn(pg.file, pg.args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    const pgEnv = { ...process.env, PGPASSWORD: password };
    await until('PostgreSQL accepting connections', 60_000, async () => {
      if (processes.get('postgres')!.exitCode !== null) throw new Fatal('PostgreSQL exited');
      const r = spawnSync(
        path.join(pgBin, 'psql'),
        ['-h', '127.0.0.1', '-p', String(ports.postgres), '-U', 'temporal', '-d', 'postgres', '-Atqc', 'select 1'],
        { env: pgEnv }
      );
      return r.status === 0 ? true : undefined;
    });

    // 2. Temporal's databases and schemas, with its own tool: made once, brought up to date at every start.
    const sqlTool = path.join(opts.serverDir, 'bin', 'temporal-sql-tool');
    const sqlEnv = {
      ...process.env,
      SQL_HOST: '127.0.0.1',
      SQL_PORT: String(ports.postgres),
      SQL_USER: 'temporal',
      SQL_PASSWORD: password,
    };
    for (const [db, schema] of [
      ['temporal', 'temporal'],
      ['temporal_visibility', 'visibility'],
    ] as const) {
      const base = ['--plugin', 'postgres12', '--database', db];
      const made = path.join(opts.dataDir, `schema-${db}.done`);
      if (!existsSync(made)) {
        say(`creating Temporal's database ${db}`);
        run(sqlTool, [...base, 'create-database', '--defaultdb', 'postgres'], sqlEnv, `create-database ${db}`);
        run(sqlTool, [...base, 'setup-schema', '-v', '0.0'], sqlEnv, `setup-schema ${db}`);
        writeFileSync(made, new Date().toISOString() + '\n');
      }
      const dir = path.join(opts.serverDir, 'schema', 'postgresql', 'v12', schema, 'versioned');
      run(sqlTool, [...base, 'update-schema', '-d', dir], sqlEnv, `update-schema ${db}`);
    }

    // 3. The four services, each a process of its own, from the one configuration file.
    const serverEnv: NodeJS.ProcessEnv = {
      ...process.env,
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(ports.postgres),
      POSTGRES_USER: 'temporal',
      POSTGRES_PWD: password,
      BIND_ON_IP: bindIp,
      TEMPORAL_BROADCAST_ADDRESS: bindIp,
      FRONTEND_GRPC_PORT: String(ports.frontend),
      FRONTEND_HTTP_PORT: String(ports.frontendHttp),
      HISTORY_GRPC_PORT: String(ports.history),
      MATCHING_GRPC_PORT: String(ports.matching),
      WORKER_GRPC_PORT: String(ports.worker),
      FRONTEND_MEMBERSHIP_PORT: String(ports.membership.frontend),
      HISTORY_MEMBERSHIP_PORT: String(ports.membership.history),
      MATCHING_MEMBERSHIP_PORT: String(ports.membership.matching),
      WORKER_MEMBERSHIP_PORT: String(ports.membership.worker),
      DYNAMIC_CONFIG_FILE_PATH: opts.dynamicConfigFile,
      LOG_LEVEL: opts.logLevel ?? 'warn',
    };
    const server = path.join(opts.serverDir, 'bin', 'temporal-server');
    const startService = (service: TemporalService) => {
      say(`starting the Temporal ${service} service`);
      track(
        service,
        spawn(server, ['--config-file', opts.configFile, '--allow-no-auth', 'start', '--service', service], {
          env: serverEnv,
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        })
      );
    };
    const anyExited = () => {
      for (const [name, p] of processes) if (p.exitCode !== null || p.signalCode !== null) return name;
      return undefined;
    };
    // The first service writes the cluster's metadata and its system namespace; services started together race to
    // (one loses on a duplicate key and exits). So history first, the others once it listens.
    const [first, ...rest] = TEMPORAL_SERVICES;
    startService(first);
    await until(`the Temporal ${first} service listening`, 120_000, async () => {
      const gone = anyExited();
      if (gone) throw new Fatal(`the ${gone} process exited`);
      // Its membership port opens as it starts, after the metadata and the system namespace are written.
      const listening = await Promise.all(
        [ports[first], ports.membership[first]].map(async (p) => (await portProblem(p, bindIp)) === 'EADDRINUSE')
      );
      return listening.every(Boolean) ? true : undefined;
    });
    for (const service of rest) startService(service);

    // 4. The namespace (with its retention) and Klea's search attributes, once the frontend answers.
    const address = `${bindIp}:${ports.frontend}`;
    const connection = await until('the Temporal frontend answering', 120_000, async () => {
      const gone = anyExited();
      if (gone) throw new Fatal(`the ${gone} process exited`);
      return Connection.connect({ address, connectTimeout: 2000 });
    });
    // protobufjs takes a number where its types say Long.
    const retention = (opts.retentionDays * 86_400) as never;
    try {
      await until(`namespace ${opts.namespace} registered`, 120_000, async () => {
        try {
          await connection.workflowService.registerNamespace({
            namespace: opts.namespace,
            workflowExecutionRetentionPeriod: { seconds: retention },
          });
        } catch (err) {
          if (!/already exists/i.test(String(err))) throw err;
          await connection.workflowService.updateNamespace({
            namespace: opts.namespace,
            config: { workflowExecutionRetentionTtl: { seconds: retention } },
          });
        }
        return true;
      });
      const added = await until('search attributes registered', 120_000, () =>
        ensureSearchAttributes(connection, opts.namespace)
      );
      if (added.length) say(`registered search attributes ${added.join(', ')}`);
      // A new namespace reaches every service's cache within seconds: ready once a describe of it succeeds.
      await until(`namespace ${opts.namespace} usable`, 60_000, async () => {
        await connection.workflowService.listWorkflowExecutions({ namespace: opts.namespace, pageSize: 1 });
        return true;
      });
    } finally {
      await connection.close();
    }
    const gone = anyExited();
    if (gone) throw new Error(`the ${gone} process exited while the cluster started`);
    return {
      address,
      processes,
      onExit: (l) => {
        listeners.push(l);
        for (const [name, code, signal] of exited) l(name, code, signal);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * A cluster for one run (the cluster tests, the benchmark): the deploy/ configuration, free ports, a fresh database
 * in `dataDir`, quiet. Its output is kept (`output`), and its last lines are written to stderr when it will not start.
 */
export async function startScratchCluster(
  serverDir: string,
  dataDir: string,
  opts: Pick<ClusterOptions, 'bindIp'> = {}
): Promise<{ cluster: TemporalCluster; output: string[] }> {
  const output: string[] = [];
  const cluster = await startCluster({
    serverDir,
    dataDir,
    configFile: path.join(REPO_ROOT, 'deploy', 'temporal-server.yaml'),
    dynamicConfigFile: path.join(REPO_ROOT, 'deploy', 'temporal-dynamicconfig.yaml'),
    ports: await freeClusterPorts(),
    namespace: 'default',
    retentionDays: 1,
    logLevel: 'error',
    ...opts,
    onOutput: (name, chunk) => output.push(`${name}: ${chunk}`),
  }).catch((err: unknown) => {
    process.stderr.write(output.slice(-40).join(''));
    throw err;
  });
  return { cluster, output };
}
