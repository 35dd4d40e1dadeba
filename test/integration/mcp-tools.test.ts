/**
 * The MCP client pool and the tool activities against real stdio servers: the official filesystem server from
 * npm (started through npx, a wrapper that leaves grandchildren) and Klea's own workspace server; and against real
 * remote servers on loopback, over streamable HTTP and HTTP+SSE.
 */
import { execFileSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { McpPool } from '../../activities/mcp/pool';
import { configuredSpec } from '../../activities/mcp/servers';
import { createToolActivities } from '../../activities/mcp/tools';
import { approveConfiguredServers } from '../support/mcp-approvals';
import type { Config } from '../../common/config';
import { resolveConfig } from '../../common/config-resolve';
import { silentLogger } from '../../runtime/log';
import { startNotesServer, type NotesServer } from '../support/notes-server';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-mcp-')));
const project = path.join(base, 'project');
const outside = path.join(base, 'outside');
const CANARY = 'canary: outside the project';

beforeAll(() => {
  mkdirSync(path.join(project, 'src'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(project, 'src/app.ts'), 'export const answer = 42;\n');
  writeFileSync(path.join(project, 'notes.md'), 'hello\n');
  writeFileSync(path.join(outside, 'canary.txt'), CANARY);
});
afterAll(() => {
  expect(readFileSync(path.join(outside, 'canary.txt'), 'utf8')).toBe(CANARY);
  rmSync(base, { recursive: true, force: true });
});

/** Every pid in a process group, from ps. */
function groupPids(pgid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '-g', String(pgid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter(Boolean);
  } catch {
    return [];
  }
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function waitFor(cond: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return cond();
}

function configWith(servers: Record<string, unknown>, extra: Record<string, unknown> = {}): Config {
  return resolveConfig(
    { mcp: { servers }, tools: { call_timeout_ms: 15_000 }, project: { allowed_roots: [base] }, ...extra },
    {}
  );
}

describe('MCP pool with the official filesystem server (through npx)', () => {
  const config = configWith({
    filesystem: { command: 'npx', args: ['--no-install', 'mcp-server-filesystem', project] },
  });
  const spec = configuredSpec('filesystem', config.mcp.servers.filesystem, config);
  let pool: McpPool;
  beforeAll(() => {
    pool = new McpPool(silentLogger);
  });
  afterAll(async () => pool.shutdown());

  it('lists tools and calls one', async () => {
    const tools = await pool.listTools(spec);
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['read_text_file', 'write_file', 'list_directory'])
    );
    const res = await pool.callTool(spec, 'read_text_file', { path: path.join(project, 'src/app.ts') });
    expect(JSON.stringify(res.content)).toContain('export const answer = 42;');
  });

  it('returns a tool failure as data, not an exception', async () => {
    const res = await pool.callTool(spec, 'read_text_file', { path: path.join(outside, 'canary.txt') });
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.content)).not.toContain(CANARY);
  });

  it('reconnects after the server is killed mid-session', async () => {
    const before = (await pool.pidOf(spec))!;
    expect(before).toBeGreaterThan(0);
    process.kill(-before, 'SIGKILL');
    await waitFor(() => !alive(before));
    // The first call after the death may fail as a transport error (Temporal would retry it); the pool must heal.
    let res = await pool.callTool(spec, 'list_directory', { path: project }).catch(() => undefined);
    if (!res) res = await pool.callTool(spec, 'list_directory', { path: project });
    expect(JSON.stringify(res.content)).toContain('notes.md');
    const after = await pool.pidOf(spec);
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });

  it('leaves no process behind after shutdown, grandchildren included', async () => {
    await pool.listTools(spec);
    const pgid = (await pool.pidOf(spec))!;
    const pids = groupPids(pgid);
    expect(pids.length).toBeGreaterThanOrEqual(2); // npx and the server it started
    await pool.shutdown();
    expect(await waitFor(() => pids.every((p) => !alive(p)))).toBe(true);
  });
});

