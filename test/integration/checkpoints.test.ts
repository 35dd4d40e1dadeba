/**
 * Checkpoints through the real workspace MCP server (stdio, as the worker starts it, commands in bubblewrap): a
 * write, an edit and a command that creates, changes and deletes files, all carrying `klea/checkpoint`; then a
 * rewind of the task puts the tree back exactly, but for a `.env` the command changed (with the user's grant),
 * which stays as it is and is reported. No secret ever reaches the store.
 */
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CHECKPOINT_META_KEY,
  GRANT_KEY_ENV,
  GRANTS_META_KEY,
  IDEMPOTENCY_META_KEY,
} from '../../common/workspace-protocol';
import { signGrants } from '../../runtime/grant-signing';
import { applyRewind, planRewind, taskChanges, type CheckpointPlace } from '../../tools/checkpoints';
import { journalFile, projectLayout, taskDir } from '../../tools/checkpoints/store';
import { filesContaining, listTree } from '../support/project-tree';

const KEY = 'test-grant-key-checkpoints-0123';
const SECRET = 'API_KEY=secret-value-7f3a9c';
const ROTATED = 'API_KEY=rotated-secret-41be02';
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-ckpt-int-')));
const root = path.join(base, 'proj');
const storeDir = path.join(base, 'data', 'checkpoints');
const stateDir = path.join(base, 'data', 'workspace-state');
const place: CheckpointPlace = { storeDir, projectDir: root };
let client: Client;

const textOf = (res: Awaited<ReturnType<Client['callTool']>>) =>
  (res.content as Array<{ type: string; text: string }>).map((c) => c.text).join('\n');

async function call(name: string, args: Record<string, unknown>, step: string, key: string, extra = {}) {
  const res = await client.callTool({
    name,
    arguments: args,
    _meta: { [CHECKPOINT_META_KEY]: { task: 'task-s-1-1', step }, [IDEMPOTENCY_META_KEY]: key, ...extra },
  });
  if (res.isError) throw new Error(`${name} failed: ${textOf(res)}`);
  return res;
}

beforeAll(async () => {
  for (const [rel, content] of Object.entries({
    'README.md': '# Demo\n',
    'src/app.ts': 'export const a = 1;\n',
    'src/lib/util.ts': 'export const util = () => 42;\n',
    'data/old.txt': 'to be deleted\n',
    'data/keep.txt': 'kept\n',
    'scripts/run.sh': '#!/bin/sh\necho run\n',
    '.env': `${SECRET}\n`,
  })) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), content);
  }
  chmodSync(path.join(root, 'scripts/run.sh'), 0o644);
  symlinkSync('src/app.ts', path.join(root, 'entry'));
  client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [
        path.join(__dirname, '../../dist/tools/workspace/server.js'),
        '--root',
        root,
        '--state-dir',
        stateDir,
        '--checkpoint-dir',
        storeDir,
        '--checkpoint-max-mb',
        '64',
      ],
      env: { PATH: process.env.PATH ?? '', HOME: path.join(base, 'home'), [GRANT_KEY_ENV]: KEY },
    })
  );
});

afterAll(async () => {
  await client.close();
  rmSync(base, { recursive: true, force: true });
});

describe('checkpoints through the workspace server', () => {
  it('journals a write, an edit and a command, and a rewind restores the tree exactly but for the .env', async () => {
    const start = listTree(root);
    // Reading costs nothing and journals nothing.
    await call('read_file', { path: 'README.md' }, 's0', 'k0');
    await call('write_file', { path: 'src/feature/new.ts', content: 'export const f = 1;\n' }, 's1', 'k1');
    // A retry answered from the idempotency store is not journalled again.
    await call('write_file', { path: 'src/feature/new.ts', content: 'export const f = 1;\n' }, 's1', 'k1');
    await call('edit_file', { path: 'src/app.ts', old_string: 'a = 1', new_string: 'a = 2' }, 's2', 'k2');
    const envReal = path.join(root, '.env');
    const res = await call(
      'run_command',
      {
        command: [
          'echo more >> README.md',
          'rm data/old.txt',
          'mkdir -p gen/out',
          'echo built > gen/out/a.txt',
          'chmod +x scripts/run.sh',
          "printf 'export const util = () => 43;\\n' > src/lib/util.ts",
          'rm entry && ln -s src/lib/util.ts entry',
          `printf '${ROTATED}\\n' > .env`,
        ].join(' && '),
      },
      's3',
      'k3',
      // The user's grant: the command may name the .env (execute) and write it (write).
      {
        [GRANTS_META_KEY]: signGrants(KEY, [
          { path: envReal, op: 'execute' },
          { path: envReal, op: 'write' },
        ]),
      }
    );
    expect(textOf(res)).toMatch(/exit code: 0/);
    expect(readFileSync(envReal, 'utf8')).toBe(`${ROTATED}\n`);
    // One line per call that changed something: not the read, not the retry.
    const journal = journalFile(taskDir(projectLayout(storeDir, realpathSync(root)), 'task-s-1-1'));
    expect(
      readFileSync(journal, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).key)
    ).toEqual(['k1', 'k2', 'k3']);

    expect(await taskChanges(place, 'task-s-1-1')).toEqual([
      { step: 's1', files: [{ path: 'src/feature/new.ts', change: 'created' }] },
      { step: 's2', files: [{ path: 'src/app.ts', change: 'changed' }] },
      {
        step: 's3',
        files: [
          { path: '.env', change: 'changed' },
          { path: 'README.md', change: 'changed' },
          { path: 'data/old.txt', change: 'deleted' },
          { path: 'entry', change: 'changed' },
          { path: 'gen/out/a.txt', change: 'created' },
          { path: 'scripts/run.sh', change: 'changed' },
          { path: 'src/lib/util.ts', change: 'changed' },
        ],
      },
    ]);

    const steps = ['s0', 's1', 's2', 's3'];
    const plan = await planRewind(place, { task: 'task-s-1-1', steps });
    expect(plan).toMatchObject({ expired: false, known: true, conflicts: [], sensitive: ['.env'], tooLarge: [] });
    expect(plan.files.map((f) => `${f.action} ${f.path}`)).toEqual([
      'restore README.md',
      'recreate data/old.txt',
      'restore entry',
      'delete gen/out/a.txt',
      'restore scripts/run.sh',
      'restore src/app.ts',
      'delete src/feature/new.ts',
      'restore src/lib/util.ts',
    ]);

    const result = await applyRewind(place, { task: 'task-s-1-1', steps, rewindId: 'rewind-1' });
    expect(result).toEqual({ restored: plan.files, sensitive: ['.env'] });
    expect(listTree(root)).toEqual({ ...start, '.env': `file 644 ${ROTATED}\n` });
    expect(await applyRewind(place, { task: 'task-s-1-1', steps, rewindId: 'rewind-1' })).toEqual(result);

    // Neither the secret nor what replaced it is anywhere in the store.
    for (const secret of ['secret-value-7f3a9c', 'rotated-secret-41be02'])
      expect(filesContaining(path.join(base, 'data'), secret)).toEqual([]);
  });

  it('does not take the rewind for a later command’s change', async () => {
    await call('run_command', { command: 'echo later > later.txt' }, 's4', 'k4');
    const changes = await taskChanges(place, 'task-s-1-1');
    expect(changes.at(-1)).toEqual({ step: 's4', files: [{ path: 'later.txt', change: 'created' }] });
  });
});
