#!/usr/bin/env node
/**
 * `klea-workspace-mcp --root DIR`: the workspace MCP server over stdio, usable by any MCP client.
 * Options: --root DIR (required), --sensitive "glob,glob" or --sensitive-pattern GLOB (repeatable; either replaces
 * the default sensitive patterns; the repeatable form keeps globs with commas such as `*.{pem,key}` whole),
 * --protected "glob,glob" or --protected-pattern GLOB (the same for the protected files: read-only to commands, writes
 * need a grant), --own-state PATH (repeatable: Klea's own state, refused to every tool),
 * --grant-key-fd N (read the grant-verifying key from that file descriptor), --max-read-bytes N (read_file's size cap), --call-log FILE (one JSON line per call), --state-dir DIR (results
 * of side-effecting calls by idempotency key, so a retried call does not act twice), --max-file-mb N (the largest
 * file a tool or command may write), and for run_command's sandbox: --sandbox bwrap|none, --bwrap PATH, --network
 * on|off (default off), --network-allow "name,*.name" (with the network on, the only host names commands may
 * reach), --max-processes N, --memory-mb N, --scan-limit N (most entries looked through for the files to hide),
 * --hide PATH (repeatable: never visible to a command); and for checkpoints: --checkpoint-dir DIR (a call carrying
 * `klea/checkpoint` journals what it changed there; Klea's own state) and --checkpoint-max-mb N (the most that store
 * holds, default 1024).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closeCommandCgroups } from './command-limits';
import { killRunningCommands } from './commands';
import { createWorkspaceServer, type WorkspaceServerOptions } from './create-server';
import { expandHome } from '../../runtime/tool-dirs';
import { toolDirProblem } from './tool-dirs';
import { NetworkAllowSchema } from '../../common/network-allow';
import { GRANT_KEY_ENV, HOLD_AFTER_CHANGE_ENV } from '../../common/workspace-protocol';

function usage(message: string): never {
  process.stderr.write(
    `klea-workspace-mcp: ${message}\nusage: klea-workspace-mcp --root DIR [--sensitive "glob,glob" | --sensitive-pattern GLOB ...] [--protected "glob,glob" | --protected-pattern GLOB ...] [--own-state PATH ...] [--max-read-bytes N] [--max-file-mb N] [--call-log FILE] [--state-dir DIR] [--sandbox bwrap|none] [--bwrap PATH] [--network on|off] [--network-allow "name,*.name"] [--max-processes N] [--memory-mb N] [--scan-limit N] [--hide PATH ...] [--checkpoint-dir DIR] [--checkpoint-max-mb N]\n`
  );
  process.exit(2);
}

/**
 * The tool directories (`--tool-dir`, tools.sandbox.tool_dirs) as real paths, `~` being the home directory: one that
 * cannot be one stops the server with the reason; one that does not exist is left out, and said so.
 */
function checkedToolDirs(dirs: readonly string[], root: string): string[] {
  const home = os.homedir();
  const realHome = existsSync(home) ? realpathSync(home) : home;
  const out: string[] = [];
  for (const raw of dirs) {
    const d = expandHome(raw, home);
    if (!path.isAbsolute(d)) usage(`--tool-dir ${raw}: not an absolute path`);
    if (!existsSync(d)) {
      process.stderr.write(`workspace: tool directory ${d} does not exist: left out\n`);
      continue;
    }
    const real = realpathSync(d);
    const problem = toolDirProblem(real, realHome, realpathSync(root));
    if (problem) usage(`--tool-dir ${raw}: ${problem}`);
    out.push(real);
  }
  return out;
}

