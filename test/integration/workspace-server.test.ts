/**
 * The bundled workspace MCP server, over an in-memory transport and over stdio (as any MCP client would start
 * it): every tool, every refusal, and a canary file outside the root that no ungranted call can read or change.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { createCommandSandbox } from '../../tools/workspace/command-sandbox';
import { runCommand } from '../../tools/workspace/commands';
import { createWorkspaceServer } from '../../tools/workspace/create-server';
import { atomicWrite, mkdirsChecked, readText, walk } from '../../tools/workspace/fs-ops';
import { createPathGate } from '../../tools/workspace/path-gate';
import { GRANT_KEY_ENV, GRANTS_META_KEY } from '../../common/workspace-protocol';
import { signGrants } from '../../runtime/grant-signing';
import { until } from '../support/until';

const KEY = 'test-grant-key-0123456789';
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-ws-')));
let root: string;
let canary: string;
let client: Client;

const CANARY_TEXT = 'canary: must never be read or changed';
/** Secrets in the server's environment that no command may see (and one harmless setting that it may). */
const SERVER_ENV = {
  SOME_API_KEY: 'k1',
  GITHUB_TOKEN: 'k2',
  DB_PASSWORD: 'k3',
  DATABASE_URL: 'postgres://user:pw@db/x',
  HARMLESS_SETTING: 'visible',
};

function textOf(res: Awaited<ReturnType<Client['callTool']>>): string {
  return (res.content as Array<{ type: string; text: string }>).map((c) => c.text).join('\n');
}
async function call(name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) {
  return client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
}

