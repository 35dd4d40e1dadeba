/**
 * Which MCP servers a call can use: the bundled workspace server (rooted at the session's project directory)
 * and the servers of `mcp.servers` (and `mcp.mcpServers`), with their `${...}` variables expanded.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import util from 'node:util';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Config } from '../../common/config';
import { KLEA_CHECKOUT_PROTECTED_PATTERNS } from '../../common/path-patterns';
import { MCP_VARIABLE, parseMcpVariable, type McpServerConfig } from '../../common/mcp-config';
import { HOLD_AFTER_CHANGE_ENV } from '../../common/workspace-protocol';
import { dataDir, dataPath, temporalDbFile } from '../../runtime/data-dir';
import { approvalOf } from '../../runtime/mcp-approvals';
import { resolvePath } from '../../runtime/path-resolve';
import { toolDirEnv } from '../../runtime/tool-dirs';
import { REPO_ROOT } from '../../runtime/temporal';

export const WORKSPACE_SERVER = 'workspace';

interface SpecBase {
  name: string;
  key: string;
  timeoutMs: number;
}

export type ServerSpec =
  | (SpecBase & {
      kind: 'stdio';
      command: string;
      args: string[];
      env: Record<string, string>;
      cwd?: string;
      /** Written to the server's file descriptor 3 at start, then closed: a secret that never sits in its environment. */
      secretFd3?: string;
      /** The variables its configuration sets (env, envFile), expanded: what the user approves (runtime/mcp-approvals). */
      configuredEnv?: Record<string, string>;
    })
  | (SpecBase & {
      kind: 'http';
      url: string;
      headers: Record<string, string>;
      /** An untyped `url` entry: a server that refuses the streamable HTTP POST with a 4xx may speak HTTP+SSE. */
      sseFallback: boolean;
    })
  | (SpecBase & { kind: 'sse'; url: string; headers: Record<string, string> });

export class ServerConfigError extends Error {}

/** A configured server the user has not approved as it is now: its tools are refused, never started. */
export class ServerNotApproved extends ServerConfigError {}

/** What `${workspaceFolder}` and `${userHome}` stand for, beside the environment. */
export interface VariableScope {
  env: NodeJS.ProcessEnv;
  workspaceFolder: string;
  userHome: string;
}

/**
 * Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${workspaceFolder}` and `${userHome}`; a missing variable
 * is an error naming it and the setting.
 */
export function expandVars(value: string, scope: VariableScope, where: string): string {
  return value.replace(MCP_VARIABLE, (_m, body: string) => {
    const v = parseMcpVariable(body);
    if ('unsupported' in v) throw new ServerConfigError(`${where}: ${v.unsupported}`);
    if (v.kind === 'workspaceFolder') return scope.workspaceFolder;
    if (v.kind === 'userHome') return scope.userHome;
    const set = scope.env[v.name];
    if (set !== undefined && set !== '') return set;
    if (v.fallback !== undefined) return v.fallback;
    throw new ServerConfigError(`${where}: the environment variable ${v.name} is not set`);
  });
}

export function workspaceServerScript(): string {
  const script = path.join(REPO_ROOT, 'dist', 'tools', 'workspace', 'server.js');
  if (!existsSync(script))
    throw new ServerConfigError(`the workspace MCP server is not built (${script}): run "npm run build"`);
  return script;
}

/** The pool's key of a project's workspace server. */
export const workspaceKey = (projectDir: string) => `${WORKSPACE_SERVER}\0${projectDir}`;

