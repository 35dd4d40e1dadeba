/**
 * The bundled `workspace` MCP server: file and command tools confined to one root directory.
 *
 * Every call is checked with the same path guard the worker's permission gate uses: a path outside the root,
 * or a sensitive file inside it, is refused unless the call carries a signed grant for that path (see
 * common/workspace-protocol.ts). Failures are tool results with `isError: true`, never protocol errors, so a model can read them.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, type Dirent, type Stats } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { DEFAULT_SENSITIVE_PATTERNS } from '../../common/config';
import { globToRegExp } from '../../common/glob';
import { grantCovers, SensitiveMatcher, type PathOp } from '../../common/path-guard';
import { IDEMPOTENCY_META_KEY } from '../../common/workspace-protocol';
import { verifiedGrants } from '../../runtime/grant-signing';
import { guardOne, guardToolCall, resolveRoot, type GuardedPath } from '../../runtime/path-resolve';
import { scrubEnv } from './env';

export interface WorkspaceServerOptions {
  root: string;
  /** Secret for verifying grants; without it no grant is accepted. */
  grantKey?: string;
  sensitivePatterns?: readonly string[];
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
}

/** What a write or edit records before it changes its target (see `stateDir`). */
interface Intent {
  key: string;
  tool: string;
  target: string;
  sha256_before: string | null;
  sha256_after: string;
  result: CallToolResult;
}

/** Where one keyed call keeps its intent while it runs and its result once it is done. */
interface CallState {
  key: string;
  tool: string;
  done: string;
  intent: string;
}

const READ_ONLY_TOOLS = new Set(['read_file', 'list_dir', 'find_files', 'grep']);

export const DEFAULT_LIMITS = {
  readBytes: 256 * 1024,
  listEntries: 1000,
  findResults: 500,
  grepResults: 200,
  grepFileBytes: 2 * 1024 * 1024,
  commandTimeoutMs: 60_000,
  commandMaxTimeoutMs: 10 * 60_000,
  commandOutputBytes: 64 * 1024,
};

const SKIP_DIRS = new Set(['.git', 'node_modules']);

export const WORKSPACE_TOOLS = [
  'read_file',
  'list_dir',
  'find_files',
  'grep',
  'write_file',
  'edit_file',
  'run_command',
] as const;

class ToolError extends Error {}

const text = (t: string, structured?: Record<string, unknown>, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(structured ? { structuredContent: structured } : {}),
  ...(isError ? { isError: true } : {}),
});

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