describe('MCP pool: a server that cannot start', () => {
  it('gives a clear error naming the server, and the others keep working', async () => {
    const pool = new McpPool(silentLogger);
    const config = configWith({
      broken: { command: process.execPath, args: ['-e', 'console.error("boom: missing setting"); process.exit(3)'] },
    });
    const tools = createToolActivities({ config, log: silentLogger, pool });
    approveConfiguredServers(config);
    try {
      const listed = await tools.listTools({ projectDir: project, toolAccess: 'full' });
      expect(listed.unavailable).toEqual([
        {
          server: 'broken',
          error: expect.stringMatching(/MCP server "broken" failed to start.*boom: missing setting/),
        },
      ]);
      expect(listed.tools.map((t) => t.qualifiedName)).toContain('workspace__read_file');
    } finally {
      await pool.shutdown();
    }
  });

  it('names a missing ${VAR} in the server config', () => {
    const config = configWith({
      remote: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${KLEA_TEST_UNSET_TOKEN}' } },
    });
    expect(() => configuredSpec('remote', config.mcp.servers.remote, config, {})).toThrow(
      'mcp.servers.remote.headers.Authorization: the environment variable KLEA_TEST_UNSET_TOKEN is not set'
    );
    const ok = configuredSpec('remote', config.mcp.servers.remote, config, { KLEA_TEST_UNSET_TOKEN: 't0k' });
    expect(ok).toMatchObject({ kind: 'http', headers: { Authorization: 'Bearer t0k' } });
  });
});

describe('tool activities with the workspace server over stdio', () => {
  const config = configWith({});
  let pool: McpPool;
  let tools: ReturnType<typeof createToolActivities>;
  beforeAll(() => {
    pool = new McpPool(silentLogger);
    tools = createToolActivities({ config, log: silentLogger, pool });
  });
  afterAll(async () => pool.shutdown());

  it('offers every workspace tool under full access', async () => {
    const { tools: offered, unavailable } = await tools.listTools({ projectDir: project, toolAccess: 'full' });
    expect(unavailable).toEqual([]);
    expect(offered.map((t) => t.qualifiedName).sort()).toEqual(
      ['edit_file', 'find_files', 'grep', 'list_dir', 'read_file', 'run_command', 'write_file'].map(
        (n) => `workspace__${n}`
      )
    );
    expect(offered.find((t) => t.name === 'write_file')).toMatchObject({ readOnly: false, idempotent: true });
    expect(offered.find((t) => t.name === 'run_command')).toMatchObject({ readOnly: false, idempotent: false });
  });

  it('runs each tool through the stdio server', async () => {
    const call = (tool: string, args: Record<string, unknown>) =>
      tools.callTool({ projectDir: project, toolAccess: 'full', server: 'workspace', tool, args });
    expect(await call('read_file', { path: 'src/app.ts' })).toMatchObject({
      status: 'ok',
      text: 'export const answer = 42;',
    });
    expect((await call('list_dir', {})).text).toContain('src/');
    expect((await call('find_files', { pattern: '*.ts' })).text).toBe('src/app.ts');
    expect((await call('grep', { pattern: 'answer' })).text).toBe('src/app.ts:1: export const answer = 42;');
    expect(await call('write_file', { path: 'out.txt', content: 'x' })).toMatchObject({
      status: 'ok',
      structured: { changed: true },
    });
    expect(await call('edit_file', { path: 'out.txt', old_string: 'x', new_string: 'y' })).toMatchObject({
      status: 'ok',
      structured: { replacements: 1 },
    });
    expect(readFileSync(path.join(project, 'out.txt'), 'utf8')).toBe('y');
    expect(await call('run_command', { command: 'cat out.txt' })).toMatchObject({
      status: 'ok',
      structured: { exit_code: 0, stdout: 'y' },
    });
  });

  it('refuses an outside path without a grant, and passes it with one', async () => {
    const args = { path: path.join(outside, 'canary.txt') };
    const denied = await tools.callTool({
      projectDir: project,
      toolAccess: 'full',
      server: 'workspace',
      tool: 'read_file',
      args,
    });
    expect(denied.status).toBe('error');
    expect(denied.text).toMatch(/^refused: /);
    const [guard] = await tools.checkPaths({ projectDir: project, server: 'workspace', tool: 'read_file', args });
    expect(guard).toMatchObject({ class: 'outside', op: 'read', real: path.join(outside, 'canary.txt') });
    const granted = await tools.callTool({
      projectDir: project,
      toolAccess: 'full',
      server: 'workspace',
      tool: 'read_file',
      args,
      grants: [{ path: guard.real, op: guard.op }],
    });
    expect(granted).toMatchObject({ status: 'ok', text: CANARY });
  });

  it('cuts a 5 MB result and says so', async () => {
    writeFileSync(path.join(project, 'huge.txt'), 'z'.repeat(5 * 1024 * 1024));
    const res = await tools.callTool({
      projectDir: project,
      toolAccess: 'full',
      server: 'workspace',
      tool: 'run_command',
      args: { command: 'cat huge.txt' },
    });
    expect(res.text.length).toBeLessThan(80 * 1024);
    expect(res.text).toMatch(/truncated/);
  });
});

