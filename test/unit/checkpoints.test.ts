/**
 * Checkpoints: the store the workspace server journals into (writes, edits and command-like changes found by the
 * stat index) and the rewinds the worker plans and applies from it.
 */
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SENSITIVE_PATTERNS } from '../../common/path-patterns';
import { inOwnState, SensitiveMatcher } from '../../common/path-guard';
import {
  applyRewind,
  createCheckpointRecorder,
  planRewind,
  taskChanges,
  type CheckpointPlace,
  type CheckpointRecorder,
} from '../../tools/checkpoints';
import { journalFile, projectLayout, sha256, taskDir } from '../../tools/checkpoints/store';
import { filesContaining, listTree } from '../support/project-tree';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-ckpt-')));
const matcher = new SensitiveMatcher(DEFAULT_SENSITIVE_PATTERNS);
let n = 0;
const open: CheckpointRecorder[] = [];

afterAll(() => {
  for (const r of open) r.close();
  rmSync(base, { recursive: true, force: true });
});

interface Fixture {
  root: string;
  store: string;
  place: CheckpointPlace;
  rec: CheckpointRecorder;
  /** write_file / edit_file as the server does them: the change journalled, then made. */
  write(task: string, step: string, rel: string, content: string, key?: string): Promise<void>;
  /** A command: whatever `fn` does to the project between the two looks. */
  command(task: string, step: string, fn: () => void, key?: string): Promise<void>;
  /** The server restarted: a new recorder on the same store. */
  restart(): void;
}

function fixture(
  files: Record<string, string>,
  opts: { maxBytes?: number; watch?: boolean; racyMs?: number } = {}
): Fixture {
  const dir = path.join(base, `f${++n}`);
  const root = path.join(dir, 'proj');
  const store = path.join(dir, 'store');
  mkdirSync(root, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), content);
  }
  const make = () => {
    const r = createCheckpointRecorder({
      storeDir: store,
      root: async () => root,
      maxBytes: opts.maxBytes ?? 64 * 1024 * 1024,
      sensitive: (rel) => matcher.match(rel) !== null,
      ownState: (real) => inOwnState(real, [store]),
      watch: opts.watch,
      racyMs: opts.racyMs,
    });
    open.push(r);
    return r;
  };
  const f: Fixture = {
    root,
    store,
    place: { storeDir: store, projectDir: root },
    rec: make(),
    async write(task, step, rel, content, key = randomBytes(4).toString('hex')) {
      const real = path.join(root, rel);
      const before = existsSync(real) ? readFileSync(real) : null;
      const mode = before ? statSync(real).mode : undefined;
      const cp = f.rec.forCall('write_file', {
        'klea/checkpoint': { task, step },
        'klea/idempotency_key': key,
      });
      if (!cp) throw new Error('no checkpoint');
      await f.rec.write(
        cp,
        {
          real,
          before,
          beforeMode: mode,
          hashBefore: before ? sha256(before) : null,
          hashAfter: sha256(content),
        },
        async () => {
          mkdirSync(path.dirname(real), { recursive: true });
          const tmp = `${real}.tmp-${n}`;
          writeFileSync(tmp, content, { mode: mode ?? 0o644 });
          renameSync(tmp, real);
        }
      );
    },
    async command(task, step, fn, key = randomBytes(4).toString('hex')) {
      const cp = f.rec.forCall('run_command', {
        'klea/checkpoint': { task, step },
        'klea/idempotency_key': key,
      });
      if (!cp) throw new Error('no checkpoint');
      const { problem } = await f.rec.command(cp, async () => fn());
      if (problem) throw new Error(problem);
    },
    restart() {
      f.rec.close();
      f.rec = make();
    },
  };
  return f;
}

const at = (f: Fixture, rel: string) => path.join(f.root, rel);
const read = (f: Fixture, rel: string) => readFileSync(at(f, rel), 'utf8');

