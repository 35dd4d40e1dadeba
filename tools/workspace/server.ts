#!/usr/bin/env node
/**
 * `klea-workspace-mcp --root DIR`: the workspace MCP server over stdio, usable by any MCP client.
 * Options: --root DIR (required), --sensitive "glob,glob" (replaces the default sensitive patterns),
 * --max-read-bytes N (read_file's size cap), --call-log FILE (one JSON line per call), --state-dir DIR (results
 * of side-effecting calls by idempotency key, so a retried call does not act twice).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { killRunningCommands } from './commands';
import { createWorkspaceServer } from './create-server';
import { GRANT_KEY_ENV, HOLD_AFTER_CHANGE_ENV } from '../../common/workspace-protocol';

function usage(message: string): never {
  process.stderr.write(
    `klea-workspace-mcp: ${message}\nusage: klea-workspace-mcp --root DIR [--sensitive "glob,glob"] [--max-read-bytes N] [--call-log FILE] [--state-dir DIR]\n`
  );
  process.exit(2);
}

async function main() {
  const argv = process.argv.slice(2);
  let root: string | undefined;
  let sensitive: string[] | undefined;
  let readBytes: number | undefined;
  let callLog: string | undefined;
  let stateDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--root') root = argv[++i];
    else if (a.startsWith('--root=')) root = a.slice(7);
    else if (a === '--sensitive') sensitive = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--max-read-bytes') {
      readBytes = Number(argv[++i]);
      if (!Number.isInteger(readBytes) || readBytes < 1) usage('--max-read-bytes takes a positive whole number');
    } else if (a === '--call-log') callLog = argv[++i];
    else if (a === '--state-dir') stateDir = argv[++i];
    else if (a === '--help' || a === '-h') usage('serves file and command tools confined to DIR');
    else usage(`unknown argument ${a}`);
  }
  if (!root) usage('--root is required');
  const dir = path.resolve(root);
  if (stateDir) mkdirSync(stateDir, { recursive: true });
  if (!existsSync(dir) || !statSync(dir).isDirectory()) usage(`--root ${dir} is not a directory`);
  // Security: read the grant key, then drop it, so no command this server runs can see it.
  const grantKey = process.env[GRANT_KEY_ENV] || undefined;
  delete process.env[GRANT_KEY_ENV];

  // Fault injection for crash tests only ("<tool>:<marker dir>"): see WorkspaceServerOptions.holdAfterChange.
  const hold = /^(\w+):(.+)$/.exec(process.env[HOLD_AFTER_CHANGE_ENV] ?? '');
  const server = createWorkspaceServer({
    root: dir,
    grantKey,
    sensitivePatterns: sensitive,
    limits: readBytes ? { readBytes } : undefined,
    callLog,
    stateDir,
    ...(hold ? { holdAfterChange: { tool: hold[1], markerDir: hold[2] } } : {}),
  });
  await server.connect(new StdioServerTransport());
  const exit = () => {
    // The client is gone (the worker stopped or died): a command it started must not finish unobserved.
    killRunningCommands();
    void server.close().finally(() => process.exit(0));
  };
  process.stdin.on('close', exit);
  process.on('SIGTERM', exit);
  process.on('SIGINT', exit);
}

main().catch((err: unknown) => {
  process.stderr.write(`klea-workspace-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