beforeAll(async () => {
  root = path.join(base, 'proj');
  mkdirSync(path.join(root, 'src/lib'), { recursive: true });
  mkdirSync(path.join(root, 'node_modules/dep'), { recursive: true });
  mkdirSync(path.join(root, '.git'), { recursive: true });
  writeFileSync(path.join(root, 'src/app.ts'), 'export const a = 1;\n// TODO: more\nexport const b = 2;\n');
  writeFileSync(path.join(root, 'src/lib/util.ts'), 'export function util() {\n  return 42; // TODO\n}\n');
  writeFileSync(path.join(root, 'README.md'), '# Demo\n');
  writeFileSync(path.join(root, '.env'), 'API_KEY=secret-value\n');
  writeFileSync(path.join(root, 'node_modules/dep/index.js'), '// TODO in dependency\n');
  writeFileSync(path.join(root, '.git/config'), '[core] TODO\n');
  writeFileSync(
    path.join(root, 'big.txt'),
    Array.from({ length: 5000 }, (_, i) => `line ${i + 1} ${'x'.repeat(60)}`).join('\n')
  );
  writeFileSync(path.join(root, 'binary.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
  mkdirSync(path.join(base, 'outside'));
  canary = path.join(base, 'outside/canary.txt');
  writeFileSync(canary, CANARY_TEXT);
  symlinkSync('../outside', path.join(root, 'escape'));
});

afterAll(() => {
  expect(readFileSync(canary, 'utf8')).toBe(CANARY_TEXT);
  rmSync(base, { recursive: true, force: true });
});

describe.each(['in-memory', 'stdio'] as const)('over %s', (transport) => {
  beforeAll(async () => {
    client = new Client({ name: 'test', version: '1' });
    if (transport === 'in-memory') {
      Object.assign(process.env, SERVER_ENV);
      const server = createWorkspaceServer({
        root,
        grantKey: KEY,
        homeDir: path.join(base, 'home'),
        limits: { readBytes: 4096 },
      });
      const [clientT, serverT] = InMemoryTransport.createLinkedPair();
      await Promise.all([server.connect(serverT), client.connect(clientT)]);
    } else {
      const script = path.join(__dirname, '../../dist/tools/workspace/server.js');
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [script, '--root', root, '--max-read-bytes', '4096'],
          env: { PATH: process.env.PATH ?? '', HOME: path.join(base, 'home'), [GRANT_KEY_ENV]: KEY, ...SERVER_ENV },
        })
      );
    }
  });
  afterAll(async () => {
    await client.close();
    for (const k of Object.keys(SERVER_ENV)) delete process.env[k];
  });

  describe('workspace server: the tool list', () => {
    it('offers the seven tools with honest annotations', async () => {
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      expect(Object.keys(byName).sort()).toEqual([
        'edit_file',
        'find_files',
        'grep',
        'list_dir',
        'read_file',
        'run_command',
        'write_file',
      ]);
      for (const name of ['read_file', 'list_dir', 'find_files', 'grep'])
        expect(byName[name].annotations?.readOnlyHint).toBe(true);
      expect(byName.write_file.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
      });
      expect(byName.edit_file.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
      });
      expect(byName.run_command.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      });
      expect(byName.read_file.inputSchema.required).toEqual(['path']);
      for (const t of tools) expect(t.description!.length).toBeGreaterThan(40);
    });
  });

  describe('workspace server: read tools', () => {
    it('read_file returns the text, and a line range', async () => {
      expect(textOf(await call('read_file', { path: 'src/app.ts' }))).toBe(
        'export const a = 1;\n// TODO: more\nexport const b = 2;'
      );
      expect(textOf(await call('read_file', { path: 'src/app.ts', start_line: 2, end_line: 2 }))).toBe('// TODO: more');
    });

    it('read_file cuts a large file with a marker that says how to read on', async () => {
      const res = await call('read_file', { path: 'big.txt' });
      const t = textOf(res);
      expect(t).toMatch(
        /\[truncated: showing lines 1-\d+ of 5000 \(size cap 4096 bytes\); read on with start_line=\d+\]$/
      );
      expect(res.structuredContent).toMatchObject({ truncated: true, total_lines: 5000 });
    });

    it('read_file says a binary file is binary, and a directory is a directory', async () => {
      expect(textOf(await call('read_file', { path: 'binary.bin' }))).toMatch(/binary file \(6 bytes\)/);
      const dir = await call('read_file', { path: 'src' });
      expect(dir.isError).toBe(true);
      expect(textOf(dir)).toMatch(/is a directory: use list_dir/);
    });

    it('read_file of a missing file is an error result naming it', async () => {
      const res = await call('read_file', { path: 'nope.txt' });
      expect(res.isError).toBe(true);
      expect(textOf(res)).toBe('error: no such file or directory: nope.txt');
    });

    it('list_dir lists entries, directories with a slash and links with their target', async () => {
      const t = textOf(await call('list_dir', { path: '.' }));
      expect(t.split('\n')).toEqual(expect.arrayContaining(['src/', 'README.md', 'escape -> ../outside', '.env']));
      const deep = textOf(await call('list_dir', { path: 'src', depth: 2 }));
      expect(deep.split('\n')).toEqual(['app.ts', 'lib/', 'lib/util.ts']);
      // An empty path (a small model's "here") is the project, as "." is.
      expect(textOf(await call('list_dir', { path: '' }))).toBe(t);
    });

    it('find_files matches globs and skips .git and node_modules', async () => {
      expect(textOf(await call('find_files', { pattern: '**/*.ts' })).split('\n')).toEqual([
        'src/app.ts',
        'src/lib/util.ts',
      ]);
      expect(textOf(await call('find_files', { pattern: '*.js' }))).toBe('no files match *.js');
    });

    it('grep finds matches with file and line, skipping .git, node_modules and sensitive files', async () => {
      const t = textOf(await call('grep', { pattern: 'TODO' }));
      expect(t.split('\n')).toEqual(['src/app.ts:2: // TODO: more', 'src/lib/util.ts:2:   return 42; // TODO']);
      expect(textOf(await call('grep', { pattern: 'secret-value' }))).toMatch(/no matches/);
    });

    it('grep honours its result cap and reports a bad regex clearly', async () => {
      const capped = textOf(await call('grep', { pattern: 'line', path: 'big.txt', max_results: 3 }));
      expect(capped.split('\n')).toHaveLength(4);
      expect(capped).toMatch(/more than 3 matches/);
      const bad = await call('grep', { pattern: '(' });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/invalid regular expression/);
    });
  });

  describe('workspace server: write tools', () => {
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');

    it('write_file creates a file atomically and reports the hashes; the same write again is a no-op', async () => {
      const first = await call('write_file', { path: `out/new-${transport}.txt`, content: 'hello\n' });
      expect(first.structuredContent).toMatchObject({
        created: true,
        changed: true,
        sha256_before: null,
        sha256_after: sha('hello\n'),
      });
      expect(readFileSync(path.join(root, `out/new-${transport}.txt`), 'utf8')).toBe('hello\n');
      const mtime = statSync(path.join(root, `out/new-${transport}.txt`)).mtimeMs;
      const again = await call('write_file', { path: `out/new-${transport}.txt`, content: 'hello\n' });
      expect(again.structuredContent).toMatchObject({
        created: false,
        changed: false,
        sha256_before: sha('hello\n'),
        sha256_after: sha('hello\n'),
      });
      expect(textOf(again)).toMatch(/nothing changed/);
      expect(statSync(path.join(root, `out/new-${transport}.txt`)).mtimeMs).toBe(mtime);
      expect(readFileSync(path.join(root, `out/new-${transport}.txt`), 'utf8')).toBe('hello\n');
    });

    it("write_file keeps a file's final newline when the content leaves it out: the same text is no change", async () => {
      const file = `out/newline-${transport}.py`;
      await call('write_file', { path: file, content: 'x = 1\n' });
      const same = await call('write_file', { path: file, content: 'x = 1' });
      expect(same.structuredContent).toMatchObject({ changed: false });
      await call('write_file', { path: file, content: 'x = 2' });
      expect(readFileSync(path.join(root, file), 'utf8')).toBe('x = 2\n');
      // A new file, or one without a final newline, is written as given.
      await call('write_file', { path: `${file}.txt`, content: 'no newline' });
      expect(readFileSync(path.join(root, `${file}.txt`), 'utf8')).toBe('no newline');
    });

    it('write_file keeps the mode of the file it replaces and leaves no temp file', async () => {
      writeFileSync(path.join(root, 'script.sh'), '#!/bin/sh\n');
      chmodSync(path.join(root, 'script.sh'), 0o755);
      await call('write_file', { path: 'script.sh', content: '#!/bin/sh\necho hi\n' });
      expect(statSync(path.join(root, 'script.sh')).mode & 0o777).toBe(0o755);
      expect(textOf(await call('find_files', { pattern: '*.tmp' }))).toMatch(/no files match/);
    });

    it('edit_file replaces a unique string and reports the hashes', async () => {
      writeFileSync(path.join(root, 'edit.txt'), 'alpha\nbeta\ngamma\n');
      const res = await call('edit_file', { path: 'edit.txt', old_string: 'beta', new_string: 'BETA' });
      expect(res.isError).toBeFalsy();
      expect(readFileSync(path.join(root, 'edit.txt'), 'utf8')).toBe('alpha\nBETA\ngamma\n');
      expect(res.structuredContent).toMatchObject({
        replacements: 1,
        sha256_before: sha('alpha\nbeta\ngamma\n'),
        sha256_after: sha('alpha\nBETA\ngamma\n'),
      });
    });

    it('edits of one file sent at once run in turn: the same edit twice applies once, the other finds nothing', async () => {
      writeFileSync(path.join(root, 'twice.txt'), 'count = 1\n');
      const edit = { path: 'twice.txt', old_string: 'count = 1', new_string: 'count = 2' };
      const results = await Promise.all([call('edit_file', edit), call('edit_file', edit), call('edit_file', edit)]);
      expect(results.filter((r) => !r.isError)).toHaveLength(1);
      for (const r of results.filter((x) => x.isError))
        expect(textOf(r)).toMatch(/old_string was not found in twice\.txt/);
      expect(readFileSync(path.join(root, 'twice.txt'), 'utf8')).toBe('count = 2\n');
    });

    it('edit_file fails clearly, changing nothing, when the match is missing or not unique', async () => {
      writeFileSync(path.join(root, 'dup.txt'), 'x = 1\nx = 1\n');
      const missing = await call('edit_file', { path: 'dup.txt', old_string: 'y = 2', new_string: 'y = 3' });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toMatch(/old_string was not found in dup\.txt; nothing changed/);
      const twice = await call('edit_file', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 2' });
      expect(twice.isError).toBe(true);
      expect(textOf(twice)).toMatch(/occurs 2 times/);
      expect(readFileSync(path.join(root, 'dup.txt'), 'utf8')).toBe('x = 1\nx = 1\n');
      const all = await call('edit_file', {
        path: 'dup.txt',
        old_string: 'x = 1',
        new_string: 'x = 2',
        replace_all: true,
      });
      expect(all.structuredContent).toMatchObject({ replacements: 2 });
    });

    it('a write or an edit that would break a file’s syntax is refused with the parser’s message; the file stays', async () => {
      const file = `broken-${transport}.cjs`;
      const good = 'function size(n) {\n  return n;\n}\nmodule.exports = { size };\n';
      writeFileSync(path.join(root, file), good);
      const whole = await call('write_file', { path: file, content: `${good}512 B\n` });
      expect(whole.isError).toBe(true);
      expect(textOf(whole)).toMatch(
        new RegExp(
          `refused: ${file.replace('.', '\\.')} would not parse as JavaScript .*line 5: SyntaxError: Unexpected identifier 'B'.*nothing changed`
        )
      );
      const edit = await call('edit_file', { path: file, old_string: '  return n;\n}', new_string: '  return n;' });
      expect(edit.isError).toBe(true);
      expect(textOf(edit)).toMatch(/would not parse as JavaScript/);
      expect(readFileSync(path.join(root, file), 'utf8')).toBe(good);
      // The control: a change that keeps it valid goes ahead.
      const fine = await call('edit_file', { path: file, old_string: 'return n;', new_string: 'return n * 2;' });
      expect(fine.isError).toBeFalsy();
      expect(readFileSync(path.join(root, file), 'utf8')).toContain('return n * 2;');
    });

    it('a write that would remove most of an existing file, a short one too, is refused saying how to do it on purpose', async () => {
      const file = `readme-${transport}.md`;
      const readme = '# Ledger\n\nKeeps accounts.\n\n## Usage\n\nRun `ledger add 5`.\n\n## License\n\nMIT\n';
      writeFileSync(path.join(root, file), readme);
      const wiped = await call('write_file', { path: file, content: '## Installation\n\npip install ledger\n' });
      expect(wiped.isError).toBe(true);
      expect(textOf(wiped)).toBe(
        `refused: this write would remove 6 of the 6 lines of ${file} (write_file replaces the whole file); nothing ` +
          'changed. To change a part of it, use edit_file. To replace it on purpose, delete it first and then write it.'
      );
      expect(readFileSync(path.join(root, file), 'utf8')).toBe(readme);
      // The controls: a write that keeps most of it goes ahead, and so does one of a file of three lines.
      const added = readme.replace('## Usage', '## Installation\n\npip install ledger\n\n## Usage');
      expect((await call('write_file', { path: file, content: added })).isError).toBeFalsy();
      expect(readFileSync(path.join(root, file), 'utf8')).toBe(added);
      writeFileSync(path.join(root, `version-${transport}.txt`), '1.0\n\nstable\nlts\n');
      expect((await call('write_file', { path: `version-${transport}.txt`, content: '2.0\n' })).isError).toBeFalsy();
    });

    it('run_command returns exit code and output, in a cwd inside the root', async () => {
      const ok = await call('run_command', { command: 'pwd && echo out && echo err >&2', cwd: 'src' });
      expect(ok.isError).toBeFalsy();
      expect(ok.structuredContent).toMatchObject({
        exit_code: 0,
        stdout: `${path.join(root, 'src')}\nout\n`,
        stderr: 'err\n',
        timed_out: false,
      });
      // An empty cwd is the project, as ".".
      const here = await call('run_command', { command: 'pwd', cwd: '' });
      expect(here.structuredContent).toMatchObject({ exit_code: 0, stdout: `${root}\n` });
      const failing = await call('run_command', { command: 'exit 3' });
      expect(failing.isError).toBe(true);
      expect(textOf(failing)).toMatch(/^exit code: 3/);
    });

    it('run_command kills a command at its timeout, with everything it started', async () => {
      const res = await call('run_command', { command: 'sleep 30 & sleep 30; echo never', timeout_ms: 300 });
      expect(res.structuredContent).toMatchObject({ timed_out: true, exit_code: null });
      expect(textOf(res)).toMatch(/killed after 300 ms/);
    });

    it('run_command caps its output', async () => {
      const res = await call('run_command', { command: 'head -c 200000 /dev/zero | tr "\\0" a' });
      expect(String((res.structuredContent as { stdout?: string } | undefined)?.stdout)).toMatch(
        /\[truncated: \d+ more bytes not shown\]$/
      );
    });

    it('run_command scrubs secrets from the environment', async () => {
      const res = await call('run_command', { command: 'env' });
      const out = String((res.structuredContent as { stdout?: string } | undefined)?.stdout);
      expect(out).toContain('HARMLESS_SETTING=visible');
      for (const k of ['SOME_API_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'DATABASE_URL', GRANT_KEY_ENV])
        expect(out).not.toContain(`${k}=`);
    });
  });

  describe('workspace server: refusals (defence in depth)', () => {
    const refusals: Array<[string, string, Record<string, unknown>]> = [
      ['read outside by traversal', 'read_file', { path: '../outside/canary.txt' }],
      ['read outside by absolute path', 'read_file', { path: path.join('/', 'etc', 'passwd') }],
      ['read outside through a symlink', 'read_file', { path: 'escape/canary.txt' }],
      ['read a sensitive file', 'read_file', { path: '.env' }],
      ['list outside', 'list_dir', { path: '..' }],
      ['find outside', 'find_files', { pattern: '*', path: 'escape' }],
      ['grep outside', 'grep', { pattern: 'canary', path: '../outside' }],
      ['write outside', 'write_file', { path: '../outside/canary.txt', content: 'pwned' }],
      ['write through a symlinked parent', 'write_file', { path: 'escape/canary.txt', content: 'pwned' }],
      ['write a sensitive file', 'write_file', { path: '.env', content: 'X=1' }],
      ['edit outside', 'edit_file', { path: '../outside/canary.txt', old_string: 'canary', new_string: 'pwned' }],
      ['command with a cwd outside', 'run_command', { command: 'cat canary.txt', cwd: '../outside' }],
      ['command naming an outside path', 'run_command', { command: `cat ${path.join(base, 'outside/canary.txt')}` }],
      ['command reading .env', 'run_command', { command: 'cat .env' }],
      ['null byte', 'read_file', { path: 'README.md\0../../outside/canary.txt' }],
      ['file URI outside', 'read_file', { path: `file://${base}/outside/canary.txt` }],
    ];

    it.each(refusals)('refuses: %s', async (_name, tool, args) => {
      const res = await call(tool, args);
      expect(res.isError).toBe(true);
      expect(textOf(res)).toMatch(/^refused: /);
      expect(textOf(res)).not.toContain(CANARY_TEXT);
      expect(readFileSync(canary, 'utf8')).toBe(CANARY_TEXT);
    });

    it('allows a call that carries a valid grant for that real path and operation', async () => {
      const grants = signGrants(KEY, [{ path: canary, op: 'read' }]);
      const res = await call('read_file', { path: 'escape/canary.txt' }, { [GRANTS_META_KEY]: grants });
      expect(textOf(res)).toBe(CANARY_TEXT);
    });

    it('a read grant does not allow a write, and a forged or expired grant allows nothing', async () => {
      const readOnly = signGrants(KEY, [{ path: canary, op: 'read' }]);
      expect(
        (await call('write_file', { path: '../outside/canary.txt', content: 'pwned' }, { [GRANTS_META_KEY]: readOnly }))
          .isError
      ).toBe(true);
      const forged = signGrants('some-other-key-entirely', [{ path: canary, op: 'write' }]);
      expect(
        (await call('write_file', { path: '../outside/canary.txt', content: 'pwned' }, { [GRANTS_META_KEY]: forged }))
          .isError
      ).toBe(true);
      const expired = signGrants(KEY, [{ path: canary, op: 'write' }], Date.now() - 3_600_000);
      expect(
        (await call('write_file', { path: '../outside/canary.txt', content: 'pwned' }, { [GRANTS_META_KEY]: expired }))
          .isError
      ).toBe(true);
      const tampered = signGrants(KEY, [{ path: path.join(base, 'outside/other.txt'), op: 'write' }]).map((g) => ({
        ...g,
        path: canary,
      }));
      expect(
        (await call('write_file', { path: '../outside/canary.txt', content: 'pwned' }, { [GRANTS_META_KEY]: tampered }))
          .isError
      ).toBe(true);
      expect(readFileSync(canary, 'utf8')).toBe(CANARY_TEXT);
      expect(existsSync(path.join(base, 'outside/other.txt'))).toBe(false);
    });
  });
});

/**
 * The server process dies between changing a file and recording the call's result (stopped there on purpose, then
 * SIGKILLed); a new server on the same state directory gets the retry with the same idempotency key.
 */
describe('workspace server: a retry after the server died mid-change', () => {
  const script = path.join(__dirname, '../../dist/tools/workspace/server.js');
  const stateDir = path.join(base, 'state');
  const callLog = path.join(base, 'calls.jsonl');
  let n = 0;

  async function connect(
    env: Record<string, string> = {}
  ): Promise<{ client: Client; transport: StdioClientTransport }> {
    const c = new Client({ name: 'test', version: '1' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [script, '--root', root, '--state-dir', stateDir, '--call-log', callLog],
      env: { PATH: process.env.PATH ?? '', HOME: path.join(base, 'home'), ...env },
    });
    await c.connect(transport);
    return { client: c, transport };
  }

  /** Starts `tool` on a server told to stop after the change, waits until it has, and kills that server. */
  async function dieAfterChange(tool: string, args: Record<string, unknown>, key: string): Promise<void> {
    const markers = mkdtempSync(path.join(base, 'held-'));
    const { client: c, transport } = await connect({ KLEA_WORKSPACE_HOLD_AFTER_CHANGE: `${tool}:${markers}` });
    const pending = c.callTool({ name: tool, arguments: args, _meta: { 'klea/idempotency_key': key } });
    pending.catch(() => undefined);
    const marker = path.join(markers, `${tool}.held`);
    const deadline = Date.now() + 20_000;
    while (!existsSync(marker)) {
      if (Date.now() > deadline) throw new Error(`${tool} never reached its change`);
      await new Promise((r) => setTimeout(r, 20));
    }
    process.kill(transport.pid!, 'SIGKILL');
    await c.close().catch(() => undefined);
  }

  async function retry(tool: string, args: Record<string, unknown>, key: string) {
    const { client: c } = await connect();
    try {
      return await c.callTool({ name: tool, arguments: args, _meta: { 'klea/idempotency_key': key } });
    } finally {
      await c.close();
    }
  }

  const auditOf = (key: string) =>
    readFileSync(callLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => JSON.stringify(l.args).includes(key));

  it('an edit whose record was lost is not applied again, and answers as the first attempt would have', async () => {
    const file = `crash-edit-${++n}.txt`;
    writeFileSync(path.join(root, file), 'version 1\n');
    // A second application would be visible: the new text contains the old one.
    const args = { path: file, old_string: 'version 1', new_string: 'version 1, patched' };
    await dieAfterChange('edit_file', args, file);
    expect(readFileSync(path.join(root, file), 'utf8')).toBe('version 1, patched\n');

    const res = await retry('edit_file', args, file);
    expect(res.isError).toBeFalsy();
    expect(textOf(res)).toBe(`edited ${file}: 1 replacement`);
    expect(readFileSync(path.join(root, file), 'utf8')).toBe('version 1, patched\n');
    expect(auditOf(file)).toEqual([expect.objectContaining({ tool: 'edit_file', replayed: true, isError: false })]);
    // A further retry finds the recorded result.
    expect(textOf(await retry('edit_file', args, file))).toBe(`edited ${file}: 1 replacement`);
  });

  it('a write whose record was lost says it wrote the file, and does not write it again', async () => {
    const file = `crash-write-${++n}.txt`;
    await dieAfterChange('write_file', { path: file, content: 'hello\n' }, file);
    const inode = statSync(path.join(root, file)).ino;

    const res = await retry('write_file', { path: file, content: 'hello\n' }, file);
    expect(textOf(res)).toBe(`wrote ${file} (6 bytes, new file)`);
    expect(res.structuredContent).toMatchObject({ created: true, changed: true });
    expect(statSync(path.join(root, file)).ino).toBe(inode);
  });

  it('a change that never reached the file (it still has the old content) is carried out by the retry', async () => {
    const file = `crash-undone-${++n}.txt`;
    writeFileSync(path.join(root, file), 'version 1\n');
    const args = { path: file, old_string: 'version 1', new_string: 'version 2' };
    await dieAfterChange('edit_file', args, file);
    writeFileSync(path.join(root, file), 'version 1\n');

    const res = await retry('edit_file', args, file);
    expect(res.isError).toBeFalsy();
    expect(readFileSync(path.join(root, file), 'utf8')).toBe('version 2\n');
    expect(auditOf(file)).toEqual([expect.objectContaining({ tool: 'edit_file', isError: false })]);
    expect(auditOf(file)[0].replayed).toBeUndefined();
  });

  it('a file changed by someone else since the interrupted call is left alone, with a clear error', async () => {
    const file = `crash-conflict-${++n}.txt`;
    await dieAfterChange('write_file', { path: file, content: 'from the agent\n' }, file);
    writeFileSync(path.join(root, file), 'from the user\n');

    const res = await retry('write_file', { path: file, content: 'from the agent\n' }, file);
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(new RegExp(`write_file on ${file} was interrupted and the file has changed since`));
    expect(readFileSync(path.join(root, file), 'utf8')).toBe('from the user\n');
  });
});

describe('workspace server: hard links, swapped paths, FIFOs and patterns that never end', () => {
  let c: Client;
  let dir: string;
  let secret: string;
  const SECRET = 'secret: another name of this file is in the project';
  const callOn = (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
    c.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });

  beforeAll(async () => {
    dir = path.join(base, 'harden');
    mkdirSync(path.join(base, 'outside-h'), { recursive: true });
    mkdirSync(dir, { recursive: true });
    secret = path.join(base, 'outside-h/secret.txt');
    writeFileSync(secret, SECRET);
    linkSync(secret, path.join(dir, 'linked.txt'));
    writeFileSync(path.join(dir, 'plain.txt'), 'a plain file\n');
    // (a+)+$ against many a's and no match at the end backtracks for ever.
    writeFileSync(path.join(dir, 'slow.txt'), `${'a'.repeat(40)}!\n`);
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    c = new Client({ name: 'test', version: '1' });
    const server = createWorkspaceServer({ root: dir, grantKey: KEY, limits: { grepTimeMs: 500 } });
    const [clientT, serverT] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverT), c.connect(clientT)]);
  });
  afterAll(async () => {
    await c.close();
  });

  it('a hard-linked file is refused unless granted, and a directory search skips it', async () => {
    const refused = await callOn('read_file', { path: 'linked.txt' });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^refused: linked\.txt is a file with 2 hard links/);
    expect(textOf(await callOn('grep', { pattern: 'secret' }))).toBe('no matches for /secret/');
    const grants = signGrants(KEY, [{ path: path.join(dir, 'linked.txt'), op: 'read' }]);
    expect(textOf(await callOn('read_file', { path: 'linked.txt' }, { [GRANTS_META_KEY]: grants }))).toBe(SECRET);
    // An edit through it would change the outside name too: refused as well.
    const edit = await callOn('edit_file', { path: 'linked.txt', old_string: 'secret', new_string: 'pwned' });
    expect(edit.isError).toBe(true);
    expect(readFileSync(secret, 'utf8')).toBe(SECRET);
  });

  it('a FIFO is refused at once, not waited on', async () => {
    const res = await callOn('read_file', { path: 'pipe' });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/pipe is not a regular file/);
  });

  it('a pattern that backtracks for ever is stopped at the time limit, and the server keeps answering', async () => {
    const res = await callOn('grep', { pattern: '(a+)+$', path: 'slow.txt' });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^grep stopped after 0\.5 s: the pattern \/\(a\+\)\+\$\/ took too long/);
    expect(textOf(await callOn('read_file', { path: 'plain.txt' }))).toBe('a plain file');
    expect(textOf(await callOn('grep', { pattern: 'plain' }))).toBe('plain.txt:1: a plain file');
  });

  it('reads and writes go through the checked directory: a symlink put in the way is refused', async () => {
    // What the gate checked was a plain file and a plain directory; by the time of use they are symlinks.
    symlinkSync(secret, path.join(dir, 'swapped.txt'));
    await expect(readText({ real: path.join(dir, 'swapped.txt'), class: 'inside' }, async (p) => p)).rejects.toThrow(
      /swapped\.txt changed while it was being checked/
    );
    symlinkSync(path.join(base, 'outside-h'), path.join(dir, 'sub'));
    await expect(atomicWrite(path.join(dir, 'sub', 'planted.txt'), 'pwned')).rejects.toThrow(
      /changed while it was being checked/
    );
    expect(existsSync(path.join(base, 'outside-h/planted.txt'))).toBe(false);
    await expect(
      readText({ real: path.join(dir, 'sub', 'secret.txt'), class: 'inside' }, async (p) => p)
    ).rejects.toThrow(/changed while it was being checked/);
  });

  it('attack: a directory swapped for a symlink after the check: a walk (list_dir, find_files, grep) fails, listing nothing outside', async () => {
    mkdirSync(path.join(dir, 'walked/deeper'), { recursive: true });
    const walked = path.join(dir, 'walked');
    // Checked as a directory of the project; by the time of the walk, it (or one below it) leads outside.
    rmSync(walked, { recursive: true });
    symlinkSync(path.join(base, 'outside-h'), walked);
    const names: string[] = [];
    const listing = (async () => {
      for await (const e of walk(walked, 3)) names.push(e.dirent.name);
    })();
    await expect(listing).rejects.toThrow(/walked changed while it was being checked/);
    expect(names).toEqual([]);
    // The control: the same swap fools a walk that reads by path, which lists the outside folder.
    expect(readdirSync(walked)).toContain('secret.txt');
  });

  it('attack: a parent swapped for a symlink before write_file makes its missing folders: nothing is made outside', async () => {
    mkdirSync(path.join(dir, 'parent'));
    const parent = path.join(dir, 'parent');
    rmSync(parent, { recursive: true });
    symlinkSync(path.join(base, 'outside-h'), parent);
    await expect(mkdirsChecked(path.join(parent, 'made/deeper'))).rejects.toThrow(/changed while it was being checked/);
    expect(existsSync(path.join(base, 'outside-h/made'))).toBe(false);
    // The control: making them by path follows the link and makes them outside.
    mkdirSync(path.join(parent, 'made/deeper'), { recursive: true });
    expect(existsSync(path.join(base, 'outside-h/made/deeper'))).toBe(true);
  });
});

