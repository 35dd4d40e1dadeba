import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ConfigError, ConfigSchema, resolveConfig } from '../../common/config';

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
      }
    );
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

  it('validates mcp.servers in the common mcpServers shape', () => {
    const c = resolveConfig(
      { mcp: { servers: { fs: { command: 'npx', args: ['-y', 'x'] }, web: { url: 'https://example.com/mcp' } } } },
      {}
    );
    expect(c.mcp.servers.fs).toMatchObject({ command: 'npx', args: ['-y', 'x'], env: {} });
    expect(() => resolveConfig({ mcp: { servers: { fs: { args: [] } } } }, {})).toThrow(/mcp\.servers\.fs/);
  });
});
