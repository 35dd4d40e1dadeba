/** Tool activities: list what a session may use, classify a call's paths, and dispatch a call. */
import type { ProjectLeases } from '../project/lease';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { activityContext } from '../activity-context';
import { ApplicationFailure } from '@temporalio/common';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Config, ToolAccess } from '../../common/config';
import { Failure } from '../../common/failures';
import type { Grant } from '../../common/path-guard';
import {
  accessRefusal,
  describeTool,
  offeredTools,
  withoutShadowed,
  type ToolCallResult,
  type ToolDescriptor,
} from '../../common/tools';
import {
  CHECKPOINT_META_KEY,
  GRANTS_META_KEY,
  IDEMPOTENCY_META_KEY,
  NETWORK_META_KEY,
  REPLACE_META_KEY,
} from '../../common/workspace-protocol';
import { dataPath } from '../../runtime/data-dir';
import { signGrants } from '../../runtime/grant-signing';
import { requireAllowedProject } from '../project/allowed';
import { instructionChange } from '../project/instruction-change';
import type { Logger } from '../../runtime/log';
import { guardToolCall, type GuardedPath } from '../../runtime/path-resolve';
import { type McpPool } from './pool';
import {
  configuredSpec,
  ownStatePaths,
  requireApproved,
  protectedPatternsFor,
  ServerConfigError,
  ServerNotApproved,
  workspaceSpec,
  WORKSPACE_SERVER,
  type ServerSpec,
} from './servers';

export const RESULT_TEXT_CAP = 16 * 1024;
/** Structured content larger than this is left out of a call's result. */
export const STRUCTURED_CAP = 32 * 1024;
/** Most paths a call's result says it changed (a command that touches more is judged on these). */
export const CHANGED_FILES_MAX = 200;

/** The project files a workspace command reports it changed (`changed_files`), kept apart from the capped rest. */
function changedFiles(structured: Record<string, unknown> | undefined): string[] | null {
  const list = structured?.changed_files;
  if (!Array.isArray(list)) return null;
  return list.filter((p): p is string => typeof p === 'string' && p.length <= 4096).slice(0, CHANGED_FILES_MAX);
}

export interface ListToolsInput {
  projectDir: string;
  toolAccess: ToolAccess;
}

export interface ListToolsResult {
  tools: ToolDescriptor[];
  /** Servers that could not be reached, with the reason; the others keep working. */
  unavailable: Array<{ server: string; error: string }>;
}

export interface CallToolInput {
  projectDir: string;
  toolAccess: ToolAccess;
  server: string;
  tool: string;
  args: Record<string, unknown>;
  /** Paths the user allowed for this call (canonical real path + operation). */
  grants?: Grant[];
  /** Stable across retries of this call: the workspace server acts on it once. */
  idempotencyKey?: string;
  /** The session lets sandboxed commands reach the network. */
  network?: 'on' | 'off';
  /** The task and step a workspace call belongs to: what it changes is kept so a rewind can undo it. */
  checkpoint?: { task: string; step: string };
  /** Klea's own `write_file` that replaces the file on purpose (`/init`): never a call a model picked. */
  replace?: boolean;
  timeoutMs?: number;
}

export interface CheckPathsInput {
  projectDir: string;
  server: string;
  tool: string;
  args: Record<string, unknown>;
}

export interface ToolDeps {
  config: Config;
  log: Logger;
  pool: McpPool;
  /** On a host of a group: its leases on the group's projects (a change runs only where the lease is held). */
  leases?: ProjectLeases;
}

function flattenContent(result: CallToolResult): string {
  const parts: string[] = [];
  for (const c of result.content ?? []) {
    if (c.type === 'text') parts.push(c.text);
    else if (c.type === 'resource' && 'text' in c.resource) parts.push(String(c.resource.text));
    else if (c.type === 'resource_link') parts.push(`[resource ${c.uri}]`);
    else parts.push(`[${c.type} content]`);
  }
  if (!parts.length && result.structuredContent) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

/** Stores a full tool output content-addressed; returns its reference, or undefined if it cannot be kept. */
export async function keepResult(dir: string, text: string): Promise<string | undefined> {
  const hash = createHash('sha256').update(text).digest('hex');
  const file = path.resolve(dir, `${hash}.txt`);
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text, { flag: 'wx' }).catch((e: NodeJS.ErrnoException) =>
      e.code === 'EEXIST' ? undefined : Promise.reject(e)
    );
    return `sha256:${hash}`;
  } catch {
    return undefined;
  }
}

export function cutText(text: string, cap = RESULT_TEXT_CAP): { text: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= cap) return { text, truncated: false, bytes };
  const head = Buffer.from(text)
    .subarray(0, cap)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return { text: `${head}\n[truncated: ${bytes - cap} of ${bytes} bytes not shown]`, truncated: true, bytes };
}