describe('workspace server: the limits every sandboxed command runs under', () => {
  const CGROUPS = '/sys/fs/cgroup/pids/klea';
  const ours = (pid: number) =>
    existsSync(CGROUPS) ? readdirSync(CGROUPS).filter((d) => d.startsWith(`cmd-${pid}-`)) : [];

  it('each command, the fifth as the first, has its memory cap and its own process cap; none is left behind', async () => {
    const dir = realpathSync(mkdtempSync(path.join(base, 'limits-')));
    const script = path.join(__dirname, '../../dist/tools/workspace/server.js');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [script, '--root', dir, '--max-processes', '10', '--memory-mb', '256'],
      env: { PATH: process.env.PATH ?? '', HOME: path.join(base, 'home') },
    });
    const limited = new Client({ name: 'test', version: '1' });
    await limited.connect(transport);
    const serverPid = transport.pid!;
    const run = async (command: string) =>
      textOf(await limited.callTool({ name: 'run_command', arguments: { command } }));
    try {
      for (let i = 0; i < 5; i++) {
        // RLIMIT_AS in KiB, as `ulimit -v` reports it.
        expect(await run('ulimit -v')).toContain('262144');
        // Twenty children at once cannot all start under a cap of ten processes.
        expect(await run('for i in $(seq 20); do sleep 1 & done; wait; echo all started')).toMatch(/Cannot fork/);
      }
      // Commands started together each get a cgroup of their own.
      const together = await Promise.all(Array.from({ length: 3 }, () => run('sleep 0.2; ulimit -v')));
      for (const t of together) expect(t).toContain('262144');
    } finally {
      await limited.close();
    }
    await until('the server removes the cgroups it made', () => (ours(serverPid).length ? undefined : true), 10_000);
  }, 60_000);
});

