/**
 * Which MCP servers a call can use: the bundled workspace server (rooted at the session's project directory)
 * and the servers of `mcp.servers`, with `${VAR}` expanded from the environment.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Config, McpServerConfig } from '../../common/config';
import { REPO_ROOT } from '../../runtime/temporal';
import { HOLD_AFTER_CHANGE_ENV } from '../../tools/workspace/grants';

export const WORKSPACE_SERVER = 'workspace';

export type ServerSpec =
  | {
      name: string;
      key: string;
      kind: 'stdio';
      command: string;
      args: string[];
      env: Record<string, string>;
      cwd?: string;
      timeoutMs: number;
    }
  | { name: string; key: string; kind: 'http'; url: string; headers: Record<string, string>; timeoutMs: number };

export class ServerConfigError extends Error {}

/** Replaces `${VAR}` (and `${VAR:-default}`) from env; a missing variable is an error naming it. */
export function expandVars(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    throw new ServerConfigError(`${where}: the environment variable ${name} is not set`);
  });
}

export function workspaceServerScript(): string {
  const script = path.join(REPO_ROOT, 'dist', 'tools', 'workspace', 'server.js');
  if (!existsSync(script))
    throw new ServerConfigError(`the workspace MCP server is not built (${script}): run "npm run build"`);
  return script;
}

export function workspaceSpec(config: Config, projectDir: string, grantKey: string): ServerSpec {
  return {
    name: WORKSPACE_SERVER,
    key: `${WORKSPACE_SERVER}\0${projectDir}`,
    kind: 'stdio',
    command: process.execPath,
    args: [
      workspaceServerScript(),
      '--root',
      projectDir,
      '--sensitive',
      config.tools.sensitive_patterns.join(','),
      ...(config.mcp.workspace.call_log ? ['--call-log', path.resolve(config.mcp.workspace.call_log)] : []),
      '--state-dir',
      path.resolve(config.mcp.workspace.state_dir),
    ],
    env: {
      ...getDefaultEnvironment(),
      KLEA_WORKSPACE_GRANT_KEY: grantKey,
      // Crash tests stop the server between a change and its record; unset everywhere else.
      ...(process.env[HOLD_AFTER_CHANGE_ENV] ? { [HOLD_AFTER_CHANGE_ENV]: process.env[HOLD_AFTER_CHANGE_ENV] } : {}),
    },
    cwd: projectDir,
    timeoutMs: config.tools.call_timeout_ms,
  };
}

export function configuredSpec(
  name: string,
  server: McpServerConfig,
  config: Config,
  env: NodeJS.ProcessEnv = process.env
): ServerSpec {
  const where = `mcp.servers.${name}`;
  const timeoutMs = server.timeout_ms ?? config.tools.call_timeout_ms;
  if ('url' in server) {
    return {
      name,
      key: name,
      kind: 'http',
      url: expandVars(server.url, env, `${where}.url`),
      headers: Object.fromEntries(
        Object.entries(server.headers).map(([k, v]) => [k, expandVars(v, env, `${where}.headers.${k}`)])
      ),
      timeoutMs,
    };
  }
  return {
    name,
    key: name,
    kind: 'stdio',
    command: expandVars(server.command, env, `${where}.command`),
    args: server.args.map((a, i) => expandVars(a, env, `${where}.args[${i}]`)),
    env: {
      ...getDefaultEnvironment(),
      ...Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, expandVars(v, env, `${where}.env.${k}`)])),
    },
    cwd: server.cwd ? expandVars(server.cwd, env, `${where}.cwd`) : undefined,
    timeoutMs,
  };
}
