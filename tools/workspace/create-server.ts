/**
 * The bundled `workspace` MCP server: file and command tools confined to one root directory.
 *
 * Every call is checked with the same path guard the worker's permission gate uses: a path outside the root,
 * or a sensitive file inside it, is refused unless the call carries a signed grant for that path (see
 * common/workspace-protocol.ts). Failures are tool results with `isError: true`, never protocol errors, so a model
 * can read them.
 *
 * This module only composes the server; each part has its own module: path-gate.ts (the path check),
 * call-state.ts (the idempotency store), audit.ts (the call log), call-handler.ts (the pipeline every call goes
 * through), fs-ops.ts and commands.ts (the file-system and process work), and tools/ (the registrations).
 */
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { resolvePath } from '../../runtime/path-resolve';
import { createCheckpointRecorder } from '../checkpoints';
import { createAuditLog } from './audit';
import { createCallHandler } from './call-handler';
import { createCallStateStore } from './call-state';
import { createCommandSandbox, type CommandSandboxOptions } from './command-sandbox';
import { DEFAULT_LIMITS } from './context';
import { createPathGate } from './path-gate';
import { isPlaceholder } from './sandbox-view-placeholders';
import { registerReadTools } from './tools/read';
import { registerRunCommand } from './tools/run-command';
import { registerSearchTools } from './tools/search';
import { registerWriteTools } from './tools/write';

export { DEFAULT_LIMITS };

export interface WorkspaceServerOptions {
  root: string;
  /** Secret for verifying grants; without it no grant is accepted. */
  grantKey?: string;
  sensitivePatterns?: readonly string[];
  /** Files host tools run or load later (default DEFAULT_PROTECTED_PATTERNS): read-only to commands, writes asked. */
  protectedPatterns?: readonly string[];
  /** Klea's own state (its data directory and the like): refused to every tool, hidden from every command. */
  ownState?: readonly string[];
  homeDir?: string;
  limits?: Partial<typeof DEFAULT_LIMITS>;
  /** Appends one JSON line per call: time, tool, arguments, grants presented, outcome. */
  callLog?: string;
  /**
   * Where side-effecting calls keep their state by idempotency key (`_meta["klea/idempotency_key"]`): an intent
   * record (target, hashes before and after, the result) written before a write or edit changes the file, and the
   * result once the call is done. A retry (the worker died before it heard the answer, perhaps mid-change) finds
   * one of them and neither acts twice nor fails a change that already happened. Every worker that can take the
   * retry must see the same directory (a shared volume when workers run on several hosts).
   */
  stateDir?: string;
  /**
   * Fault injection for crash tests: after a change made by this tool, and before its result is recorded, create
   * `<markerDir>/<tool>.held` and wait until the client goes away. Never set in production.
   */
  holdAfterChange?: { tool: string; markerDir: string };
  /** How run_command runs its commands; bubblewrap with no network by default. */
  sandbox?: Omit<CommandSandboxOptions, 'grantKey'>;
  /**
   * Checkpoints (tools/checkpoints): a write, edit or command whose call carries `_meta["klea/checkpoint"]`
   * `{task, step}` journals what it changed in `dir` (Klea's own state: refused to every tool, hidden from commands),
   * which holds at most `maxBytes`. Without it no call is checkpointed.
   */
  checkpoints?: {
    dir: string;
    maxBytes: number;
    /** Watch the project between commands (default true). */
    watch?: boolean;
    /** Told the time each checkpointed call spent on its checkpoint, in ms (the benchmark). */
    onCost?: (tool: string, ms: number) => void;
  };
}

export const WORKSPACE_TOOLS = [
  'read_file',
  'list_dir',
  'find_files',
  'grep',
  'write_file',
  'edit_file',
  'run_command',
] as const;

export function createWorkspaceServer(opts: WorkspaceServerOptions): McpServer {
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  // The checkpoint store is Klea's own state wherever it lies: no tool reaches it, no command sees it.
  const storeDir = opts.checkpoints ? path.resolve(opts.checkpoints.dir) : null;
  const ownState = [...(opts.ownState ?? []), ...(storeDir ? [resolvePath(storeDir).real ?? storeDir] : [])];
  const gate = createPathGate({
    root: opts.root,
    grantKey: opts.grantKey,
    sensitivePatterns: opts.sensitivePatterns ?? DEFAULT_SENSITIVE_PATTERNS,
    protectedPatterns: opts.protectedPatterns ?? DEFAULT_PROTECTED_PATTERNS,
    ownState,
    homeDir: opts.homeDir,
  });
  const checkpoints =
    opts.checkpoints && storeDir
      ? createCheckpointRecorder({
          storeDir,
          root: async () => (await gate.root()).real,
          maxBytes: opts.checkpoints.maxBytes,
          sensitive: (rel) => gate.sensitive(rel) !== null,
          ownState: (real) => gate.ownState(real),
          transient: isPlaceholder,
          watch: opts.checkpoints.watch,
          onCost: opts.checkpoints.onCost,
        })
      : null;
  const store = createCallStateStore({ stateDir: opts.stateDir, holdAfterChange: opts.holdAfterChange, rel: gate.rel });
  const handle = createCallHandler({ store, audit: createAuditLog(opts.callLog, opts.grantKey), rel: gate.rel });
  const server = new McpServer(
    { name: 'klea-workspace', version: '0.1.0' },
    {
      instructions:
        'File and command tools confined to one project directory. Paths are relative to it (absolute paths inside it work too). ' +
        'Paths outside it and sensitive files (.env, keys, credentials) are refused unless the client holds a grant.',
    }
  );
  // The order of registration is the order tools/list shows them in.
  const sandbox = createCommandSandbox(gate, {
    mode: 'bwrap',
    ...opts.sandbox,
    hide: [...(opts.sandbox?.hide ?? []), ...ownState],
    protectedPatterns: opts.protectedPatterns ?? DEFAULT_PROTECTED_PATTERNS,
    limits: { fileBytes: limits.writeBytes, ...opts.sandbox?.limits },
    grantKey: opts.grantKey,
  });
  // The client went away: the cgroups still kept for its commands are removed.
  server.server.onclose = () => {
    checkpoints?.close();
    void sandbox.close();
  };
  const context = { limits, gate, store, handle, sandbox, checkpoints };
  registerReadTools(server, context);
  registerSearchTools(server, context);
  registerWriteTools(server, context);
  registerRunCommand(server, context);
  return server;
}