describe('the command sandbox: commands started together in a project without .vscode, .envrc or klea.yaml', () => {
  it('each runs (none binds a placeholder another has just removed), and no placeholder is left behind', async () => {
    const dir = realpathSync(mkdtempSync(path.join(base, 'together-')));
    writeFileSync(path.join(dir, 'a.txt'), 'a\n');
    const gate = createPathGate({
      root: dir,
      grantKey: KEY,
      sensitivePatterns: DEFAULT_SENSITIVE_PATTERNS,
      protectedPatterns: DEFAULT_PROTECTED_PATTERNS,
    });
    const sandbox = createCommandSandbox(gate, {
      mode: 'bwrap',
      grantKey: KEY,
      protectedPatterns: DEFAULT_PROTECTED_PATTERNS,
    });
    const run = async (i: number) =>
      runCommand(await sandbox.prepare(`cat a.txt; echo ${i}`, dir, undefined), dir, 20_000, 64 * 1024);
    try {
      // Rounds of eight at once, their starts and ends overlapping as a batch's do.
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) => run(i)));
        results.forEach((r, i) =>
          expect({ code: r.exit_code, out: r.stdout, err: r.stderr }).toEqual({ code: 0, out: `a\n${i}\n`, err: '' })
        );
      }
    } finally {
      await sandbox.close();
    }
    expect(readdirSync(dir)).toEqual(['a.txt']);
  }, 60_000);
});