export function workspaceSpec(config: Config, projectDir: string, grantKey: string): ServerSpec {
  return {
    name: WORKSPACE_SERVER,
    key: workspaceKey(projectDir),
    kind: 'stdio',
    command: process.execPath,
    args: [
      workspaceServerScript(),
      '--grant-key-fd',
      '3',
      '--root',
      projectDir,
      // One flag per pattern: a glob such as *.{pem,key} must reach the server whole.
      ...config.tools.sensitive_patterns.flatMap((p) => ['--sensitive-pattern', p]),
      ...(config.mcp.workspace.call_log ? ['--call-log', path.resolve(config.mcp.workspace.call_log)] : []),
      '--state-dir',
      workspaceStateDir(config),
      // What checkpointed calls change, so a task's changes can be undone (Klea's own state, like the rest).
      '--checkpoint-dir',
      checkpointDir(config),
      '--checkpoint-max-mb',
      String(config.tools.checkpoints.max_mb),
      ...guardFlags(config, projectDir),
      ...sandboxFlags(config),
    ],
    env: {
      ...getDefaultEnvironment(),
      // What a toolchain the sandbox is to show finds itself by (PYENV_ROOT, NVM_DIR).
      ...toolDirEnv(process.env, config.tools.sandbox.tool_dirs, os.homedir()),
      // Crash tests stop the server between a change and its record; unset everywhere else.
      ...(process.env[HOLD_AFTER_CHANGE_ENV] ? { [HOLD_AFTER_CHANGE_ENV]: process.env[HOLD_AFTER_CHANGE_ENV] } : {}),
    },
    cwd: projectDir,
    // Security: the grant key goes through a pipe, so no process can read it from /proc/<pid>/environ.
    secretFd3: grantKey,
    timeoutMs: config.tools.call_timeout_ms,
  };
}

/** Where a project's step checkpoints are, as the rewind reads them (the workspace server writes them there). */
export function checkpointPlace(config: Config, projectDir: string) {
  return {
    storeDir: checkpointDir(config),
    projectDir,
    sensitivePatterns: config.tools.sensitive_patterns,
    ownState: ownStatePaths(config),
  };
}

/**
 * Where the workspace server keeps checkpoints: `checkpoints/` in Klea's data directory, or in the group's directory
 * for a host of a group (its projects' checkpoints are read by whichever host of the group holds them next).
 */
export function checkpointDir(config: Config): string {
  return config.worker.group_dir
    ? path.join(path.resolve(config.worker.group_dir), 'checkpoints')
    : path.join(dataDir(), 'checkpoints');
}

/**
 * The workspace server's call state (what a retried call finds it did): `mcp.workspace.state_dir`, and for a host of
 * a group a relative one is under the group's directory, so a retry that lands on another host of it finds it too.
 */
export function workspaceStateDir(config: Config): string {
  const setting = config.mcp.workspace.state_dir;
  return config.worker.group_dir && !path.isAbsolute(setting)
    ? path.join(path.resolve(config.worker.group_dir), setting)
    : dataPath(setting);
}

/**
 * Klea's own state, as real paths: its data directory, the results, workspace state (which may lie elsewhere) and
 * checkpoints, the call log, Temporal's database under `make start`, and the `.klea/` of Klea's own checkout. No tool may touch
 * them, wherever they lie (a project may hold them, as Klea's own checkout holds `.klea/`).
 */
export function ownStatePaths(config: Config): string[] {
  const own = [
    dataDir(),
    workspaceStateDir(config),
    dataPath(config.tools.results_dir),
    checkpointDir(config),
    ...(config.worker.group_dir ? [config.worker.group_dir] : []),
    config.mcp.workspace.call_log,
    temporalDbFile(),
    path.join(REPO_ROOT, '.klea'),
  ].filter((p): p is string => !!p);
  return [...new Set(own.map((p) => resolvePath(path.resolve(p)).real ?? path.resolve(p)))];
}

/** The protected patterns for a project: the configured ones, and Klea's code when it is Klea's own checkout. */
export function protectedPatternsFor(config: Config, projectDir: string): string[] {
  const own = resolvePath(REPO_ROOT).real;
  const project = resolvePath(path.resolve(projectDir)).real;
  return [...config.tools.protected_patterns, ...(own && own === project ? KLEA_CHECKOUT_PROTECTED_PATTERNS : [])];
}

/** What the workspace server guards besides the sensitive files: protected files and Klea's own state. */
function guardFlags(config: Config, projectDir: string): string[] {
  const guarded = protectedPatternsFor(config, projectDir);
  return [
    // An empty list is said as one, so the server does not fall back to its defaults.
    ...(guarded.length ? guarded.flatMap((p) => ['--protected-pattern', p]) : ['--protected', '']),
    ...ownStatePaths(config).flatMap((p) => ['--own-state', p]),
    '--max-file-mb',
    String(config.tools.max_file_mb),
  ];
}

