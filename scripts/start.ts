/**
 * `make start`: the whole service on one machine. Starts the Temporal dev server (SQLite in the data directory's
 * temporal.db, or KLEA_TEMPORAL_DB; Web UI; in a network namespace of its own, runtime/temporal-isolation.ts), then
 * the worker and the API; prints the URLs and streams every process's
 * log with its name. `--project <dir>` (`make start PROJECT=<dir>`) is the project to work on, as KLEA_PROJECT_DIR.
 * A worker or API that dies is started again (runtime/supervisor.ts); one that keeps dying right after it starts
 * stops everything. Ctrl-C or SIGTERM stops everything it started, in order, leaving nothing behind.
 *
 * `--cluster` (`make cluster`): a real Temporal cluster instead of the dev server (runtime/cluster.ts: PostgreSQL and
 * the server's four services as processes of their own, `--server-dir` the cached server build), and one worker
 * per host (KLEA_CLUSTER_HOSTS, default 2: h1, h2), each with its own data directory (`hosts/<id>` in Klea's),
 * standing for a machine of its own; the same supervision, logs and Ctrl-C. KLEA_CLUSTER_GROUP=<id>: the hosts form
 * that group instead, sharing their projects and the group's directory (`groups/<id>` in Klea's data directory).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { loadConfigOrExit } from '../runtime/config';
import { dataDir, temporalDbFile } from '../runtime/data-dir';
import { startDevServer, type DevServer } from '../runtime/dev-server';
import { portProblem } from '../runtime/ports';
import { probeSandbox } from '../runtime/sandbox-probe';
import { isolateTemporal, type IsolatedTemporal } from '../runtime/temporal-isolation';
import { projectFlag, ProjectArgError, resolveProjectArg } from '../runtime/project-arg';
import { Supervisor } from '../runtime/supervisor';
import { startCluster, type TemporalCluster } from '../runtime/cluster';
import { clusterPortList, defaultClusterPorts } from '../runtime/cluster-ports';
import { temporalUiCommand } from '../runtime/cluster-ui';
import { REPO_ROOT } from '../runtime/temporal';
import { GroupIdSchema } from '../common/home';

const COLORS: Record<string, string> = { temporal: '\x1b[35m', worker: '\x1b[36m', api: '\x1b[32m', klea: '\x1b[1m' };
const useColor = process.stdout.isTTY;
const color = (name: string) =>
  COLORS[name] ?? COLORS[name.split('-')[0]!] ?? (name === 'postgres' ? '' : COLORS.temporal);
const tag = (name: string) => (useColor ? `${color(name)}${name.padEnd(9)}\x1b[0m` : name.padEnd(9));
const say = (msg: string) => process.stdout.write(`${tag('klea')} ${msg}\n`);
const sayError = (msg: string) => process.stderr.write(`${tag('klea')} ${msg}\n`);

function lineWriter(name: string, stream: NodeJS.WriteStream) {
  let pending = '';
  return (chunk: Buffer | string) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) stream.write(`${tag(name)} ${line}\n`);
  };
}

/** How long `make start`'s Temporal keeps closed tasks and sleeping sessions: KLEA_RETENTION_DAYS, else 30 days. */
function retentionDays(): number {
  const raw = process.env.KLEA_RETENTION_DAYS;
  const days = raw === undefined || raw === '' ? 30 : Number(raw);
  if (!Number.isInteger(days) || days < 1) {
    sayError(`KLEA_RETENTION_DAYS=${raw}: give a whole number of days, 1 or more`);
    process.exit(1);
  }
  return days;
}

function hostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

const isLocal = (host: string) => ['127.0.0.1', 'localhost', '::1', '0.0.0.0'].includes(host);

/**
 * `--cluster`, `--server-dir <dir>` and `--ui-dir <dir>` (make cluster): the cluster's mode, its cached server build
 * and its cached Web UI server build (none: no UI).
 */
function clusterFlags(argv: string[]): { cluster: boolean; serverDir?: string; uiDir?: string } {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 && argv[i + 1] && !argv[i + 1]!.startsWith('--') ? argv[i + 1] : undefined;
  };
  return { cluster: argv.includes('--cluster'), serverDir: value('--server-dir'), uiDir: value('--ui-dir') };
}