describe("the command sandbox: each command's is built as the command starts", () => {
  it('a sensitive file replaced or created after an earlier command is hidden from the next one', async () => {
    const dir = realpathSync(mkdtempSync(path.join(base, 'fresh-')));
    writeFileSync(path.join(dir, '.env'), 'SECRET=old-canary\n');
    const gate = createPathGate({ root: dir, grantKey: KEY, sensitivePatterns: DEFAULT_SENSITIVE_PATTERNS });
    const sandbox = createCommandSandbox(gate, { mode: 'bwrap', grantKey: KEY });
    // The sandbox on its own, as a command that hides its path from the gate would reach it.
    const stdoutOf = async (command: string) =>
      (await runCommand(await sandbox.prepare(command, dir, undefined), dir, 20_000, 64 * 1024)).stdout;
    try {
      expect(await stdoutOf('cat .env; echo end')).toBe('end\n');
      // An editor's atomic save: a new file renamed over the old one.
      writeFileSync(path.join(dir, '.env.tmp-save'), 'SECRET=new-canary\n');
      renameSync(path.join(dir, '.env.tmp-save'), path.join(dir, '.env'));
      expect(await stdoutOf('cat .env; echo end')).toBe('end\n');
      writeFileSync(path.join(dir, 'id_rsa'), 'PRIVATE-KEY-canary\n');
      expect(await stdoutOf('cat id_rsa; echo end')).toBe('end\n');
      // The project's other files are there as they are now.
      writeFileSync(path.join(dir, 'notes.txt'), 'written just now\n');
      expect(await stdoutOf('cat notes.txt')).toBe('written just now\n');
    } finally {
      await sandbox.close();
    }
  }, 30_000);
});