/** How many projects' workspace server specs and path guards a worker keeps built. */
const PROJECTS_KEPT = 256;

/** `build`, remembered for the last `max` keys it was asked for (a failure is not remembered). */
function boundedMemo<V>(max: number, build: (key: string) => V): (key: string) => V {
  const kept = new Map<string, V>();
  return (key) => {
    if (kept.has(key)) return kept.get(key)!;
    const value = build(key);
    if (kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(key, value);
    return value;
  };
}

export function createToolActivities(deps: ToolDeps) {
  const { pool } = deps;
  // Per worker process: the workspace servers this worker starts accept grants signed with it, and no others.
  const grantKey = randomBytes(32).toString('hex');
  // What a project's workspace server is started with, and what its paths are checked against, is the same at every
  // call, and building either resolves Klea's own paths on the file system: built once per project (the spec is
  // used only to start the server; later calls find the server by its key).
  const workspaceFor = boundedMemo(PROJECTS_KEPT, (projectDir: string) =>
    workspaceSpec(deps.config, projectDir, grantKey)
  );
  const guardsFor = boundedMemo(PROJECTS_KEPT, (projectDir: string) => ({
    protectedPatterns: protectedPatternsFor(deps.config, projectDir),
    ownState: ownStatePaths(deps.config),
  }));

  /** Every server a session may use; one that cannot be set up is reported by name and the others kept. */
  function specsFor(projectDir: string): { specs: ServerSpec[]; unavailable: ListToolsResult['unavailable'] } {
    requireAllowedProject(deps.config, projectDir);
    const specs: ServerSpec[] = [];
    const unavailable: ListToolsResult['unavailable'] = [];
    const add = (name: string, spec: () => ServerSpec) => {
      try {
        specs.push(spec());
      } catch (err) {
        if (!(err instanceof ServerConfigError)) throw err;
        unavailable.push({ server: name, error: err.message });
      }
    };
    if (deps.config.mcp.workspace.enabled) add(WORKSPACE_SERVER, () => workspaceFor(projectDir));
    for (const [name, server] of Object.entries(deps.config.mcp.servers)) {
      if (server.disabled || name === WORKSPACE_SERVER) continue;
      add(name, () => approvedSpec(configuredSpec(name, server, deps.config)));
    }
    return { specs, unavailable };
  }

  /** Security: a configured server runs only what the user approved; a change asks again (and stops it). */
  function approvedSpec(spec: ServerSpec): ServerSpec {
    try {
      requireApproved(spec);
    } catch (err) {
      void pool.stop(spec).catch(() => undefined);
      throw err;
    }
    return spec;
  }

  function specFor(projectDir: string, server: string): ServerSpec | undefined {
    requireAllowedProject(deps.config, projectDir);
    if (server === WORKSPACE_SERVER && deps.config.mcp.workspace.enabled) return workspaceFor(projectDir);
    const cfg = deps.config.mcp.servers[server];
    return cfg && !cfg.disabled ? approvedSpec(configuredSpec(server, cfg, deps.config)) : undefined;
  }

  async function descriptorsOf(spec: ServerSpec): Promise<ToolDescriptor[]> {
    return (await pool.listTools(spec)).map((t) => describeTool(spec.name, t));
  }

  async function findTool(
    projectDir: string,
    server: string,
    tool: string
  ): Promise<{ spec?: ServerSpec; tool?: ToolDescriptor; refusal?: string }> {
    let spec: ServerSpec | undefined;
    try {
      spec = specFor(projectDir, server);
    } catch (err) {
      // Not approved: refused like a policy, not retried (only the user can change it).
      if (err instanceof ServerNotApproved) return { refusal: err.message };
      if (err instanceof ServerConfigError)
        throw ApplicationFailure.nonRetryable(err.message, Failure.ToolServerMisconfigured);
      throw err;
    }
    if (!spec) return {};
    const found = (await descriptorsOf(spec)).find((t) => t.name === tool);
    // Security: a call to another server's tool that shadows a built-in one is refused at dispatch too.
    if (found && spec.name !== WORKSPACE_SERVER && deps.config.mcp.workspace.enabled) {
      const builtIn = await descriptorsOf(workspaceFor(projectDir));
      if (builtIn.some((t) => t.qualifiedName.toLowerCase() === found.qualifiedName.toLowerCase())) return { spec };
    }
    return { spec, tool: found };
  }

  const activities = {
    async listTools(input: ListToolsInput): Promise<ListToolsResult> {
      const tools: ToolDescriptor[] = [];
      const { specs, unavailable } = specsFor(input.projectDir);
      for (const u of unavailable) deps.log.warn('MCP server misconfigured', u);
      const listed = await Promise.allSettled(specs.map((s) => descriptorsOf(s)));
      listed.forEach((r, i) => {
        if (r.status === 'fulfilled') tools.push(...r.value);
        else {
          const error = r.reason instanceof Error ? r.reason.message : String(r.reason);
          deps.log.warn('MCP server unavailable', { server: specs[i].name, error });
          unavailable.push({ server: specs[i].name, error });
        }
      });
      // Security: no server's tool takes the name of a built-in one (or of another server's listed before it).
      const { tools: distinct, shadowed } = withoutShadowed(tools);
      for (const s of shadowed)
        unavailable.push({
          server: s.server,
          error: `its tool ${s.tool} is not offered: the model would take it for ${s.by}, which is listed first`,
        });
      return { tools: offeredTools(distinct, input.toolAccess), unavailable };
    },

    async checkPaths(input: CheckPathsInput): Promise<GuardedPath[]> {
      const { tool } = await findTool(input.projectDir, input.server, input.tool).catch(() => ({ tool: undefined }));
      const guarded = guardToolCall(
        {
          server: input.server,
          tool: input.tool,
          args: input.args,
          inputSchema: tool?.inputSchema as never,
          readOnly: tool?.readOnly ?? false,
        },
        {
          projectDir: input.projectDir,
          sensitivePatterns: deps.config.tools.sensitive_patterns,
          ...guardsFor(input.projectDir),
        }
      );
      if (input.server !== WORKSPACE_SERVER) return guarded;
      // A change to the instructions every later plan reads is shown to the user as a diff when they are asked.
      return guarded.map((g) => {
        const change = instructionChange(input.tool, input.args, g, input.projectDir);
        return change ? { ...g, change } : g;
      });
    },

    async callTool(input: CallToolInput): Promise<ToolCallResult> {
      const refused = (text: string): ToolCallResult => ({
        status: 'refused',
        text,
        truncated: false,
        bytes: Buffer.byteLength(text),
      });
      // A server that cannot start throws here: a transport failure, retried as the tool's policy allows.
      const found = await findTool(input.projectDir, input.server, input.tool);
      if (found.refusal) return refused(found.refusal);
      const policy = accessRefusal(found.tool, input.toolAccess, `${input.server}__${input.tool}`);
      if (policy || !found.spec) return refused(policy ?? `no MCP server named ${input.server}`);
      // A group's project is changed only by the host that holds its lease (project/lease.ts): elsewhere the call
      // is refused with the holder's name, before anything runs, and the workflow sends it there.
      if (deps.leases && input.server === WORKSPACE_SERVER && !found.tool?.readOnly)
        return deps.leases.using(input.projectDir, () => run(input, found.spec!));
      return run(input, found.spec);
    },
  };

  /** Sends the call to its server and shapes the result (the tool and the policy checked already). */
  async function run(input: CallToolInput, spec: ServerSpec): Promise<ToolCallResult> {
    const ctx = activityContext();
    const meta =
      input.server === WORKSPACE_SERVER &&
      (input.grants?.length || input.idempotencyKey || input.network || input.checkpoint || input.replace)
        ? {
            ...(input.grants?.length ? { [GRANTS_META_KEY]: signGrants(grantKey, input.grants) } : {}),
            ...(input.idempotencyKey ? { [IDEMPOTENCY_META_KEY]: input.idempotencyKey } : {}),
            ...(input.network ? { [NETWORK_META_KEY]: input.network } : {}),
            ...(input.checkpoint ? { [CHECKPOINT_META_KEY]: input.checkpoint } : {}),
            ...(input.replace ? { [REPLACE_META_KEY]: true } : {}),
          }
        : undefined;
    // The worker heartbeats every running activity (worker/worker.ts), which is how a cancellation reaches this
    // one; the MCP request's signal carries it on to the server. A progress notification is a heartbeat too,
    // with the progress as its details.
    const result = await pool.callTool(spec, input.tool, input.args, {
      timeoutMs: input.timeoutMs,
      meta,
      signal: ctx?.cancellationSignal,
      onProgress: (p) => ctx?.heartbeat(p),
    });
    const full = flattenContent(result);
    const cut = cutText(full);
    // Large outputs are cut for history and prompts, and kept whole by reference.
    const ref = cut.truncated ? await keepResult(dataPath(deps.config.tools.results_dir), full) : undefined;
    // Room for a capped diff of a write or edit (common/text-diff.ts) with its JSON escaping.
    const structured =
      result.structuredContent && JSON.stringify(result.structuredContent).length <= STRUCTURED_CAP
        ? result.structuredContent
        : undefined;
    const changed = input.server === WORKSPACE_SERVER ? changedFiles(result.structuredContent) : null;
    return {
      status: result.isError ? 'error' : 'ok',
      ...cut,
      ...(structured ? { structured } : {}),
      ...(changed ? { changed } : {}),
      ...(ref ? { ref } : {}),
    };
  }

  return activities;
}