describe('read_only access', () => {
  const config = configWith({});
  let pool: McpPool;
  let tools: ReturnType<typeof createToolActivities>;
  beforeAll(() => {
    pool = new McpPool(silentLogger);
    tools = createToolActivities({ config, log: silentLogger, pool });
  });
  afterAll(async () => pool.shutdown());

  it('offers only read-only tools', async () => {
    const { tools: offered } = await tools.listTools({ projectDir: project, toolAccess: 'read_only' });
    expect(offered.map((t) => t.name).sort()).toEqual(['find_files', 'grep', 'list_dir', 'read_file']);
    expect(offered.every((t) => t.readOnly)).toBe(true);
  });

  it('refuses a forced write_file at dispatch, and the file is untouched', async () => {
    const res = await tools.callTool({
      projectDir: project,
      toolAccess: 'read_only',
      server: 'workspace',
      tool: 'write_file',
      args: { path: 'notes.md', content: 'overwritten' },
    });
    expect(res).toMatchObject({ status: 'refused', text: expect.stringMatching(/read_only/) });
    expect(readFileSync(path.join(project, 'notes.md'), 'utf8')).toBe('hello\n');
    const cmd = await tools.callTool({
      projectDir: project,
      toolAccess: 'read_only',
      server: 'workspace',
      tool: 'run_command',
      args: { command: 'rm notes.md' },
    });
    expect(cmd.status).toBe('refused');
    expect(readFileSync(path.join(project, 'notes.md'), 'utf8')).toBe('hello\n');
  });

  it('refuses a tool nobody offers', async () => {
    const res = await tools.callTool({
      projectDir: project,
      toolAccess: 'full',
      server: 'workspace',
      tool: 'delete_everything',
      args: {},
    });
    expect(res).toMatchObject({ status: 'refused', text: 'no tool named workspace__delete_everything is available' });
  });
});