export function createWorkspaceServer(opts: WorkspaceServerOptions): McpServer {
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const sensitivePatterns = opts.sensitivePatterns ?? DEFAULT_SENSITIVE_PATTERNS;
  const matcher = new SensitiveMatcher(sensitivePatterns);
  const rootFacts = resolveRoot(path.resolve(opts.root));
  const server = new McpServer(
    { name: 'klea-workspace', version: '0.1.0' },
    {
      instructions:
        'File and command tools confined to one project directory. Paths are relative to it (absolute paths inside it work too). ' +
        'Paths outside it and sensitive files (.env, keys, credentials) are refused unless the client holds a grant.',
    }
  );

  /** Resolves and checks one path argument; throws a ToolError the model can act on when it is refused. */
  async function allow(raw: string, op: PathOp, meta: unknown): Promise<GuardedPath> {
    const root = await rootFacts;
    const g = await guardOne(raw, 'path', op, root, matcher, {
      projectDir: root.real,
      sensitivePatterns,
      homeDir: opts.homeDir,
    });
    if (g.class !== 'inside' && !grantCovers(verifiedGrants(opts.grantKey, meta), g.real, op)) {
      throw new ToolError(
        `refused: ${raw} is ${g.reason}; this server only touches files inside ${root.real} (and no sensitive files) unless the user grants access`
      );
    }
    return g;
  }

  /** Checks every path a call names (for run_command, its cwd and the paths in the command). */
  async function allowCall(
    tool: string,
    args: Record<string, unknown>,
    meta: unknown,
    readOnly: boolean
  ): Promise<void> {
    const root = await rootFacts;
    const grants = verifiedGrants(opts.grantKey, meta);
    for (const g of await guardToolCall(
      { server: 'workspace', tool, args, readOnly },
      { projectDir: root.real, sensitivePatterns, homeDir: opts.homeDir }
    )) {
      if (g.class !== 'inside' && !grantCovers(grants, g.real, g.op)) {
        throw new ToolError(`refused: ${g.requested} (${g.arg}) is ${g.reason}; not allowed without the user's grant`);
      }
    }
  }

  const rel = async (real: string) => {
    const root = (await rootFacts).real;
    const r = path.relative(root, real);
    return r.startsWith('..') || path.isAbsolute(r) ? real : r || '.';
  };

  /** The state files of a side-effecting call that carries an idempotency key (none without a state dir). */
  function callState(tool: string, meta: unknown): CallState | null {
    if (!opts.stateDir || READ_ONLY_TOOLS.has(tool) || !meta || typeof meta !== 'object') return null;
    const key = (meta as Record<string, unknown>)[IDEMPOTENCY_META_KEY];
    if (typeof key !== 'string' || !key) return null;
    const base = path.join(opts.stateDir, createHash('sha256').update(`${tool}\n${key}`).digest('hex'));
    return { key, tool, done: `${base}.json`, intent: `${base}.intent.json` };
  }

  const readJson = <T>(file: string): Promise<T | null> =>
    fs.readFile(file, 'utf8').then(
      (t) => JSON.parse(t) as T,
      () => null
    );

  async function settle(state: CallState, res: CallToolResult): Promise<void> {
    await atomicWrite(state.done, JSON.stringify(res));
    await fs.rm(state.intent, { force: true });
  }

  /**
   * What an earlier attempt of this call left behind: its recorded result, or an open intent judged by the
   * target's content now. Null when the call must (still) be carried out.
   */
  async function recover(state: CallState): Promise<{ res: CallToolResult; replayed: boolean } | null> {
    const done = await readJson<CallToolResult>(state.done);
    if (done) return { res: done, replayed: true };
    const intent = await readJson<Intent>(state.intent);
    if (!intent) return null;
    const now = await fs.readFile(intent.target).then(sha256, () => null);
    // The change happened; only its record was lost: answer as the first attempt would have.
    if (now === intent.sha256_after) {
      await settle(state, intent.result);
      return { res: intent.result, replayed: true };
    }
    // The change never reached the file: carry it out now.
    if (now === intent.sha256_before) return null;
    // Someone else changed the file in between: repeating the call could undo their change.
    const res = text(
      `${intent.tool} on ${await rel(intent.target)} was interrupted and the file has changed since (neither its old nor its new content); not repeated, nothing changed. Read the file and decide again.`,
      undefined,
      true
    );
    await settle(state, res);
    return { res, replayed: false };
  }

  /**
   * Changes a file on behalf of a keyed call: the intent first (so a retry can tell whether the change happened),
   * then the atomic write. The caller's result is recorded by `handle` when the call returns.
   */
  async function applyChange(
    state: CallState | null,
    change: { real: string; content: string; mode?: number; sha256_before: string | null; sha256_after: string },
    result: CallToolResult
  ): Promise<CallToolResult> {
    if (state) {
      const intent: Intent = {
        key: state.key,
        tool: state.tool,
        target: change.real,
        sha256_before: change.sha256_before,
        sha256_after: change.sha256_after,
        result,
      };
      await atomicWrite(state.intent, JSON.stringify(intent));
    }
    await fs.mkdir(path.dirname(change.real), { recursive: true });
    await atomicWrite(change.real, change.content, change.mode);
    if (state && opts.holdAfterChange?.tool === state.tool) {
      await fs.writeFile(path.join(opts.holdAfterChange.markerDir, `${state.tool}.held`), String(process.pid));
      await new Promise<never>(() => {});
    }
    return result;
  }

  async function audit(
    tool: string,
    args: unknown,
    meta: unknown,
    started: number,
    res: CallToolResult,
    replayed = false
  ) {
    if (!opts.callLog) return;
    const s = res.structuredContent as Record<string, unknown> | undefined;
    const line = {
      at: new Date(started).toISOString(),
      ms: Date.now() - started,
      tool,
      args,
      grants: verifiedGrants(opts.grantKey, meta),
      isError: res.isError === true,
      ...(replayed ? { replayed: true } : {}),
      ...(s && 'sha256_after' in s
        ? { sha256_before: s.sha256_before, sha256_after: s.sha256_after, changed: s.changed ?? true }
        : {}),
    };
    await fs.appendFile(opts.callLog, `${JSON.stringify(line)}\n`).catch(() => undefined);
  }

  function handle<A>(
    tool: string,
    fn: (args: A, meta: unknown, signal: AbortSignal | undefined, state: CallState | null) => Promise<CallToolResult>
  ) {
    const run = async (
      args: A,
      meta: unknown,
      signal: AbortSignal | undefined,
      state: CallState | null
    ): Promise<CallToolResult> => {
      try {
        return await fn(args, meta, signal, state);
      } catch (err) {
        if (err instanceof ToolError) return text(err.message, undefined, true);
        const e = err as NodeJS.ErrnoException;
        const known: Record<string, string> = {
          ENOENT: 'no such file or directory',
          EISDIR: 'is a directory',
          ENOTDIR: 'not a directory',
          EACCES: 'permission denied',
          EPERM: 'operation not permitted',
          EEXIST: 'already exists',
          ENOTEMPTY: 'directory not empty',
        };
        return text(
          `error: ${(e.code && known[e.code]) ?? e.message}${e.path ? `: ${await rel(e.path)}` : ''}`,
          undefined,
          true
        );
      }
    };
    return async (args: A, extra: { _meta?: unknown; signal?: AbortSignal }): Promise<CallToolResult> => {
      const started = Date.now();
      const state = callState(tool, extra._meta);
      const earlier = state ? await recover(state) : null;
      if (earlier) {
        await audit(tool, args, extra._meta, started, earlier.res, earlier.replayed);
        return earlier.res;
      }
      const res = await run(args, extra._meta, extra.signal, state);
      if (state) await settle(state, res).catch(() => undefined);
      await audit(tool, args, extra._meta, started, res);
      return res;
    };
  }

  async function readText(real: string): Promise<{ buf: Buffer; stat: Stats }> {
    const stat = await fs.stat(real);
    if (stat.isDirectory()) throw new ToolError(`${await rel(real)} is a directory: use list_dir`);
    return { buf: await fs.readFile(real), stat };
  }

  async function atomicWrite(real: string, content: string, mode?: number): Promise<void> {
    const tmp = path.join(path.dirname(real), `.${path.basename(real)}.klea-${randomBytes(6).toString('hex')}.tmp`);
    try {
      await fs.writeFile(tmp, content, { mode: mode ?? 0o644, flag: 'wx' });
      await fs.rename(tmp, real);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  async function* walk(dir: string, depth: number): AsyncGenerator<{ real: string; dirent: Dirent }> {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const d of entries) {
      const real = path.join(dir, d.name);
      yield { real, dirent: d };
      // Symlinked directories are not followed: a link must not carry a walk outside the root.
      if (d.isDirectory() && !SKIP_DIRS.has(d.name) && depth > 0) yield* walk(real, depth - 1);
    }
  }

  server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description:
        'Read a text file in the project. Returns its lines (optionally a range). Large files are cut at a size cap with a marker ' +
        'telling which lines were shown and how to read on.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        start_line: z.number().int().min(1).optional().describe('first line to return (1-based)'),
        end_line: z.number().int().min(1).optional().describe('last line to return (inclusive)'),
      },
      annotations: { title: 'Read a file', readOnlyHint: true, openWorldHint: false },
    },
    handle('read_file', async (a: { path: string; start_line?: number; end_line?: number }, meta) => {
      const g = await allow(a.path, 'read', meta);
      const { buf } = await readText(g.real);
      if (buf.subarray(0, 8192).includes(0)) return text(`${a.path} is a binary file (${buf.length} bytes); not shown`);
      const lines = buf.toString('utf8').split('\n');
      if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
      const start = a.start_line ?? 1;
      const end = Math.min(a.end_line ?? lines.length, lines.length);
      if (a.end_line !== undefined && a.end_line < start) throw new ToolError('end_line must not be before start_line');
      if (start > Math.max(lines.length, 1))
        throw new ToolError(`start_line ${start} is past the end (${lines.length} lines)`);
      const out: string[] = [];
      let bytes = 0;
      let last = start - 1;
      for (let i = start; i <= end; i++) {
        const line = lines[i - 1];
        bytes += Buffer.byteLength(line) + 1;
        if (bytes > limits.readBytes && out.length > 0) break;
        out.push(line);
        last = i;
      }
      let body = out.join('\n');
      if (last < end)
        body += `\n[truncated: showing lines ${start}-${last} of ${lines.length} (size cap ${limits.readBytes} bytes); read on with start_line=${last + 1}]`;
      return text(body, {
        path: await rel(g.real),
        start_line: start,
        end_line: last,
        total_lines: lines.length,
        truncated: last < end,
      });
    })
  );

  server.registerTool(
    'list_dir',
    {
      title: 'List a directory',
      description:
        'List the entries of a directory in the project: directories end with "/", symlinks show their target. depth > 1 lists subdirectories too (not .git or node_modules).',
      inputSchema: {
        path: z.string().default('.').describe('directory path, relative to the project directory'),
        depth: z.number().int().min(1).max(5).default(1).describe('how many levels to list'),
      },
      annotations: { title: 'List a directory', readOnlyHint: true, openWorldHint: false },
    },
    handle('list_dir', async (a: { path: string; depth: number }, meta) => {
      const g = await allow(a.path, 'read', meta);
      const stat = await fs.stat(g.real);
      if (!stat.isDirectory()) throw new ToolError(`${a.path} is not a directory`);
      const lines: string[] = [];
      let truncated = false;
      for await (const { real, dirent } of walk(g.real, a.depth - 1)) {
        if (lines.length >= limits.listEntries) {
          truncated = true;
          break;
        }
        const name = path.relative(g.real, real);
        if (dirent.isSymbolicLink()) lines.push(`${name} -> ${await fs.readlink(real)}`);
        else if (dirent.isDirectory()) lines.push(`${name}/`);
        else lines.push(name);
      }
      if (truncated) lines.push(`[truncated at ${limits.listEntries} entries]`);
      return text(lines.length ? lines.join('\n') : '(empty directory)');
    })
  );

  server.registerTool(
    'find_files',
    {
      title: 'Find files by name',
      description:
        'Find files whose path matches a glob, e.g. "**/*.ts", "src/**/test_*.py", "*.md" (a pattern without "/" matches names at any depth). Skips .git and node_modules.',
      inputSchema: {
        pattern: z.string().min(1).describe('glob pattern, relative to path'),
        path: z.string().default('.').describe('directory to search in, relative to the project directory'),
        max_results: z.number().int().min(1).max(5000).default(limits.findResults),
      },
      annotations: { title: 'Find files', readOnlyHint: true, openWorldHint: false },
    },
    handle('find_files', async (a: { pattern: string; path: string; max_results: number }, meta) => {
      const g = await allow(a.path, 'read', meta);
      const re = globToRegExp(a.pattern);
      const found: string[] = [];
      let more = false;
      for await (const { real, dirent } of walk(g.real, 64)) {
        if (dirent.isDirectory()) continue;
        const r = path.relative(g.real, real).split(path.sep).join('/');
        if (!re.test(r)) continue;
        if (found.length >= a.max_results) {
          more = true;
          break;
        }
        found.push(r);
      }
      if (more) found.push(`[more than ${a.max_results} matches; narrow the pattern]`);
      return text(found.length ? found.join('\n') : `no files match ${a.pattern}`);
    })
  );

  server.registerTool(
    'grep',
    {
      title: 'Search file contents',
      description:
        'Search files for a regular expression (JavaScript syntax). Returns "path:line: text" per match. Skips .git, node_modules, binary and very large files.',
      inputSchema: {
        pattern: z.string().min(1).describe('regular expression'),
        path: z.string().default('.').describe('file or directory to search, relative to the project directory'),
        glob: z.string().optional().describe('only search files matching this glob, e.g. "*.ts"'),
        ignore_case: z.boolean().default(false),
        max_results: z.number().int().min(1).max(2000).default(limits.grepResults),
      },
      annotations: { title: 'Search file contents', readOnlyHint: true, openWorldHint: false },
    },
    handle(
      'grep',
      async (a: { pattern: string; path: string; glob?: string; ignore_case: boolean; max_results: number }, meta) => {
        let re: RegExp;
        try {
          re = new RegExp(a.pattern, a.ignore_case ? 'i' : '');
        } catch (err) {
          throw new ToolError(`invalid regular expression: ${(err as Error).message}`);
        }
        const g = await allow(a.path, 'read', meta);
        const only = a.glob ? globToRegExp(a.glob) : null;
        const stat = await fs.stat(g.real);
        const files: string[] = [];
        if (stat.isDirectory()) {
          for await (const { real, dirent } of walk(g.real, 64)) if (dirent.isFile()) files.push(real);
        } else files.push(g.real);
        const root = (await rootFacts).real;
        const hits: string[] = [];
        let more = false;
        outer: for (const file of files) {
          const r = path.relative(root, file).split(path.sep).join('/');
          if (only && !only.test(r)) continue;
          // Sensitive files inside the project are skipped by a directory search, never read silently.
          if (matcher.match(r)) continue;
          const st = await fs.stat(file).catch(() => null);
          if (!st || st.size > limits.grepFileBytes) continue;
          const buf = await fs.readFile(file).catch(() => null);
          if (!buf || buf.subarray(0, 8192).includes(0)) continue;
          const lines = buf.toString('utf8').split('\n');
          for (let i = 0; i < lines.length; i++) {
            if (!re.test(lines[i])) continue;
            if (hits.length >= a.max_results) {
              more = true;
              break outer;
            }
            hits.push(`${r}:${i + 1}: ${lines[i].length > 300 ? `${lines[i].slice(0, 300)}…` : lines[i]}`);
          }
        }
        if (more) hits.push(`[more than ${a.max_results} matches; narrow the search]`);
        return text(hits.length ? hits.join('\n') : `no matches for /${a.pattern}/`);
      }
    )
  );

  server.registerTool(
    'write_file',
    {
      title: 'Write a file',
      description:
        'Create or overwrite a file in the project with the given content (parent directories are created). The write is atomic. ' +
        'The result reports the sha256 before and after; writing the same content again changes nothing.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        content: z.string().describe('the complete new content of the file'),
      },
      annotations: {
        title: 'Write a file',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    handle('write_file', async (a: { path: string; content: string }, meta, _signal, state) => {
      const g = await allow(a.path, 'write', meta);
      const before = await fs
        .readFile(g.real)
        .catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? null : Promise.reject(e)));
      const stat = before ? await fs.stat(g.real) : null;
      if (stat?.isDirectory()) throw new ToolError(`${a.path} is a directory`);
      const hashBefore = before ? sha256(before) : null;
      const hashAfter = sha256(a.content);
      const changed = hashBefore !== hashAfter;
      const r = await rel(g.real);
      const bytes = Buffer.byteLength(a.content);
      const result = text(
        changed
          ? `wrote ${r} (${bytes} bytes${before ? '' : ', new file'})`
          : `${r} already has this content (${bytes} bytes); nothing changed`,
        {
          path: r,
          bytes,
          created: before === null,
          changed,
          sha256_before: hashBefore,
          sha256_after: hashAfter,
        }
      );
      if (!changed) return result;
      return applyChange(
        state,
        { real: g.real, content: a.content, mode: stat?.mode, sha256_before: hashBefore, sha256_after: hashAfter },
        result
      );
    })
  );

  server.registerTool(
    'edit_file',
    {
      title: 'Edit a file',
      description:
        'Replace an exact string in a file. old_string must occur exactly once (include surrounding lines to make it unique) unless replace_all is true. ' +
        'Fails, changing nothing, when old_string is missing or not unique. The result reports the sha256 before and after.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        old_string: z.string().min(1).describe('exact text to replace, including whitespace'),
        new_string: z.string().describe('replacement text'),
        replace_all: z.boolean().default(false).describe('replace every occurrence'),
      },
      annotations: {
        title: 'Edit a file',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    handle(
      'edit_file',
      async (
        a: { path: string; old_string: string; new_string: string; replace_all: boolean },
        meta,
        _signal,
        state
      ) => {
        if (a.old_string === a.new_string)
          throw new ToolError('old_string and new_string are the same: nothing to change');
        const g = await allow(a.path, 'write', meta);
        const { buf, stat } = await readText(g.real);
        const current = buf.toString('utf8');
        const count = current.split(a.old_string).length - 1;
        const r = await rel(g.real);
        if (count === 0)
          throw new ToolError(
            `old_string was not found in ${r}; nothing changed (read the file to copy the exact text)`
          );
        if (count > 1 && !a.replace_all) {
          throw new ToolError(
            `old_string occurs ${count} times in ${r}; nothing changed (add surrounding lines to make it unique, or set replace_all)`
          );
        }
        const next = a.replace_all
          ? current.split(a.old_string).join(a.new_string)
          : current.replace(a.old_string, () => a.new_string);
        const hashes = { sha256_before: sha256(buf), sha256_after: sha256(next) };
        return applyChange(
          state,
          { real: g.real, content: next, mode: stat.mode, ...hashes },
          text(`edited ${r}: ${count} replacement${count > 1 ? 's' : ''}`, { path: r, replacements: count, ...hashes })
        );
      }
    )
  );

  server.registerTool(
    'run_command',
    {
      title: 'Run a shell command',
      description:
        'Run a shell command (/bin/sh -c) in the project directory or a subdirectory. Returns the exit code and the output (cut at a cap). ' +
        'Secrets in the environment are removed. Killed after timeout_ms. Use it to build, test, or inspect; prefer the file tools for reading and editing files.',
      inputSchema: {
        command: z.string().min(1).describe('the shell command line'),
        cwd: z.string().default('.').describe('working directory, relative to the project directory'),
        timeout_ms: z.number().int().min(100).max(limits.commandMaxTimeoutMs).default(limits.commandTimeoutMs),
      },
      annotations: {
        title: 'Run a shell command',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    handle('run_command', async (a: { command: string; cwd: string; timeout_ms: number }, meta, signal) => {
      await allowCall('run_command', a, meta, false);
      const g = await allow(a.cwd, 'execute', meta);
      const st = await fs.stat(g.real);
      if (!st.isDirectory()) throw new ToolError(`cwd ${a.cwd} is not a directory`);
      const result = await runCommand(a.command, g.real, a.timeout_ms, limits.commandOutputBytes, signal);
      const parts = [
        `exit code: ${result.exit_code ?? 'none'}${result.timed_out ? ` (killed after ${a.timeout_ms} ms)` : ''}${result.signal ? ` (signal ${result.signal})` : ''}`,
      ];
      if (result.stdout) parts.push(`--- stdout ---\n${result.stdout}`);
      if (result.stderr) parts.push(`--- stderr ---\n${result.stderr}`);
      return text(parts.join('\n'), result as unknown as Record<string, unknown>, result.exit_code !== 0);
    })
  );

  return server;
}

/** Process groups of commands still running: ended when the server stops, so none outlives it half-done. */
const runningCommands = new Set<number>();

export function killRunningCommands(): void {
  for (const pid of runningCommands) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  runningCommands.clear();
}

interface CommandResult {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  stdout: string;
  stderr: string;
  duration_ms: number;
}

function runCommand(
  command: string,
  cwd: string,
  timeoutMs: number,
  cap: number,
  signal?: AbortSignal
): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    // Its own process group, so a timeout kills everything the command started.
    const child = spawn('/bin/sh', ['-c', command], {
      cwd,
      env: scrubEnv(process.env),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid) runningCommands.add(child.pid);
    const collect = () => {
      const chunks: Buffer[] = [];
      let size = 0;
      let dropped = 0;
      return {
        push(b: Buffer) {
          if (size < cap) {
            const take = b.subarray(0, cap - size);
            chunks.push(take);
            size += take.length;
            dropped += b.length - take.length;
          } else dropped += b.length;
        },
        text: () =>
          Buffer.concat(chunks).toString('utf8') + (dropped ? `\n[truncated: ${dropped} more bytes not shown]` : ''),
      };
    };
    const out = collect();
    const err = collect();
    child.stdout.on('data', out.push);
    child.stderr.on('data', err.push);
    let timedOut = false;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    // The client cancelled the request (the task was cancelled): stop the command and all it started.
    signal?.addEventListener('abort', killGroup, { once: true });
    const finish = (code: number | null, exitSignal: NodeJS.Signals | null, spawnError?: Error) => {
      clearTimeout(timer);
      if (child.pid) runningCommands.delete(child.pid);
      signal?.removeEventListener('abort', killGroup);
      resolve({
        exit_code: code,
        signal: exitSignal,
        timed_out: timedOut,
        stdout: out.text(),
        stderr: spawnError ? spawnError.message : err.text(),
        duration_ms: Date.now() - started,
      });
    };
    child.once('error', (e) => finish(null, null, e));
    child.once('close', (code, signal) => finish(code, signal));
  });
}