/** The worker hosts `make cluster` starts: KLEA_CLUSTER_HOSTS (a count, default 2) named h1, h2, … */
function clusterHosts(): string[] {
  const raw = process.env.KLEA_CLUSTER_HOSTS;
  const n = raw === undefined || raw === '' ? 2 : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 16) {
    sayError(`KLEA_CLUSTER_HOSTS=${raw}: give a number of worker hosts from 1 to 16`);
    process.exit(1);
  }
  return Array.from({ length: n }, (_, i) => `h${i + 1}`);
}

/** KLEA_CLUSTER_GROUP: the group `make cluster`'s hosts form (they share their projects), or null. */
function clusterGroup(): string | null {
  const raw = process.env.KLEA_CLUSTER_GROUP;
  if (raw === undefined || raw === '') return null;
  const parsed = GroupIdSchema.safeParse(raw);
  if (!parsed.success) {
    sayError(`KLEA_CLUSTER_GROUP=${raw}: ${parsed.error.issues[0]!.message}`);
    process.exit(1);
  }
  return parsed.data;
}

async function main() {
  const { cluster: asCluster, serverDir, uiDir } = clusterFlags(process.argv.slice(2));
  if (asCluster && !serverDir) {
    sayError('--cluster needs --server-dir <the cached Temporal server build> (make cluster passes it)');
    process.exit(1);
  }
  const project = projectFlag(process.argv.slice(2));
  if (project !== undefined) {
    try {
      // Before the config is read, so the file's project.dir gives way to it, and the worker and API inherit it.
      process.env.KLEA_PROJECT_DIR = resolveProjectArg(project);
    } catch (err) {
      if (!(err instanceof ProjectArgError)) throw err;
      process.stderr.write(`klea: ${err.message}\n`);
      process.exit(1);
    }
  }
  const { config, file } = loadConfigOrExit('klea');
  const temporalAddr = hostPort(config.temporal.address);
  const startTemporal = isLocal(temporalAddr.host) && process.env.KLEA_EXTERNAL_TEMPORAL !== '1';
  const ui = new URL(config.temporal.ui_url);
  const uiPort = Number(ui.port || 80);
  const apiUrl = `http://${config.api.host === '0.0.0.0' ? '127.0.0.1' : config.api.host}:${config.api.port}`;
  // With encrypted payloads the Web UI shows them through the API's codec server (the browser calls it).
  const codecEndpoint = config.temporal.payload_key ? `${apiUrl}/codec` : undefined;

  const needed: Array<[number, string, string]> = [[config.api.port, config.api.host, 'Klea API (KLEA_API_PORT)']];
  const clusterPorts = defaultClusterPorts(temporalAddr.port);
  if (asCluster) {
    if (!isLocal(temporalAddr.host)) {
      sayError(`make cluster runs its own Temporal cluster: TEMPORAL_ADDRESS=${config.temporal.address} is not local`);
      process.exit(1);
    }
    say(`Temporal keeps closed tasks and sleeping sessions for ${retentionDays()} days (KLEA_RETENTION_DAYS)`);
    for (const [port, what] of clusterPortList(clusterPorts)) needed.push([port, '127.0.0.1', what]);
    if (uiDir) needed.push([uiPort, '127.0.0.1', 'Temporal Web UI (temporal.ui_url)']);
  } else if (startTemporal) {
    say(`Temporal keeps closed tasks and sleeping sessions for ${retentionDays()} days (KLEA_RETENTION_DAYS)`);
    needed.push(
      [temporalAddr.port, '127.0.0.1', 'Temporal server (TEMPORAL_ADDRESS)'],
      [uiPort, '127.0.0.1', 'Temporal Web UI (temporal.ui_url)']
    );
  }
  for (const [port, host, what] of needed) {
    const problem = await portProblem(port, host);
    if (problem) {
      const why =
        problem === 'EADDRINUSE' ? 'is already in use (is Klea already running?)' : `cannot be used (${problem})`;
      process.stderr.write(
        `klea: port ${port} on ${host} for the ${what} ${why}. Stop what uses it or choose another port.\n`
      );
      process.exit(1);
    }
  }

  say(`configuration: ${file ?? 'defaults (no klea.yaml)'}`);
  say(`project:       ${config.project.dir}`);
  const data = dataDir();
  mkdirSync(data, { recursive: true });
  say(`Klea's data:   ${data} (KLEA_DATA_DIR)`);
  const children: Supervisor[] = [];
  let devServer: DevServer | undefined;
  let cluster: TemporalCluster | undefined;
  let isolated: IsolatedTemporal | undefined;
  let stopping = false;

  async function stopAll(code: number): Promise<never> {
    if (stopping) return new Promise<never>(() => {});
    stopping = true;
    say('stopping…');
    // The API and the worker first (the worker drains in-flight activities), then the server they talk to.
    await Promise.all(children.map((child) => child.stop(15_000)));
    await devServer?.stop();
    await cluster?.stop();
    await isolated?.close();
    say('stopped');
    process.exit(code);
  }
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  process.on('SIGHUP', () => void stopAll(0));
  // Under make, a SIGTERM to make may not reach us; noticing that our parent is gone covers that case.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stopAll(0);
  }, 500).unref();

  if (asCluster) {
    try {
      cluster = await startCluster({
        serverDir: serverDir!,
        dataDir: path.join(data, 'cluster'),
        configFile: path.join(REPO_ROOT, 'deploy', 'temporal-server.yaml'),
        dynamicConfigFile: path.join(REPO_ROOT, 'deploy', 'temporal-dynamicconfig.yaml'),
        ports: clusterPorts,
        namespace: config.temporal.namespace,
        retentionDays: retentionDays(),
        logLevel: process.env.KLEA_TEMPORAL_LOG_LEVEL ?? 'warn',
        onOutput: (name, chunk) => lineWriter(name, process.stdout)(chunk),
        say,
      });
    } catch (err) {
      process.stderr.write(`klea: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
    cluster.onExit((name, code, signal) => {
      if (!stopping) {
        say(`the cluster's ${name} process exited (${signal ?? `code ${code}`})`);
        void stopAll(1);
      }
    });
  } else if (startTemporal) {
    // A separate database for a second stack on one machine (or a test) that must not share the usual one.
    const dbFile = temporalDbFile();
    mkdirSync(path.dirname(dbFile), { recursive: true });
    say(`starting the Temporal dev server (data in ${dbFile})`);
    // Security: in a network namespace of its own, so of its ports only gRPC and the Web UI (behind a front that
    // checks Host) are on the host; where bubblewrap cannot run, as it is, and the log says what that leaves open.
    const probe = await probeSandbox(config.tools.sandbox.bwrap_path);
    if (probe.available) {
      isolated = isolateTemporal({
        bwrap: config.tools.sandbox.bwrap_path,
        port: temporalAddr.port,
        uiPort,
        uiUrl: config.temporal.ui_url,
      });
      await isolated.openFronts();
    } else {
      sayError(
        `warning: bubblewrap cannot run here (${probe.reason}), so the Temporal dev server shares this machine's ` +
          `network: its Web UI (port ${uiPort}) and its metrics answer any Host, and a web page that rebinds its name ` +
          'to 127.0.0.1 could reach them. Allow user namespaces to close them (see docs/operating.md)'
      );
    }
    try {
      devServer = await startDevServer({
        port: temporalAddr.port,
        uiPort,
        // Security: no fixed port for the HTTP API (nothing of Klea's uses it), and loopback names only.
        httpAllowedHosts: ['127.0.0.1', 'localhost', '[::1]', '::1'],
        wrap: isolated?.wrap,
        dbFile,
        namespace: config.temporal.namespace,
        logLevel: (process.env.KLEA_TEMPORAL_LOG_LEVEL as 'warn' | 'error' | undefined) ?? 'error',
        detached: true,
        uiCodecEndpoint: codecEndpoint,
        retentionDays: retentionDays(),
        onOutput: lineWriter('temporal', process.stdout),
      });
    } catch (err) {
      process.stderr.write(`klea: ${err instanceof Error ? err.message : String(err)}\n`);
      await isolated?.close();
      process.exit(1);
    }
    devServer.process.once('exit', (code) => {
      if (!stopping) {
        say(`the Temporal server exited (code ${code})`);
        void stopAll(1);
      }
    });
  } else {
    say(`using the Temporal server at ${config.temporal.address}`);
  }

  const env = { ...process.env, KLEA_SUPERVISED: '1', FORCE_COLOR: '0' };
  // On a cluster, each worker stands for a host of its own: its own host id (and task queue) and data directory.
  const hosts = asCluster ? clusterHosts() : [];
  const group = asCluster ? clusterGroup() : null;
  const inGroup = group ? { KLEA_GROUP_ID: group, KLEA_GROUP_DIR: path.join(data, 'groups', group) } : {};
  const processes = asCluster
    ? [
        ...hosts.map((h) => ({
          name: `worker-${h}`,
          main: 'worker',
          args: ['--host-id', h],
          env: { ...env, KLEA_HOST_ID: h, KLEA_DATA_DIR: path.join(data, 'hosts', h), ...inGroup },
        })),
        { name: 'api', main: 'api', env },
      ]
    : [
        { name: 'worker', main: 'worker', env },
        { name: 'api', main: 'api', env },
      ];
  // The cluster's Web UI, supervised as the worker and the API are.
  const uiCommand =
    asCluster && uiDir
      ? temporalUiCommand({
          uiDir,
          configDir: path.join(data, 'cluster', 'ui'),
          temporalAddress: config.temporal.address,
          port: uiPort,
          namespace: config.temporal.namespace,
          codecEndpoint,
        })
      : undefined;
  const commands = [
    ...processes.map((p) => ({
      name: p.name,
      command: process.execPath,
      args: [path.join(REPO_ROOT, 'dist', p.main, 'index.js'), ...('args' in p ? p.args : [])],
      env: p.env,
    })),
    ...(uiCommand ? [{ name: 'ui', command: uiCommand.command, args: uiCommand.args, env }] : []),
  ];
  for (const { name, command, args, env: childEnv } of commands) {
    const child = new Supervisor({
      name,
      command,
      args,
      env: childEnv,
      attachOutput: (proc) => {
        proc.stdout?.on('data', lineWriter(name, process.stdout));
        proc.stderr?.on('data', lineWriter(name, process.stderr));
      },
      say,
      onGiveUp: (msg) => {
        sayError(`${msg}; stopping everything`);
        void stopAll(1);
      },
    });
    children.push(child);
    child.start();
  }

  const ready = await waitForHealth(apiUrl, 60_000);
  say('');
  say(`Klea API        ${apiUrl}   (health: ${apiUrl}/healthz, OpenAPI: ${apiUrl}/openapi.json)`);
  if (asCluster) {
    say(
      `Temporal UI     ${uiCommand ? config.temporal.ui_url : 'none (make cluster builds it: scripts/install-temporal-ui.sh)'}`
    );
    say(
      `Temporal        a cluster: PostgreSQL 127.0.0.1:${clusterPorts.postgres}, frontend, history, matching and worker services`
    );
    say(
      `worker hosts    ${hosts.map((h) => `${h} (task queue klea-host-${h}, data ${path.join(data, 'hosts', h)})`).join(', ')}`
    );
  } else say(`Temporal UI     ${config.temporal.ui_url}`);
  if (codecEndpoint) {
    say(
      `Payloads        encrypted in Temporal (codec endpoint ${codecEndpoint}` +
        (config.api.token
          ? '; it needs the API token, which the Web UI does not send, so the UI shows them encrypted: ' +
            'see docs/security.md)'
          : startTemporal
            ? ", set as the Web UI's)"
            : "; set it as your Temporal UI's codec endpoint)")
    );
  }
  say(
    `Temporal server ${config.temporal.address} (namespace ${config.temporal.namespace}, task queue ${config.temporal.task_queue})`
  );
  say(
    ready ? 'ready. Ctrl-C stops everything.' : 'the API did not report healthy within a minute; see the logs above.'
  );
}

async function waitForHealth(apiUrl: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${apiUrl}/healthz`);
      if (res.ok) return true;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

main().catch((err: unknown) => {
  process.stderr.write(`klea: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