describe('MCP pool: tool list cache, list_changed, timeouts and progress', () => {
  const fixture = path.join(__dirname, '../fixtures/mcp/dynamic-server.cjs');
  const config = configWith({ dynamic: { command: process.execPath, args: [fixture], timeout_ms: 1000 } });
  const spec = configuredSpec('dynamic', config.mcp.servers.dynamic, config);
  let pool: McpPool;
  beforeAll(() => {
    pool = new McpPool(silentLogger);
  });
  afterAll(async () => pool.shutdown());
  const text = (r: Awaited<ReturnType<McpPool['callTool']>>) => (r.content as Array<{ text: string }>)[0].text;

  it('caches the tool list and refreshes it when the server says it changed', async () => {
    const first = await pool.listTools(spec);
    expect(first.map((t) => t.name)).not.toContain('extra');
    expect(await pool.listTools(spec)).toBe(first);
    expect(text(await pool.callTool(spec, 'list_count', {}))).toBe('1');

    await pool.callTool(spec, 'add_tool', {});
    await waitFor(() => false, 200); // the notification arrives asynchronously
    const refreshed = await pool.listTools(spec);
    expect(refreshed.map((t) => t.name)).toContain('extra');
    expect(text(await pool.callTool(spec, 'list_count', {}))).toBe('2');
  });

  it('fails a call that outlives its timeout, as a transport error', async () => {
    await expect(pool.callTool(spec, 'slow', { ms: 3000, progress: false }, { timeoutMs: 300 })).rejects.toThrow(
      /timed out/i
    );
  });

  it('keeps a call alive while the server reports progress, and passes the progress on', async () => {
    const seen: number[] = [];
    const res = await pool.callTool(
      spec,
      'slow',
      { ms: 1200 },
      { timeoutMs: 500, onProgress: (p) => seen.push(p.progress) }
    );
    expect(text(res)).toBe('slept 1200');
    expect(seen.length).toBeGreaterThanOrEqual(5);
  });

  it("leaves no listener on the caller's signal after each call, and a cancel still stops a call in flight", async () => {
    // An activity makes all its calls under one cancellation signal (`/init` makes a dozen).
    const activity = new AbortController();
    for (let i = 0; i < 12; i++)
      expect(text(await pool.callTool(spec, 'slow', { ms: 1, progress: false }, { signal: activity.signal }))).toBe(
        'slept 1'
      );
    expect(getEventListeners(activity.signal, 'abort')).toHaveLength(0);

    const running = pool.callTool(spec, 'slow', { ms: 5000, progress: false }, { signal: activity.signal });
    await waitFor(() => getEventListeners(activity.signal, 'abort').length > 0, 2000);
    const started = Date.now();
    activity.abort(new Error('the activity was cancelled'));
    await expect(running).rejects.toThrow(/cancelled/);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(getEventListeners(activity.signal, 'abort')).toHaveLength(0);
  });
});

describe('idempotent side effects', () => {
  let pool: McpPool;
  let tools: ReturnType<typeof createToolActivities>;
  beforeAll(() => {
    pool = new McpPool(silentLogger);
    tools = createToolActivities({
      config: configWith({}, { mcp: { workspace: { state_dir: path.join(base, 'state') } } }),
      log: silentLogger,
      pool,
    });
  });
  afterAll(async () => pool.shutdown());

  it('a retried edit with the same idempotency key returns the recorded result and edits once', async () => {
    writeFileSync(path.join(project, 'counter.txt'), 'n=1\n');
    const edit = (key: string) =>
      tools.callTool({
        projectDir: project,
        toolAccess: 'full',
        server: 'workspace',
        tool: 'edit_file',
        args: { path: 'counter.txt', old_string: 'n=1', new_string: 'n=2' },
        idempotencyKey: key,
      });
    const first = await edit('task-x/s1/attempt-1/call-0');
    const retried = await edit('task-x/s1/attempt-1/call-0');
    expect(first).toMatchObject({ status: 'ok', structured: { replacements: 1 } });
    expect(retried).toEqual(first);
    expect(readFileSync(path.join(project, 'counter.txt'), 'utf8')).toBe('n=2\n');
    // A new attempt (a new key) really runs again: here it finds nothing to replace.
    expect((await edit('task-x/s1/attempt-2/call-0')).status).toBe('error');
  });

  it('a retried command with the same key is not run again', async () => {
    const run = (key: string) =>
      tools.callTool({
        projectDir: project,
        toolAccess: 'full',
        server: 'workspace',
        tool: 'run_command',
        args: { command: 'echo x >> runs.log' },
        idempotencyKey: key,
      });
    await run('k-1');
    await run('k-1');
    expect(readFileSync(path.join(project, 'runs.log'), 'utf8')).toBe('x\n');
  });
});