describe("workspace server: Klea's own state and the per-file limit", () => {
  it('a file over the per-file limit is refused by write_file and edit_file; own state is refused with any grant', async () => {
    const dir = realpathSync(mkdtempSync(path.join(base, 'own-')));
    mkdirSync(path.join(dir, '.klea/results'), { recursive: true });
    writeFileSync(path.join(dir, '.klea/results/r.txt'), 'stored output of another task\n');
    writeFileSync(path.join(dir, 'small.txt'), 'small\n');
    const c = new Client({ name: 'test', version: '1' });
    const server = createWorkspaceServer({
      root: dir,
      grantKey: KEY,
      ownState: [path.join(dir, '.klea')],
      limits: { writeBytes: 100 },
    });
    const [clientT, serverT] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverT), c.connect(clientT)]);
    const on = (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
      c.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) });
    try {
      const big = await on('write_file', { path: 'big.txt', content: 'x'.repeat(101) });
      expect(textOf(big)).toMatch(/over the per-file limit of 100 bytes \(tools\.max_file_mb\)/);
      expect(existsSync(path.join(dir, 'big.txt'))).toBe(false);
      const grown = await on('edit_file', { path: 'small.txt', old_string: 'small', new_string: 'y'.repeat(200) });
      expect(grown.isError).toBe(true);
      expect(readFileSync(path.join(dir, 'small.txt'), 'utf8')).toBe('small\n');

      const grants = signGrants(KEY, [{ path: path.join(dir, '.klea/results/r.txt'), op: 'read' }]);
      const read = await on('read_file', { path: '.klea/results/r.txt' }, { [GRANTS_META_KEY]: grants });
      expect(textOf(read)).toMatch(/^refused: .*Klea's own state/);
      expect(textOf(await on('grep', { pattern: 'stored output' }))).toMatch(/no matches/);
      expect(textOf(await on('find_files', { pattern: '*.txt' }))).toBe('small.txt');
      expect(textOf(await on('list_dir', { path: '.klea' }))).toMatch(/^refused: /);
      expect(textOf(await on('list_dir', { path: '.' }))).toBe('small.txt');
    } finally {
      await c.close();
    }
  });
});
