/** How a configured MCP server's settings become what the worker starts or reaches. */
import fs, { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkpointDir, configuredSpec, ownStatePaths, workspaceSpec } from '../../activities/mcp/servers';
import { resolveConfig } from '../../common/config';

const dir = mkdtempSync(path.join(os.tmpdir(), 'klea-mcp-spec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function specOf(server: Record<string, unknown>, env: NodeJS.ProcessEnv = {}, project = dir) {
  const config = resolveConfig({ project: { dir: project }, mcp: { mcpServers: { s: server } } }, {});
  return configuredSpec('s', config.mcp.servers.s, config, env);
}

describe('configured MCP servers', () => {
  it('expands the variables Claude Code, Cursor and VS Code write', () => {
    const spec = specOf(
      {
        command: '${userHome}/bin/server',
        args: ['--root', '${workspaceFolder}', '--db', '${DB_PATH:-data.db}', '--token', '${env:TOKEN}'],
        env: { LEVEL: '${LOG_LEVEL}' },
      },
      { TOKEN: 't0k', LOG_LEVEL: 'debug' }
    );
    expect(spec).toMatchObject({
      kind: 'stdio',
      command: `${os.homedir()}/bin/server`,
      args: ['--root', dir, '--db', 'data.db', '--token', 't0k'],
      env: expect.objectContaining({ LEVEL: 'debug' }),
    });
  });

  it('names the setting whose variable is not set', () => {
    expect(() =>
      specOf({ type: 'http', url: 'https://x.dev/mcp', headers: { Authorization: 'Bearer ${env:NOPE}' } })
    ).toThrow('mcp.servers.s.headers.Authorization: the environment variable NOPE is not set');
  });

  it("loads envFile (VS Code, Cursor) under the entry's own env", () => {
    writeFileSync(path.join(dir, '.env'), '# keys\nAPI_KEY=from-file\nexport REGION="eu west"\nLEVEL=info\n');
    const spec = specOf({ type: 'stdio', command: 'x', envFile: '${workspaceFolder}/.env', env: { LEVEL: 'debug' } });
    expect(spec).toMatchObject({
      env: expect.objectContaining({ API_KEY: 'from-file', REGION: 'eu west', LEVEL: 'debug' }),
    });
    expect(() => specOf({ command: 'x', envFile: 'missing.env' })).toThrow(
      /^mcp\.servers\.s\.envFile: cannot read .*missing\.env: ENOENT/
    );
  });

  it('connects each remote type over its transport; a url without type may fall back to SSE', () => {
    expect(specOf({ type: 'http', url: 'https://x.dev/mcp' })).toMatchObject({ kind: 'http', sseFallback: false });
    expect(specOf({ type: 'streamable-http', url: 'https://x.dev/mcp' })).toMatchObject({
      kind: 'http',
      sseFallback: false,
    });
    expect(specOf({ type: 'sse', url: 'https://x.dev/sse' })).toMatchObject({ kind: 'sse', url: 'https://x.dev/sse' });
    expect(specOf({ url: 'https://x.dev/mcp' })).toMatchObject({ kind: 'http', sseFallback: true });
  });

  it('checks a url built from variables once expanded, without printing what it expanded to', () => {
    expect(specOf({ type: 'http', url: '${BASE:-https://api.example.com}/mcp' })).toMatchObject({
      url: 'https://api.example.com/mcp',
    });
    expect(() => specOf({ type: 'http', url: '${BASE}/mcp' }, { BASE: 'secret-token' })).toThrow(
      'mcp.servers.s.url: "${BASE}/mcp" does not expand to an http(s) URL'
    );
  });
});

describe('the workspace server', () => {
  it('keeps checkpoints in the data directory, bounded by tools.checkpoints.max_mb, as Klea’s own state', () => {
    const data = path.join(dir, 'data');
    const had = process.env.KLEA_DATA_DIR;
    process.env.KLEA_DATA_DIR = data;
    // The server's script need not be built for its arguments to be told.
    const exists = jest.spyOn(fs, 'existsSync').mockReturnValue(true);
    try {
      const config = resolveConfig({ tools: { checkpoints: { max_mb: 256 } } }, {});
      expect(checkpointDir()).toBe(path.join(data, 'checkpoints'));
      const spec = workspaceSpec(config, dir, 'grant-key');
      if (spec.kind !== 'stdio') throw new Error('not stdio');
      const at = spec.args.indexOf('--checkpoint-dir');
      expect(spec.args.slice(at, at + 4)).toEqual([
        '--checkpoint-dir',
        path.join(data, 'checkpoints'),
        '--checkpoint-max-mb',
        '256',
      ]);
      expect(ownStatePaths(config)).toContain(path.join(data, 'checkpoints'));
      expect(resolveConfig({}, {}).tools.checkpoints.max_mb).toBe(1024);
    } finally {
      exists.mockRestore();
      if (had === undefined) delete process.env.KLEA_DATA_DIR;
      else process.env.KLEA_DATA_DIR = had;
    }
  });
});