describe('remote MCP servers: a real server on loopback', () => {
  const TOKEN_VAR = 'KLEA_TEST_NOTES_TOKEN';
  const token = `tok-${process.pid}`;
  let streamable: NotesServer;
  let sseOnly: NotesServer;
  beforeAll(async () => {
    process.env[TOKEN_VAR] = token;
    [streamable, sseOnly] = await Promise.all([
      startNotesServer({ token, notes: [{ title: 'Groceries', text: 'oat milk, coffee' }] }),
      startNotesServer({ speaks: ['sse'], notes: [{ title: 'Old', text: 'kept by an HTTP+SSE server' }] }),
    ]);
  });
  afterAll(async () => {
    delete process.env[TOKEN_VAR];
    await Promise.all([streamable?.close(), sseOnly?.close()]);
  });

  /** Tool activities over a pasted `mcp:` block, without the workspace server unless asked for. */
  function toolsFor(mcp: Record<string, unknown>, workspace = false) {
    const config = resolveConfig(
      { mcp: { workspace: { enabled: workspace }, ...mcp }, project: { allowed_roots: [base] } },
      {}
    );
    const pool = new McpPool(silentLogger);
    return { pool, tools: createToolActivities({ config, log: silentLogger, pool }) };
  }
  const call = (
    tools: ReturnType<typeof createToolActivities>,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    toolAccess: 'full' | 'read_only' = 'full'
  ) => tools.callTool({ projectDir: project, toolAccess, server, tool, args });

  it('a VS Code `type: http` entry: tools listed with their annotations, called with the configured header', async () => {
    const { pool, tools } = toolsFor({
      servers: {
        notes: {
          type: 'http',
          url: `${streamable.origin}/mcp`,
          headers: { Authorization: `Bearer \${env:${TOKEN_VAR}}` },
        },
      },
      inputs: [],
    });
    try {
      const full = await tools.listTools({ projectDir: project, toolAccess: 'full' });
      expect(full.unavailable).toEqual([]);
      expect(full.tools.map((t) => [t.qualifiedName, t.readOnly, t.idempotent])).toEqual([
        ['notes__search_notes', true, true],
        ['notes__add_note', false, false], // no annotations: taken as a tool that writes
      ]);
      const readOnly = await tools.listTools({ projectDir: project, toolAccess: 'read_only' });
      expect(readOnly.tools.map((t) => t.qualifiedName)).toEqual(['notes__search_notes']);

      expect(await call(tools, 'notes', 'search_notes', { query: 'milk' })).toMatchObject({
        status: 'ok',
        text: 'Groceries: oat milk, coffee',
      });
      expect(await call(tools, 'notes', 'add_note', { title: 'Call Ana', text: 'about the lease' })).toMatchObject({
        status: 'ok',
        text: 'added note "Call Ana" (2 in all)',
      });
      expect(await call(tools, 'notes', 'add_note', { title: 'x', text: 'y' }, 'read_only')).toMatchObject({
        status: 'refused',
      });
      expect(streamable.notes.map((n) => n.title)).toEqual(['Groceries', 'Call Ana']);
      expect(streamable.requests.length).toBeGreaterThan(0);
      expect(streamable.requests.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);
    } finally {
      await pool.shutdown();
    }
  });

  it('a `type: sse` entry connects over HTTP+SSE', async () => {
    const { pool, tools } = toolsFor({ mcpServers: { old: { type: 'sse', url: `${sseOnly.origin}/sse` } } });
    try {
      expect(await call(tools, 'old', 'search_notes', { query: 'kept' })).toMatchObject({
        status: 'ok',
        text: 'Old: kept by an HTTP+SSE server',
      });
      expect(new Set(sseOnly.requests.map((r) => r.transport))).toEqual(new Set(['sse']));
    } finally {
      await pool.shutdown();
    }
  });

  it('a url without type (Cursor) speaks streamable HTTP, and falls back to SSE for a server that refuses it', async () => {
    const { pool, tools } = toolsFor({
      mcpServers: {
        current: { url: `${streamable.origin}/mcp`, headers: { Authorization: `Bearer \${${TOKEN_VAR}}` } },
        old: { url: `${sseOnly.origin}/sse` },
      },
    });
    const before = { streamable: streamable.requests.length, sse: sseOnly.requests.length };
    try {
      const listed = await tools.listTools({ projectDir: project, toolAccess: 'full' });
      expect(listed.unavailable).toEqual([]);
      expect(listed.tools.map((t) => t.qualifiedName).sort()).toEqual([
        'current__add_note',
        'current__search_notes',
        'old__add_note',
        'old__search_notes',
      ]);
      expect((await call(tools, 'old', 'search_notes', { query: 'old' })).status).toBe('ok');
      expect(streamable.requests.slice(before.streamable).every((r) => r.transport === 'streamable-http')).toBe(true);
      expect(sseOnly.requests.length).toBeGreaterThan(before.sse);
    } finally {
      await pool.shutdown();
    }
  });

  it('a `type: http` entry does not fall back: the error names the server and the URL, not its query string', async () => {
    const { pool, tools } = toolsFor({
      mcpServers: { old: { type: 'http', url: `${sseOnly.origin}/sse?api_key=s3cret` } },
    });
    try {
      const listed = await tools.listTools({ projectDir: project, toolAccess: 'full' });
      expect(listed.tools).toEqual([]);
      expect(listed.unavailable).toEqual([
        {
          server: 'old',
          error: expect.stringMatching(
            /^MCP server "old" could not be reached at http:\/\/127\.0\.0\.1:\d+\/sse\?…: streamable HTTP: HTTP 404, /
          ),
        },
      ]);
      expect(listed.unavailable[0].error).not.toContain('s3cret');
    } finally {
      await pool.shutdown();
    }
  });

  it('a server that forgot the session (restarted) gets a new one, and the call is made once', async () => {
    const { pool, tools } = toolsFor({
      servers: {
        notes: { type: 'http', url: `${streamable.origin}/mcp`, headers: { Authorization: `Bearer ${token}` } },
      },
    });
    try {
      expect((await call(tools, 'notes', 'search_notes', { query: 'milk' })).status).toBe('ok');
      const before = streamable.notes.length;
      streamable.forgetSessions();
      expect(await call(tools, 'notes', 'add_note', { title: 'After restart', text: 'z' })).toMatchObject({
        status: 'ok',
      });
      expect(streamable.notes.length).toBe(before + 1);
    } finally {
      await pool.shutdown();
    }
  });

  it('a server whose variable is not set is reported by name, and the others keep working', async () => {
    const { pool, tools } = toolsFor(
      {
        mcpServers: {
          broken: { type: 'http', url: '${KLEA_TEST_UNSET_BASE}/mcp' },
          notes: { type: 'http', url: `${streamable.origin}/mcp`, headers: { Authorization: `Bearer ${token}` } },
        },
      },
      true
    );
    try {
      const listed = await tools.listTools({ projectDir: project, toolAccess: 'read_only' });
      expect(listed.unavailable).toEqual([
        { server: 'broken', error: 'mcp.servers.broken.url: the environment variable KLEA_TEST_UNSET_BASE is not set' },
      ]);
      expect(listed.tools.map((t) => t.qualifiedName)).toEqual(
        expect.arrayContaining(['workspace__read_file', 'notes__search_notes'])
      );
    } finally {
      await pool.shutdown();
    }
  });
});