describe('checkpoints', () => {
  it('journals a write, an edit and a command, and a rewind of all of them restores the tree exactly', async () => {
    const f = fixture({ 'a.txt': 'A0\n', 'src/b.ts': 'B0\n', 'src/gone.ts': 'G\n', 'run.sh': '#!/bin/sh\n' });
    chmodSync(at(f, 'run.sh'), 0o644);
    symlinkSync('a.txt', at(f, 'link'));
    const start = listTree(f.root);
    await f.write('t1', 's1', 'a.txt', 'A1\n');
    await f.write('t1', 's1', 'new/deep/c.txt', 'C\n');
    await f.write('t1', 's2', 'src/b.ts', 'B1\n');
    await f.command('t1', 's3', () => {
      writeFileSync(at(f, 'src/b.ts'), 'B2\n');
      unlinkSync(at(f, 'src/gone.ts'));
      mkdirSync(at(f, 'made/inner'), { recursive: true });
      writeFileSync(at(f, 'made/inner/x.txt'), 'X\n');
      chmodSync(at(f, 'run.sh'), 0o755);
      unlinkSync(at(f, 'link'));
      symlinkSync('src/b.ts', at(f, 'link'));
    });
    expect(await taskChanges(f.place, 't1')).toEqual([
      {
        step: 's1',
        files: [
          { path: 'a.txt', change: 'changed' },
          { path: 'new/deep/c.txt', change: 'created' },
        ],
      },
      { step: 's2', files: [{ path: 'src/b.ts', change: 'changed' }] },
      {
        step: 's3',
        files: [
          { path: 'link', change: 'changed' },
          { path: 'made/inner/x.txt', change: 'created' },
          { path: 'run.sh', change: 'changed' },
          { path: 'src/b.ts', change: 'changed' },
          { path: 'src/gone.ts', change: 'deleted' },
        ],
      },
    ]);
    const plan = await planRewind(f.place, { task: 't1', steps: ['s1', 's2', 's3'] });
    expect(plan).toMatchObject({ expired: false, known: true, conflicts: [], sensitive: [], tooLarge: [] });
    expect(plan.files).toEqual([
      { path: 'a.txt', action: 'restore', step: 's1' },
      { path: 'link', action: 'restore', step: 's3' },
      { path: 'made/inner/x.txt', action: 'delete', step: 's3' },
      { path: 'new/deep/c.txt', action: 'delete', step: 's1' },
      { path: 'run.sh', action: 'restore', step: 's3' },
      { path: 'src/b.ts', action: 'restore', step: 's2' },
      { path: 'src/gone.ts', action: 'recreate', step: 's3' },
    ]);
    const result = await applyRewind(f.place, { task: 't1', steps: ['s1', 's2', 's3'], rewindId: 'r1' });
    expect(result.restored).toEqual(plan.files);
    expect(listTree(f.root)).toEqual(start);
    // Undone lines are never undone again.
    expect(await planRewind(f.place, { task: 't1', steps: ['s1', 's2', 's3'] })).toMatchObject({ files: [] });
    expect((await taskChanges(f.place, 't1')).every((s) => s.undone)).toBe(true);
  });

  it('says what a command changed, a folder it made or removed with a "/" after its name', async () => {
    const f = fixture({ 'app.log': 'A\n', 'old/x.txt': 'X\n', 'keep.txt': 'K\n' });
    const cp = f.rec.forCall('run_command', { 'klea/checkpoint': { task: 't', step: 's1' } });
    const { changed } = await f.rec.command(cp!, async () => {
      mkdirSync(at(f, 'logs'));
      renameSync(at(f, 'app.log'), at(f, 'logs/app.log'));
      rmSync(at(f, 'old'), { recursive: true });
    });
    expect([...changed].sort()).toEqual(['app.log', 'logs/', 'logs/app.log', 'old/', 'old/x.txt']);
  });

  it('says a command changed what overlapping commands took while it ran; the journal holds each change once', async () => {
    const f = fixture({ 'build/app.js': 'A\n', 'src/x.txt': 'X\n' });
    await f.command('t', 's0', () => undefined);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let removed!: () => void;
    const gone = new Promise<void>((r) => (removed = r));
    const cpA = f.rec.forCall('run_command', { 'klea/checkpoint': { task: 't', step: 's1' } })!;
    const a = f.rec.command(cpA, async () => {
      rmSync(at(f, 'build'), { recursive: true });
      removed();
      await held;
    });
    await gone;
    // The other command ends first: its look takes the removed folder.
    const cpB = f.rec.forCall('run_command', { 'klea/checkpoint': { task: 't', step: 's2' } })!;
    const b = await f.rec.command(cpB, async () => undefined);
    expect([...b.changed].sort()).toEqual(['build/', 'build/app.js']);
    release();
    expect([...(await a).changed].sort()).toEqual(['build/', 'build/app.js']);
    // A command after them is credited with nothing of theirs.
    const cpC = f.rec.forCall('run_command', { 'klea/checkpoint': { task: 't', step: 's3' } })!;
    expect((await f.rec.command(cpC, async () => undefined)).changed).toEqual([]);
    expect(await taskChanges(f.place, 't')).toEqual([
      {
        step: 's2',
        files: expect.arrayContaining([{ path: 'build/app.js', change: 'deleted' }]) as unknown,
      },
    ]);
  });

  it('undoes some steps of several that touched the same file: the content before the earliest of them', async () => {
    const f = fixture({ 'a.txt': 'v0\n', 'b.txt': 'b0\n' });
    await f.write('t', 's1', 'a.txt', 'v1\n');
    await f.write('t', 's2', 'a.txt', 'v2\n');
    await f.command('t', 's3', () => {
      writeFileSync(at(f, 'a.txt'), 'v3\n');
      unlinkSync(at(f, 'b.txt'));
    });
    await f.write('t', 's4', 'b.txt', 'b4\n');
    const plan = await planRewind(f.place, { task: 't', steps: ['s2', 's3', 's4'] });
    expect(plan.conflicts).toEqual([]);
    expect(plan.files).toEqual([
      { path: 'a.txt', action: 'restore', step: 's2' },
      { path: 'b.txt', action: 'restore', step: 's3' },
    ]);
    await applyRewind(f.place, { task: 't', steps: ['s2', 's3', 's4'], rewindId: 'r1' });
    expect(read(f, 'a.txt')).toBe('v1\n');
    expect(read(f, 'b.txt')).toBe('b0\n');
    // The rest later: s1 alone.
    await applyRewind(f.place, { task: 't', steps: ['s1', 's2', 's3', 's4'], rewindId: 'r2' });
    expect(read(f, 'a.txt')).toBe('v0\n');
  });

  it('reports a conflict where the user changed a file since, and changes nothing when planning', async () => {
    const f = fixture({ 'a.txt': 'v0\n', 'b.txt': 'b0\n', 'c.txt': 'c0\n' });
    await f.write('t', 's1', 'a.txt', 'v1\n');
    await f.command('t', 's2', () => {
      writeFileSync(at(f, 'b.txt'), 'b1\n');
      unlinkSync(at(f, 'c.txt'));
    });
    writeFileSync(at(f, 'a.txt'), 'mine\n');
    writeFileSync(at(f, 'c.txt'), 'made again\n');
    const before = listTree(f.root);
    const plan = await planRewind(f.place, { task: 't', steps: ['s1', 's2'] });
    expect(plan.conflicts).toEqual([
      { path: 'a.txt', reason: 'changed since the task changed it' },
      { path: 'c.txt', reason: 'created since the task deleted it' },
    ]);
    expect(plan.files.map((x) => x.path)).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(listTree(f.root)).toEqual(before);
    // Forced: the target wins.
    await applyRewind(f.place, { task: 't', steps: ['s1', 's2'], rewindId: 'forced' });
    expect([read(f, 'a.txt'), read(f, 'b.txt'), read(f, 'c.txt')]).toEqual(['v0\n', 'b0\n', 'c0\n']);
  });

  it('takes changes made between commands for the user’s own, not the next command’s', async () => {
    const f = fixture({ 'a.txt': 'v0\n', 'b.txt': 'b0\n' });
    await f.command('t', 's1', () => writeFileSync(at(f, 'a.txt'), 'v1\n'));
    writeFileSync(at(f, 'b.txt'), 'user\n');
    await f.command('t', 's2', () => writeFileSync(at(f, 'a.txt'), 'v2\n'));
    expect(await taskChanges(f.place, 't')).toEqual([
      { step: 's1', files: [{ path: 'a.txt', change: 'changed' }] },
      { step: 's2', files: [{ path: 'a.txt', change: 'changed' }] },
    ]);
    const idx = await f.rec.statIndex();
    expect(idx.lastMode).toBe('events');
  });

  it('never reads or stores a sensitive file, and a rewind leaves it as it is and says so', async () => {
    const secret = `SECRET_${randomBytes(8).toString('hex')}`;
    const later = `LATER_${randomBytes(8).toString('hex')}`;
    const f = fixture({ '.env': `API_KEY=${secret}\n`, 'a.txt': 'a0\n', 'keys/id_rsa': secret });
    await f.command('t', 's1', () => {
      writeFileSync(at(f, '.env'), `API_KEY=${later}\n`);
      writeFileSync(at(f, 'a.txt'), `a1 ${secret.length}\n`);
      writeFileSync(at(f, 'server.pem'), later);
    });
    await f.write('t', 's2', '.env.local', `X=${later}\n`);
    expect(filesContaining(f.store, secret)).toEqual([]);
    expect(filesContaining(f.store, later)).toEqual([]);
    const plan = await planRewind(f.place, { task: 't', steps: ['s1', 's2'] });
    expect(plan.sensitive).toEqual(['.env', '.env.local', 'server.pem']);
    expect(plan.files).toEqual([{ path: 'a.txt', action: 'restore', step: 's1' }]);
    const result = await applyRewind(f.place, { task: 't', steps: ['s1', 's2'], rewindId: 'r' });
    expect(result.sensitive).toEqual(['.env', '.env.local', 'server.pem']);
    expect(read(f, '.env')).toBe(`API_KEY=${later}\n`);
    expect(read(f, 'a.txt')).toBe('a0\n');
    expect(filesContaining(f.store, secret)).toEqual([]);
    expect(filesContaining(f.store, later)).toEqual([]);
  });

  it('journals a step whose content cannot fit as tooLarge, and a rewind names it', async () => {
    const f = fixture({ 'big.txt': 'x'.repeat(6000), 'small.txt': 's0\n' }, { maxBytes: 4000 });
    await f.write('t', 's1', 'big.txt', 'tiny\n');
    await f.write('t', 's2', 'small.txt', 's1\n');
    const plan = await planRewind(f.place, { task: 't', steps: ['s1', 's2'] });
    expect(plan.tooLarge).toEqual(['s1']);
    expect(plan.files).toEqual([{ path: 'small.txt', action: 'restore', step: 's2' }]);
    expect((await taskChanges(f.place, 't'))[0]).toEqual({
      step: 's1',
      files: [{ path: 'big.txt', change: 'changed' }],
      tooLarge: true,
    });
  });

  it('prunes the oldest tasks first when the store passes its bound', async () => {
    const content = (c: string) => c.repeat(1500);
    const f = fixture({ 'a.txt': content('a'), 'b.txt': content('b'), 'c.txt': content('c') }, { maxBytes: 4000 });
    await f.write('old', 's1', 'a.txt', 'A\n');
    await new Promise((r) => setTimeout(r, 5));
    await f.write('mid', 's1', 'b.txt', 'B\n');
    await new Promise((r) => setTimeout(r, 5));
    await f.write('new', 's1', 'c.txt', 'C\n');
    expect(await planRewind(f.place, { task: 'old', steps: ['s1'] })).toMatchObject({ expired: true, known: true });
    expect(await planRewind(f.place, { task: 'never', steps: ['s1'] })).toMatchObject({ expired: true, known: false });
    expect(await planRewind(f.place, { task: 'mid', steps: ['s1'] })).toMatchObject({ expired: false });
    expect(await planRewind(f.place, { task: 'new', steps: ['s1'] })).toMatchObject({ expired: false, tooLarge: [] });
    const blobs = path.join(projectLayout(f.store, f.root).blobs);
    const stored = readdirSync(blobs)
      .flatMap((d) => readdirSync(path.join(blobs, d)).map((b) => statSync(path.join(blobs, d, b)).size))
      .reduce((x, y) => x + y, 0);
    expect(stored).toBeLessThanOrEqual(4000);
    await applyRewind(f.place, { task: 'new', steps: ['s1'], rewindId: 'r' });
    expect(read(f, 'c.txt')).toBe(content('c'));
  });

  it('applies a rewind once: a retry after a crash half-way finishes it, and a second call answers the same', async () => {
    const f = fixture({ 'a.txt': 'a0\n', 'b.txt': 'b0\n', 'c.txt': 'c0\n', 'd.txt': 'd0\n' });
    await f.command('t', 's1', () => {
      for (const x of ['a', 'b', 'c', 'd']) writeFileSync(at(f, `${x}.txt`), `${x}1\n`);
      writeFileSync(at(f, 'e.txt'), 'new\n');
    });
    const req = { task: 't', steps: ['s1'], rewindId: 'rw-1' };
    let applied = 0;
    await expect(
      applyRewind(f.place, req, {
        afterFile: () => {
          if (++applied === 2) throw new Error('crash');
        },
      })
    ).rejects.toThrow('crash');
    // Half-way: e.txt deleted and a.txt put back (the crash came after a.txt, before it was recorded).
    expect(existsSync(at(f, 'e.txt'))).toBe(false);
    expect(read(f, 'a.txt')).toBe('a0\n');
    expect(read(f, 'd.txt')).toBe('d1\n');
    // The user changes e.txt's place meanwhile: a path already done is never done again.
    writeFileSync(at(f, 'e.txt'), 'user made it\n');
    const first = await applyRewind(f.place, req);
    expect(first.restored.map((x) => x.path)).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']);
    expect(['a', 'b', 'c', 'd'].map((x) => read(f, `${x}.txt`))).toEqual(['a0\n', 'b0\n', 'c0\n', 'd0\n']);
    expect(read(f, 'e.txt')).toBe('user made it\n');
    writeFileSync(at(f, 'a.txt'), 'changed after the rewind\n');
    expect(await applyRewind(f.place, req)).toEqual(first);
    expect(read(f, 'a.txt')).toBe('changed after the rewind\n');
  });

  it('refuses paths a tampered journal points outside the project, through a symlink or into own state', async () => {
    const f = fixture({ 'a.txt': 'a0\n' });
    const outside = path.join(path.dirname(f.root), 'outside.txt');
    writeFileSync(outside, 'outside\n');
    mkdirSync(path.join(path.dirname(f.root), 'elsewhere'));
    symlinkSync('../elsewhere', at(f, 'escape'));
    await f.write('t', 's1', 'a.txt', 'a1\n');
    const dir = taskDir(projectLayout(f.store, f.root), 't');
    const evil = (p: string) =>
      JSON.stringify({
        v: 1,
        key: `k-${p}`,
        step: 's1',
        tool: 'write_file',
        at: Date.now(),
        files: [{ p, b: { t: 'absent' }, a: { t: 'file', hash: sha256('x'), mode: 420 } }],
      }) + '\n';
    const refused = [
      '../outside.txt',
      '/etc/passwd',
      'sub/../../outside.txt',
      'escape/planted.txt',
      '.git/hooks/x',
      '.klea/state.json',
    ];
    for (const p of refused) appendFileSync(journalFile(dir), evil(p));
    appendFileSync(journalFile(dir), 'not json\n{"v":1}\n');
    const place = { ...f.place, ownState: [at(f, '.klea')] };
    const plan = await planRewind(place, { task: 't', steps: ['s1'] });
    expect(plan.files).toEqual([{ path: 'a.txt', action: 'restore', step: 's1' }]);
    expect(plan.conflicts.map((c) => c.path).sort()).toEqual(refused.sort());
    expect(plan.conflicts.every((c) => c.reason.startsWith('refused: '))).toBe(true);
    writeFileSync(path.join(path.dirname(f.root), 'elsewhere', 'planted.txt'), 'x');
    await applyRewind(place, { task: 't', steps: ['s1'], rewindId: 'r' });
    expect(existsSync(at(f, '.klea'))).toBe(false);
    expect(readFileSync(outside, 'utf8')).toBe('outside\n');
    expect(readFileSync(path.join(path.dirname(f.root), 'elsewhere', 'planted.txt'), 'utf8')).toBe('x');
    expect(read(f, 'a.txt')).toBe('a0\n');
  });

  it('journals a retried call once: lines of one idempotency key are one', async () => {
    const f = fixture({ 'a.txt': 'a0\n' });
    await f.command('t', 's1', () => writeFileSync(at(f, 'a.txt'), 'a1\n'), 'same-key');
    await f.command('t', 's1', () => writeFileSync(at(f, 'a.txt'), 'a2\n'), 'same-key');
    expect(await taskChanges(f.place, 't')).toEqual([{ step: 's1', files: [{ path: 'a.txt', change: 'changed' }] }]);
    await applyRewind(f.place, { task: 't', steps: ['s1'], rewindId: 'r' });
    expect(read(f, 'a.txt')).toBe('a0\n');
  });

  it('keeps its index across a restart: changes made while the server was down are the user’s', async () => {
    const others = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`other/o${i}.txt`, `o${i}\n`]));
    // Files changed in the last 100 ms count as racy (read again whatever their stat): the fixture's are older.
    const f = fixture({ 'a.txt': 'a0\n', 'b.txt': 'b0\n', ...others }, { racyMs: 100 });
    await new Promise((r) => setTimeout(r, 150));
    await f.command('t', 's1', () => writeFileSync(at(f, 'a.txt'), 'a1\n'));
    await new Promise((r) => setTimeout(r, 150));
    f.restart();
    writeFileSync(at(f, 'b.txt'), 'user while down\n');
    await f.command('t', 's2', () => writeFileSync(at(f, 'a.txt'), 'a2\n'));
    // One walk, stat'ing every path; of the 22 files only three reads: b.txt (changed while the server was down),
    // a.txt (the index saw it right after s1 changed it: racy, so read again), and a.txt after s2.
    expect((await f.rec.statIndex()).walks).toBe(1);
    expect((await f.rec.statIndex()).hashed).toBe(3);
    expect((await taskChanges(f.place, 't')).map((s) => s.files)).toEqual([
      [{ path: 'a.txt', change: 'changed' }],
      [{ path: 'a.txt', change: 'changed' }],
    ]);
    await applyRewind(f.place, { task: 't', steps: ['s1', 's2'], rewindId: 'r' });
    expect([read(f, 'a.txt'), read(f, 'b.txt')]).toEqual(['a0\n', 'user while down\n']);
  });

  it('finds the same changes without watching (a walk each time)', async () => {
    const f = fixture({ 'a.txt': 'a0\n', 'd/b.txt': 'b0\n' }, { watch: false });
    const start = listTree(f.root);
    await f.command('t', 's1', () => {
      writeFileSync(at(f, 'a.txt'), 'a1\n');
      rmSync(at(f, 'd'), { recursive: true });
      mkdirSync(at(f, 'e/f'), { recursive: true });
      writeFileSync(at(f, 'e/f/g.txt'), 'g\n');
    });
    expect((await f.rec.statIndex()).lastMode).toBe('walk');
    await applyRewind(f.place, { task: 't', steps: ['s1'], rewindId: 'r' });
    expect(listTree(f.root)).toEqual(start);
  });

  it('sees a directory moved away and another made in its place while watching', async () => {
    const f = fixture({ 'd/a.txt': 'a\n', 'd/sub/b.txt': 'b\n' });
    await f.command('t', 's0', () => undefined);
    const start = listTree(f.root);
    await f.command('t', 's1', () => {
      renameSync(at(f, 'd'), at(f, 'moved'));
      mkdirSync(at(f, 'd/sub'), { recursive: true });
      writeFileSync(at(f, 'd/sub/b.txt'), 'other\n');
      writeFileSync(at(f, 'moved/sub/c.txt'), 'c\n');
    });
    expect((await f.rec.statIndex()).lastMode).toBe('events');
    await applyRewind(f.place, { task: 't', steps: ['s1'], rewindId: 'r' });
    expect(listTree(f.root)).toEqual(start);
  });

  it('journals a write made while a command runs as the write’s, not the command’s', async () => {
    const f = fixture({ 'a.txt': 'a0\n', 'b.txt': 'b0\n' });
    await f.command('t', 's0', () => undefined);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const cp = f.rec.forCall('run_command', { 'klea/checkpoint': { task: 't', step: 's1' } })!;
    const command = f.rec.command(cp, async () => {
      writeFileSync(at(f, 'a.txt'), 'a1\n');
      await held;
    });
    await new Promise((r) => setTimeout(r, 20));
    await f.write('t', 's2', 'b.txt', 'b2\n');
    release();
    await command;
    expect(await taskChanges(f.place, 't')).toEqual([
      { step: 's2', files: [{ path: 'b.txt', change: 'changed' }] },
      { step: 's1', files: [{ path: 'a.txt', change: 'changed' }] },
    ]);
  });

  // Where file times tick coarsely (kernels before multigrain timestamps, some file systems), two such changes can
  // leave the same stat: a file an event names is read again, and one looked at right after it changed is racy.
  it('sees every change of a file changed again at once, to the same size', async () => {
    for (const watch of [true, false]) {
      const f = fixture({ 'a.txt': 'a0\n' }, { watch });
      const steps = Array.from({ length: 20 }, (_, i) => `s${i + 1}`);
      // Each command's change comes right after the last: often within the same tick, always of the same size.
      for (const [i, step] of steps.entries())
        await f.command('t', step, () => writeFileSync(at(f, 'a.txt'), `a${(i + 1) % 10}\n`));
      expect((await taskChanges(f.place, 't')).map((s) => s.step)).toEqual(steps);
      await applyRewind(f.place, { task: 't', steps, rewindId: 'r' });
      expect(read(f, 'a.txt')).toBe('a0\n');
    }
  });

  it('journals a command that leaves the content an earlier write left, when something changed it in between', async () => {
    const f = fixture({ 'a.txt': 'a0\n' });
    await f.command('t', 's0', () => undefined);
    await f.write('t', 's1', 'a.txt', 'X\n');
    writeFileSync(at(f, 'a.txt'), 'user\n');
    await f.command('t', 's2', () => undefined);
    await f.command('t', 's3', () => writeFileSync(at(f, 'a.txt'), 'X\n'));
    expect((await taskChanges(f.place, 't')).map((s) => s.step)).toEqual(['s1', 's3']);
  });

  it('undoes commands of random changes (files, directories, renames, modes, links) back to the exact tree', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`d${i % 6}/e${i % 4}/f${i}.txt`] = `content ${i}\n`;
    const f = fixture(files);
    await f.command('t', 'warm', () => undefined);
    const start = listTree(f.root);
    let seed = 42;
    const rand = (k: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % k;
    };
    const all = () => Object.keys(listTree(f.root));
    const modes: string[] = [];
    for (let step = 0; step < 8; step++) {
      await f.command('t', `s${step}`, () => {
        for (let op = 0; op < 40; op++) {
          const paths = all();
          const pick = paths[rand(paths.length)];
          const abs = at(f, pick);
          const st = statSync(abs, { throwIfNoEntry: false });
          const isDir = st?.isDirectory() ?? false;
          switch (rand(8)) {
            case 0:
              if (!isDir) writeFileSync(abs, `changed ${step}.${op}\n`);
              break;
            case 1:
              if (isDir) writeFileSync(path.join(abs, `new${step}-${op}.txt`), 'new\n');
              break;
            case 2:
              rmSync(abs, { recursive: true, force: true });
              break;
            case 3:
              if (isDir) mkdirSync(path.join(abs, `dir${step}-${op}/inner`), { recursive: true });
              break;
            case 4:
              renameSync(abs, at(f, `moved${step}-${op}`));
              break;
            case 5:
              if (!isDir && st) chmodSync(abs, 0o700);
              break;
            case 6:
              if (isDir) symlinkSync(`../${pick}`, path.join(abs, `link${step}-${op}`));
              break;
            case 7:
              if (isDir) {
                rmSync(abs, { recursive: true, force: true });
                mkdirSync(abs);
                writeFileSync(path.join(abs, 'again.txt'), 'again\n');
              }
              break;
          }
        }
      });
      modes.push((await f.rec.statIndex()).lastMode ?? '');
    }
    expect(modes.every((m) => m === 'events')).toBe(true);
    const steps = Array.from({ length: 8 }, (_, i) => `s${i}`);
    const plan = await planRewind(f.place, { task: 't', steps });
    expect(plan.conflicts).toEqual([]);
    await applyRewind(f.place, { task: 't', steps, rewindId: 'r' });
    expect(listTree(f.root)).toEqual(start);
  });

  it('leaves git’s directory and installed dependencies out', async () => {
    const f = fixture({ '.git/HEAD': 'ref: main\n', 'node_modules/p/index.js': '1\n', 'a.txt': 'a\n' });
    await f.command('t', 's1', () => {
      writeFileSync(at(f, '.git/HEAD'), 'ref: other\n');
      writeFileSync(at(f, 'node_modules/p/index.js'), '2\n');
      mkdirSync(at(f, 'sub/node_modules'), { recursive: true });
      writeFileSync(at(f, 'sub/node_modules/x.js'), 'x\n');
    });
    expect(await taskChanges(f.place, 't')).toEqual([]);
    expect(filesContaining(f.store, 'ref: main')).toEqual([]);
  });

  it('ignores calls without a well-formed checkpoint', () => {
    const f = fixture({});
    expect(f.rec.forCall('write_file', {})).toBeNull();
    expect(f.rec.forCall('write_file', { 'klea/checkpoint': { task: 't' } })).toBeNull();
    expect(f.rec.forCall('write_file', { 'klea/checkpoint': { task: '', step: 's' } })).toBeNull();
    expect(f.rec.forCall('write_file', { 'klea/checkpoint': { task: 't', step: 's' } })).toMatchObject({
      task: 't',
      step: 's',
    });
  });
});
