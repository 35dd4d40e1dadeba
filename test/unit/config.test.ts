import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ConfigSchema, outputLimit, SMALL_MAX_OUTPUT_TOKENS, SMALL_PLAN_OUTPUT_TOKENS } from '../../common/config';
import { ConfigError, resolveConfig } from '../../common/config-resolve';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = resolveConfig({}, {});
    expect(c.general.memory).toEqual({ summarisation_threshold_chars: 40000, num_history_chars: 20000 });
    expect(c.temporal).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', task_queue: 'klea' });
    expect(c.api).toMatchObject({ host: '127.0.0.1', port: 8080, token: null });
    expect(c.general).toMatchObject({ mode: 'general', tool_access: 'full', review: 'plan' });
    expect(c.mcp.workspace.enabled).toBe(true);
  });

  it('klea.example.yaml is valid and states every default', () => {
    const example = parse(readFileSync(path.join(__dirname, '../../klea.example.yaml'), 'utf8'));
    expect(resolveConfig(example, {})).toEqual(resolveConfig({}, {}));
    expect(ConfigSchema.parse(example)).toEqual(ConfigSchema.parse({}));
  });

  it('names an unknown key in one line', () => {
    expect(() => resolveConfig({ general: { memroy: {} } }, {})).toThrow(
      new ConfigError('klea.yaml: general: unknown key "memroy"')
    );
  });

  it('names a key with the wrong type and what was expected', () => {
    let message = '';
    try {
      resolveConfig({ general: { memory: { num_history_chars: 'lots' } } }, {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^klea\.yaml: general\.memory\.num_history_chars: .*expected number/);
    expect(message.split('\n')).toHaveLength(1);
  });

  it('names a bad enum value with the allowed ones', () => {
    expect(() => resolveConfig({ general: { tool_access: 'some' } }, {})).toThrow(
      /general\.tool_access: .*"full"\|"read_only"|general\.tool_access: .*full.*read_only/
    );
  });

  it('lets the environment override the file', () => {
    const c = resolveConfig(
      { model: { name: 'from-file' }, api: { port: 9000 } },
      {
        KLEA_MODEL: 'from-env',
        KLEA_API_PORT: '9191',
        TEMPORAL_ADDRESS: 'temporal:7233',
        OPENAI_BASE_URL: 'http://127.0.0.1:1234/v1',
        KLEA_WORKSPACE_STATE_DIR: '/var/lib/klea/workspace-state',
      }
    );
    expect(c.mcp.workspace.state_dir).toBe('/var/lib/klea/workspace-state');
    expect(c.model.name).toBe('from-env');
    expect(c.api.port).toBe(9191);
    expect(c.temporal.address).toBe('temporal:7233');
    expect(c.model.base_url).toBe('http://127.0.0.1:1234/v1');
  });

  it('names the environment variable when its value is bad', () => {
    expect(() => resolveConfig({}, { KLEA_API_PORT: 'eighty' })).toThrow(
      'environment: KLEA_API_PORT: expected a port number (0-65535), got "eighty"'
    );
    expect(() => resolveConfig({}, { OPENAI_BASE_URL: 'not a url' })).toThrow(/^environment: OPENAI_BASE_URL: /);
  });

  it('model.structured_output: auto by default, set in the file or by KLEA_STRUCTURED_OUTPUT, checked by name', () => {
    expect(resolveConfig({}, {}).model.structured_output).toBe('auto');
    expect(resolveConfig({ model: { structured_output: 'tool_calling' } }, {}).model.structured_output).toBe(
      'tool_calling'
    );
    expect(
      resolveConfig({ model: { structured_output: 'tool_calling' } }, { KLEA_STRUCTURED_OUTPUT: 'json_schema' }).model
        .structured_output
    ).toBe('json_schema');
    expect(() => resolveConfig({}, { KLEA_STRUCTURED_OUTPUT: 'grammar' })).toThrow(
      /^environment: KLEA_STRUCTURED_OUTPUT: .*"auto"\|"tool_calling"\|"json_schema"/
    );
  });

  it('model.max_output_tokens: 512 for a small model unless set (768 for a plan), none for a standard one, checked by name', () => {
    const limit = (file: Record<string, unknown>, env: Record<string, string> = {}) =>
      outputLimit(resolveConfig({ model: file }, env).model);
    expect(limit({})).toBeUndefined();
    expect(limit({ profile: 'small' })).toBe(SMALL_MAX_OUTPUT_TOKENS);
    expect(limit({ profile: 'small', max_output_tokens: 2048 })).toBe(2048);
    const small = resolveConfig({ model: { profile: 'small' } }, {}).model;
    expect(outputLimit(small, 'write_plan')).toBe(SMALL_PLAN_OUTPUT_TOKENS);
    expect(SMALL_PLAN_OUTPUT_TOKENS).toBeGreaterThan(SMALL_MAX_OUTPUT_TOKENS);
    expect(outputLimit(small, 'pick_tools')).toBe(SMALL_MAX_OUTPUT_TOKENS);
    expect(outputLimit({ ...small, max_output_tokens: 300 }, 'write_plan')).toBe(300);
    expect(outputLimit(resolveConfig({}, {}).model, 'write_plan')).toBeUndefined();
    expect(limit({}, { KLEA_MAX_OUTPUT_TOKENS: '1024' })).toBe(1024);
    expect(() => resolveConfig({}, { KLEA_MAX_OUTPUT_TOKENS: 'lots' })).toThrow(
      /^environment: KLEA_MAX_OUTPUT_TOKENS: /
    );
    expect(() => resolveConfig({ model: { max_output_tokens: 0 } }, {})).toThrow(/model\.max_output_tokens: /);
  });

  it('validates mcp.servers in the common mcpServers shape', () => {
    const c = resolveConfig(
      { mcp: { servers: { fs: { command: 'npx', args: ['-y', 'x'] }, web: { url: 'https://example.com/mcp' } } } },
      {}
    );
    expect(c.mcp.servers.fs).toMatchObject({ command: 'npx', args: ['-y', 'x'], env: {} });
    expect(() => resolveConfig({ mcp: { servers: { fs: { args: [] } } } }, {})).toThrow(/mcp\.servers\.fs/);
  });

  describe('MCP server configs pasted from other clients', () => {
    /** A JSON config file pasted under `mcp:` in klea.yaml, indented as an editor would indent it. */
    const pasted = (json: string) => parse(`general:\n  mode: general\nmcp:\n  ${json.split('\n').join('\n  ')}\n`);
    const errorOf = (file: unknown) => {
      try {
        resolveConfig(file, {});
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('expected a configuration error');
    };

    it("loads Claude Code's .mcp.json as it is", () => {
      const file = pasted(`{
  "mcpServers": {
    "filesystem": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "\${HOME}/notes"],
      "env": {}
    },
    "api-server": {
      "type": "http",
      "url": "\${API_BASE_URL:-https://api.example.com}/mcp",
      "headers": { "Authorization": "Bearer \${API_KEY}" }
    },
    "legacy": { "type": "sse", "url": "https://sse.example.com/sse", "headers": { "X-API-Key": "\${LEGACY_KEY}" } }
  }
}`);
      const { servers } = resolveConfig(file, { KLEA_MODEL: 'from-env' }).mcp;
      expect(servers).toEqual({
        filesystem: {
          type: 'stdio',
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-filesystem', '${HOME}/notes'],
          env: {},
          disabled: false,
        },
        'api-server': {
          type: 'http',
          url: '${API_BASE_URL:-https://api.example.com}/mcp',
          headers: { Authorization: 'Bearer ${API_KEY}' },
          disabled: false,
        },
        legacy: {
          type: 'sse',
          url: 'https://sse.example.com/sse',
          headers: { 'X-API-Key': '${LEGACY_KEY}' },
          disabled: false,
        },
      });
    });

    it("loads Cursor's mcp.json as it is: a url without type stays untyped (streamable HTTP, then SSE)", () => {
      const file = pasted(`{
  "mcpServers": {
    "sqlite": { "command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "\${workspaceFolder}/app.db"], "envFile": ".env" },
    "remote": { "url": "http://localhost:3000/mcp", "headers": { "API_KEY": "\${env:REMOTE_API_KEY}" } }
  }
}`);
      const { servers } = resolveConfig(file, {}).mcp;
      expect(servers.sqlite).toMatchObject({ type: 'stdio', command: 'uvx', envFile: '.env' });
      expect(servers.remote).toEqual({
        url: 'http://localhost:3000/mcp',
        headers: { API_KEY: '${env:REMOTE_API_KEY}' },
        disabled: false,
      });
    });

    it("loads VS Code's .vscode/mcp.json as it is, tabs, inputs, gallery names and editor-only keys included", () => {
      const file = pasted(
        [
          '{',
          '\t"inputs": [',
          '\t\t{ "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true }',
          '\t],',
          '\t"servers": {',
          '\t\t"memory": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],',
          '\t\t\t"envFile": "${workspaceFolder}/.env", "dev": { "watch": "src/**/*.ts" } },',
          '\t\t"io.github.github/github-mcp-server": { "type": "http", "url": "https://api.githubcopilot.com/mcp/",',
          '\t\t\t"gallery": "https://api.mcp.github.com", "version": "1.0.3" },',
          '\t\t"everything": { "type": "sse", "url": "http://localhost:3001/sse" },',
          '\t\t"fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"], "sandboxEnabled": false },',
          '\t}',
          '}',
        ].join('\n')
      );
      const { servers } = resolveConfig(file, {}).mcp;
      expect(Object.keys(servers)).toEqual(['memory', 'io.github.github/github-mcp-server', 'everything', 'fetch']);
      expect(servers.memory).toMatchObject({ type: 'stdio', command: 'npx', envFile: '${workspaceFolder}/.env' });
      expect(servers['io.github.github/github-mcp-server']).toMatchObject({
        type: 'http',
        url: 'https://api.githubcopilot.com/mcp/',
      });
      expect(servers.everything).toMatchObject({ type: 'sse', url: 'http://localhost:3001/sse' });
    });

    it("docs/tools.md's pasted examples load as they are shown", () => {
      const page = readFileSync(path.join(__dirname, '../../docs/tools.md'), 'utf8');
      const section = page.slice(page.indexOf('## More MCP servers'));
      const examples = [...section.matchAll(/```yaml\n(mcp:[\s\S]*?)```/g)].map((m) => parse(m[1]));
      expect(examples).toHaveLength(2);
      expect(Object.keys(resolveConfig(examples[0], {}).mcp.servers)).toEqual(['filesystem', 'api-server']);
      expect(Object.keys(resolveConfig(examples[1], {}).mcp.servers)).toEqual([
        'memory',
        'io.github.github/github-mcp-server',
        'everything',
      ]);
    });

    it('merges mcp.servers and mcp.mcpServers, and names a server defined in both', () => {
      const c = resolveConfig(
        {
          mcp: {
            servers: { a: { command: 'a' } },
            mcpServers: { b: { type: 'streamable-http', url: 'https://b.dev' } },
          },
        },
        {}
      );
      expect(Object.keys(c.mcp.servers)).toEqual(['a', 'b']);
      expect(c.mcp.servers.b).toMatchObject({ type: 'streamable-http' });
      expect(errorOf({ mcp: { servers: { a: { command: 'a' } }, mcpServers: { a: { command: 'b' } } } })).toBe(
        'klea.yaml: mcp.mcpServers.a: also defined under mcp.servers'
      );
    });

    it('names a bad type, and says which types there are', () => {
      expect(errorOf({ mcp: { mcpServers: { live: { type: 'websocket', url: 'wss://x.dev/mcp' } } } })).toBe(
        'klea.yaml: mcp.mcpServers.live.type: expected one of "stdio", "http", "streamable-http", "sse" ' +
          '(or no type: command means stdio, url means streamable HTTP)'
      );
      expect(errorOf({ mcp: { servers: { s: { type: 'stdio', url: 'https://x.dev' } } } })).toMatch(
        /^klea\.yaml: mcp\.servers\.s\.command: missing/
      );
      expect(errorOf({ mcp: { servers: { s: { type: 'http', url: 'not a url' } } } })).toBe(
        'klea.yaml: mcp.servers.s.url: expected an http(s) URL'
      );
      expect(errorOf({ mcp: { servers: { s: { type: 'http', url: 'https://x.dev', headerz: {} } } } })).toBe(
        'klea.yaml: mcp.servers.s: unknown key "headerz"'
      );
    });

    it('refuses, naming the key, what would change the server Klea runs', () => {
      expect(
        errorOf({ mcp: { servers: { gh: { type: 'http', url: 'https://x.dev', headers: { A: '${input:token}' } } } } })
      ).toMatch(/^klea\.yaml: mcp\.servers\.gh\.headers\.A: \$\{input:token\} is a value VS Code prompts for/);
      expect(errorOf({ mcp: { servers: { f: { command: 'x', sandboxEnabled: true } } } })).toMatch(
        /^klea\.yaml: mcp\.servers\.f\.sandboxEnabled: Klea does not sandbox/
      );
      expect(
        errorOf({ mcp: { servers: { r: { type: 'http', url: 'https://x.dev', oauth: { clientId: 'c' } } } } })
      ).toMatch(/^klea\.yaml: mcp\.servers\.r\.oauth: Klea does not sign in/);
      expect(errorOf({ mcp: { servers: { r: { command: 'x', args: ['${command:pickFile}'] } } } })).toMatch(
        /^klea\.yaml: mcp\.servers\.r\.args\.0: \$\{command:pickFile\} is not a variable Klea expands/
      );
    });

    it('names a server name the model could not tell apart, or that is the bundled one', () => {
      expect(errorOf({ mcp: { servers: { 'git hub': { command: 'a' }, git_hub: { command: 'b' } } } })).toBe(
        'klea.yaml: mcp.servers.git_hub: the model would see this server\'s tools under the same name as "git hub"\'s (git_hub__...)'
      );
      expect(errorOf({ mcp: { mcpServers: { workspace: { command: 'a' } } } })).toBe(
        'klea.yaml: mcp.mcpServers.workspace: bad name: that is (in any letter case) the bundled server, configured under mcp.workspace'
      );
    });

    it("attack: a server named to pass its tools off as built-in ones, or as another server's, is refused", () => {
      for (const name of ['Workspace', 'WORKSPACE'])
        expect(errorOf({ mcp: { mcpServers: { [name]: { command: 'a' } } } })).toMatch(/the bundled server/);
      for (const name of ['git__hub', 'git._hub', 'a__'])
        expect(errorOf({ mcp: { servers: { [name]: { command: 'a' } } } })).toMatch(/no two underscores in a row/);
      expect(errorOf({ mcp: { servers: { GitHub: { command: 'a' }, github: { command: 'b' } } } })).toMatch(
        /the model would see this server's tools under the same name as "GitHub"'s/
      );
    });
  });
});

describe('sandbox and file settings', () => {
  it('tools.protected_patterns, tools.max_file_mb and tools.sandbox.scan_limit are validated by name', () => {
    expect(() => resolveConfig({ tools: { protected_patterns: '.git/config' } }, {})).toThrow(
      'klea.yaml: tools.protected_patterns: Invalid input: expected array, received string'
    );
    expect(() => resolveConfig({ tools: { sandbox: { scan_limit: 5 } } }, {})).toThrow(
      'klea.yaml: tools.sandbox.scan_limit: Too small: expected number to be >=100'
    );
    expect(() => resolveConfig({ tools: { max_file_mb: 0 } }, {})).toThrow(/klea\.yaml: tools\.max_file_mb: Too small/);
    const c = resolveConfig({ tools: { protected_patterns: [], max_file_mb: 5 } }, {});
    expect(c.tools.protected_patterns).toEqual([]);
    expect(resolveConfig({}, {}).tools.protected_patterns).toContain('.git/hooks/**');
  });
});