/** run_command's sandbox, as configured; Klea's own files are hidden from commands wherever they are. */
function sandboxFlags(config: Config): string[] {
  const { sandbox } = config.tools;
  const own = [process.env.KLEA_CONFIG ?? 'klea.yaml'];
  return [
    '--sandbox',
    sandbox.mode,
    '--bwrap',
    sandbox.bwrap_path,
    '--network',
    sandbox.network,
    ...(sandbox.network_allow ? ['--network-allow', sandbox.network_allow.join(',')] : []),
    '--max-processes',
    String(sandbox.max_processes),
    '--memory-mb',
    String(sandbox.memory_mb),
    '--scan-limit',
    String(sandbox.scan_limit),
    ...sandbox.tool_dirs.flatMap((d) => ['--tool-dir', d]),
    ...own.flatMap((p) => ['--hide', path.resolve(p)]),
  ];
}

/** Reads a dotenv file (`envFile`) the way `node --env-file` does. */
function readEnvFile(file: string, where: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ServerConfigError(`${where}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  if (typeof util.parseEnv !== 'function') throw new ServerConfigError(`${where}: needs Node.js 20.12 or later`);
  return util.parseEnv(text) as Record<string, string>;
}

function remoteUrl(template: string, scope: VariableScope, where: string): string {
  const url = expandVars(template, scope, where);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  // The expanded value may hold a secret: the error quotes what was written, not what it became.
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new ServerConfigError(`${where}: "${template}" does not expand to an http(s) URL`);
  return url;
}

export function configuredSpec(
  name: string,
  server: McpServerConfig,
  config: Config,
  env: NodeJS.ProcessEnv = process.env
): ServerSpec {
  const where = `mcp.servers.${name}`;
  const timeoutMs = server.timeout_ms ?? config.tools.call_timeout_ms;
  // Configured servers are shared by every session, so the workspace folder is the configured default project.
  const scope: VariableScope = { env, workspaceFolder: path.resolve(config.project.dir), userHome: os.homedir() };
  const expand = (value: string, key: string) => expandVars(value, scope, `${where}.${key}`);
  if ('url' in server) {
    const remote = {
      name,
      key: name,
      url: remoteUrl(server.url, scope, `${where}.url`),
      headers: Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, expand(v, `headers.${k}`)])),
      timeoutMs,
    };
    return server.type === 'sse'
      ? { ...remote, kind: 'sse' }
      : { ...remote, kind: 'http', sseFallback: server.type === undefined };
  }
  const fromFile = server.envFile
    ? readEnvFile(path.resolve(expand(server.envFile, 'envFile')), `${where}.envFile`)
    : {};
  const configuredEnv = {
    ...fromFile,
    ...Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, expand(v, `env.${k}`)])),
  };
  return {
    name,
    key: name,
    kind: 'stdio',
    command: expand(server.command, 'command'),
    args: server.args.map((a, i) => expand(a, `args[${i}]`)),
    env: { ...getDefaultEnvironment(), ...configuredEnv },
    cwd: server.cwd ? expand(server.cwd, 'cwd') : undefined,
    configuredEnv,
    timeoutMs,
  };
}

/**
 * A configured server that runs a program starts only once the user approved what it runs, as it is now
 * (runtime/mcp-approvals.ts); otherwise the reason, and how to approve it. The bundled workspace server is Klea's.
 */
export function requireApproved(spec: ServerSpec, env: NodeJS.ProcessEnv = process.env): void {
  if (spec.kind !== 'stdio' || spec.name === WORKSPACE_SERVER) return;
  const verdict = approvalOf(
    {
      name: spec.name,
      command: spec.command,
      args: spec.args,
      env: spec.configuredEnv ?? {},
      cwd: path.resolve(spec.cwd ?? process.cwd()),
      path: spec.env.PATH ?? process.env.PATH ?? '',
    },
    env
  );
  if (verdict.approved) return;
  throw new ServerNotApproved(
    `mcp.servers.${spec.name} is not started: ${
      verdict.changed
        ? 'what it runs (its command line, environment, working directory, or a program or script they name) changed since it was approved'
        : 'the user has not approved what it runs (its command line, environment and working directory)'
    }. See it and approve it with "klea mcp approve ${spec.name}" on the worker's machine`
  );
}