async function main() {
  const argv = process.argv.slice(2);
  let root: string | undefined;
  let sensitive: string[] | undefined;
  let protectedPatterns: string[] | undefined;
  const ownState: string[] = [];
  let maxFileBytes: number | undefined;
  let readBytes: number | undefined;
  let callLog: string | undefined;
  let stateDir: string | undefined;
  let grantKeyFd: number | undefined;
  let checkpointDir: string | undefined;
  let checkpointMaxMb = 1024;
  const sandbox: NonNullable<WorkspaceServerOptions['sandbox']> = { mode: 'bwrap', hide: [] };
  const toolDirs: string[] = [];
  const limits: { maxProcesses?: number; memoryBytes?: number; fileBytes?: number } = {};
  /** A whole number of at least 1 (an empty or missing value is none). */
  const positive = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (!v || !Number.isInteger(n) || n < 1) usage(`${flag} takes a positive whole number`);
    return n;
  };
  const oneOf = <T extends string>(flag: string, v: string | undefined, allowed: readonly T[]): T => {
    if (!allowed.includes(v as T)) usage(`${flag} takes ${allowed.join(' or ')}`);
    return v as T;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--root') root = argv[++i];
    else if (a.startsWith('--root=')) root = a.slice(7);
    else if (a === '--sensitive') sensitive = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--sensitive-pattern') (sensitive ??= []).push(argv[++i] ?? '');
    else if (a === '--protected') protectedPatterns = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--protected-pattern') (protectedPatterns ??= []).push(argv[++i] ?? '');
    else if (a === '--own-state') ownState.push(path.resolve(argv[++i] ?? ''));
    else if (a === '--max-file-mb') maxFileBytes = positive(a, argv[++i]) * 1024 * 1024;
    else if (a === '--scan-limit') sandbox.scanLimit = positive(a, argv[++i]);
    else if (a === '--max-read-bytes') readBytes = positive(a, argv[++i]);
    else if (a === '--call-log') callLog = argv[++i];
    else if (a === '--state-dir') stateDir = argv[++i];
    else if (a === '--grant-key-fd') grantKeyFd = positive(a, argv[++i]);
    else if (a === '--sandbox') sandbox.mode = oneOf(a, argv[++i], ['bwrap', 'none'] as const);
    else if (a === '--bwrap') sandbox.bwrap = argv[++i];
    else if (a === '--network') sandbox.network = oneOf(a, argv[++i], ['on', 'off'] as const);
    else if (a === '--network-allow') {
      const allowed = NetworkAllowSchema.safeParse((argv[++i] ?? '').split(',').filter(Boolean));
      if (!allowed.success) usage(`--network-allow: ${allowed.error.issues[0].message}`);
      sandbox.networkAllow = allowed.data;
    } else if (a === '--max-processes') limits.maxProcesses = positive(a, argv[++i]);
    else if (a === '--memory-mb') limits.memoryBytes = positive(a, argv[++i]) * 1024 * 1024;
    else if (a === '--checkpoint-dir') checkpointDir = argv[++i];
    else if (a === '--checkpoint-max-mb') checkpointMaxMb = positive(a, argv[++i]);
    else if (a === '--hide') sandbox.hide = [...(sandbox.hide ?? []), path.resolve(argv[++i] ?? '')];
    else if (a === '--tool-dir') toolDirs.push(argv[++i] ?? '');
    else if (a === '--help' || a === '-h') usage('serves file and command tools confined to DIR');
    else usage(`unknown argument ${a}`);
  }
  if (maxFileBytes) limits.fileBytes = maxFileBytes;
  sandbox.limits = limits;
  if (!root) usage('--root is required');
  const dir = path.resolve(root);
  if (stateDir) mkdirSync(stateDir, { recursive: true });
  if (checkpointDir === '') usage('--checkpoint-dir takes a directory');
  if (checkpointDir) mkdirSync(checkpointDir, { recursive: true, mode: 0o700 });
  if (!existsSync(dir) || !statSync(dir).isDirectory()) usage(`--root ${dir} is not a directory`);
  sandbox.toolDirs = checkedToolDirs(toolDirs, dir);
  // Security: the grant key comes through a pipe (--grant-key-fd), never the environment, where /proc/<pid>/environ
  // would keep it; the variable is still read for clients that set it, and dropped at once.
  const grantKey =
    (grantKeyFd !== undefined ? readFileSync(grantKeyFd, 'utf8') : process.env[GRANT_KEY_ENV]) || undefined;
  delete process.env[GRANT_KEY_ENV];

  // Fault injection for crash tests only ("<tool>:<marker dir>"): see WorkspaceServerOptions.holdAfterChange.
  const hold = /^(\w+):(.+)$/.exec(process.env[HOLD_AFTER_CHANGE_ENV] ?? '');
  const server = createWorkspaceServer({
    root: dir,
    grantKey,
    sensitivePatterns: sensitive,
    protectedPatterns,
    ownState,
    limits: { ...(readBytes ? { readBytes } : {}), ...(maxFileBytes ? { writeBytes: maxFileBytes } : {}) },
    callLog,
    stateDir,
    sandbox,
    ...(checkpointDir
      ? { checkpoints: { dir: path.resolve(checkpointDir), maxBytes: checkpointMaxMb * 1024 * 1024 } }
      : {}),
    ...(hold ? { holdAfterChange: { tool: hold[1], markerDir: hold[2] } } : {}),
  });
  await server.connect(new StdioServerTransport());
  const exit = () => {
    // The client is gone (the worker stopped or died): a command it started must not finish unobserved.
    killRunningCommands();
    // What they started is killed too, and its cgroups removed once it has exited, before this process ends.
    void server
      .close()
      .then(closeCommandCgroups)
      .finally(() => process.exit(0));
  };
  process.stdin.on('close', exit);
  process.on('SIGTERM', exit);
  process.on('SIGINT', exit);
}

main().catch((err: unknown) => {
  process.stderr.write(`klea-workspace-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
