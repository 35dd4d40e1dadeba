/**
 * Warm sandboxes (tools/workspace/warm-sandboxes.ts): bubblewrap started ahead of its command. A command run in
 * one sees exactly what it would see in a sandbox started for it; a sensitive file created or replaced since the
 * warm sandbox was made stays hidden; a call with a grant never gets one; and none outlives its server.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SENSITIVE_PATTERNS } from '../../common/config';
import { signGrants } from '../../runtime/grant-signing';
import { GRANTS_META_KEY } from '../../common/workspace-protocol';
import { createCommandSandbox, type CommandSandbox } from '../../tools/workspace/command-sandbox';
import { runCommand, type CommandLaunch } from '../../tools/workspace/commands';
import { createPathGate } from '../../tools/workspace/path-gate';
import { WARM_SCRIPT, WarmPool } from '../../tools/workspace/warm-sandboxes';
import { processesWith } from '../support/processes';
import { until } from '../support/until';

const KEY = 'test-grant-key-warm-0123456789';
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-warm-')));

function project(name: string, files: Record<string, string> = {}): string {
  const dir = path.join(base, name);
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, f), text);
  return dir;
}

function sandboxFor(root: string, warm: number): CommandSandbox {
  const gate = createPathGate({ root, grantKey: KEY, sensitivePatterns: DEFAULT_SENSITIVE_PATTERNS });
  return createCommandSandbox(gate, { mode: 'bwrap', warm, grantKey: KEY });
}

/** Runs one command as run_command does; says whether it ran in a warm sandbox. */
async function run(sb: CommandSandbox, command: string, cwd: string, meta?: unknown) {
  const launch: CommandLaunch = await sb.prepare(command, cwd, meta);
  const result = await runCommand(launch, cwd, 20_000, 64 * 1024);
  return { warm: 'warm' in launch, ...result };
}

describe('warm sandboxes', () => {
  const pools: CommandSandbox[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });
  const make = (root: string, warm: number) => {
    const sb = sandboxFor(root, warm);
    pools.push(sb);
    return sb;
  };

  it('a command in a warm sandbox sees what it would in a sandbox started for it', async () => {
    const root = project('same', { '.env': 'SECRET=warm-canary\n', 'notes.txt': 'hello\n' });
    const sub = path.join(root, 'sub');
    // Quotes, a variable, a here-document and trailing newlines: the command reaches the shell byte for byte.
    const probe = [
      'pwd',
      'printf "%s|" "$HOME" "$TMPDIR" "$(hostname)" "$(id -u)"',
      'echo; ls -A /tmp | wc -l; ulimit -v; cat ../.env | wc -c; cat ../notes.txt',
      "cat <<'EOF'\n$NOT_EXPANDED 'single' \"double\"\nEOF",
      'ls / | tr "\\n" " "',
      '',
      '',
    ].join('\n');
    const warm = make(root, 4);
    const cold = make(root, 0);
    await run(warm, 'true', root);
    await until('a warm sandbox is ready', () => (warm.warm.size >= 1 ? true : undefined), 10_000);
    const inWarm = await run(warm, probe, sub);
    const inCold = await run(cold, probe, sub);
    expect(inWarm.warm).toBe(true);
    expect(inCold.warm).toBe(false);
    expect(inWarm.exit_code).toBe(0);
    expect(inWarm.stderr).toBe('');
    expect(inWarm.stdout).toBe(inCold.stdout);
    expect(inWarm.stdout).toContain(`${sub}\n/home/sandbox|/tmp|klea-sandbox|0|`);
    expect(inWarm.stdout).toContain('$NOT_EXPANDED \'single\' "double"');
    // The sensitive file reads as empty in both.
    expect(inWarm.stdout).toMatch(/\n0\nhello\n/);
    // Exit codes and stderr come through as they would.
    await until('a warm sandbox is ready again', () => (warm.warm.size >= 1 ? true : undefined), 10_000);
    const failing = await run(warm, 'echo out; echo err >&2; exit 7', root);
    expect(failing).toMatchObject({ warm: true, exit_code: 7, stdout: 'out\n', stderr: 'err\n' });
  }, 60_000);

  it('a sensitive file replaced or created after the warm sandbox was made stays hidden', async () => {
    const root = project('replaced', { '.env': 'SECRET=old-canary\n' });
    const sb = make(root, 2);
    expect((await run(sb, 'cat .env', root)).stdout).toBe('');
    await until('a warm sandbox is ready', () => (sb.warm.size >= 1 ? true : undefined), 10_000);
    // An editor's atomic save: a new file renamed over the old one (the old cover would be detached by the kernel).
    writeFileSync(path.join(root, '.env.tmp-save'), 'SECRET=new-canary\n');
    renameSync(path.join(root, '.env.tmp-save'), path.join(root, '.env'));
    const after = await run(sb, 'cat .env; echo end', root);
    expect(after.warm).toBe(false);
    expect(after.stdout).toBe('end\n');
    expect(after.stdout).not.toContain('canary');

    await until('a warm sandbox is ready again', () => (sb.warm.size >= 1 ? true : undefined), 10_000);
    writeFileSync(path.join(root, 'id_rsa'), 'PRIVATE-KEY-canary\n');
    const created = await run(sb, 'cat id_rsa; echo end', root);
    expect(created.warm).toBe(false);
    expect(created.stdout).toBe('end\n');
  }, 60_000);

  it('a call that carries a grant never runs in a warm sandbox, and no warm sandbox holds a grant', async () => {
    const root = project('granted');
    const outside = path.join(base, 'outside-granted');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'shared.txt'), 'granted-canary\n');
    const sb = make(root, 4);
    await run(sb, 'true', root);
    await until('a warm sandbox is ready', () => (sb.warm.size >= 1 ? true : undefined), 10_000);
    const meta = { [GRANTS_META_KEY]: signGrants(KEY, [{ path: outside, op: 'read' }]) };
    const granted = await run(sb, `cat ${outside}/shared.txt`, root, meta);
    expect(granted).toMatchObject({ warm: false, exit_code: 0, stdout: 'granted-canary\n' });
    // The next command without the grant cannot see the path, warm or not.
    await until('a warm sandbox is ready', () => (sb.warm.size >= 1 ? true : undefined), 10_000);
    const after = await run(sb, `cat ${outside}/shared.txt`, root);
    expect(after.warm).toBe(true);
    expect(after.exit_code).not.toBe(0);
    expect(after.stdout).not.toContain('canary');
    expect(processesWith(outside)).toEqual([]);
  }, 60_000);

  it('another network setting gets a sandbox of its own', async () => {
    const root = project('network');
    const sb = make(root, 2);
    await run(sb, 'true', root, { 'klea/network': 'off' });
    await until('a warm sandbox is ready', () => (sb.warm.size >= 1 ? true : undefined), 10_000);
    const on = await run(sb, 'test -e /etc/resolv.conf && echo names', root, { 'klea/network': 'on' });
    expect(on.warm).toBe(false);
    const off = await run(sb, 'test -e /etc/resolv.conf && echo names || echo none', root, { 'klea/network': 'off' });
    expect(off.stdout).toBe('none\n');
    if (existsSync('/etc/resolv.conf')) expect(on.stdout).toBe('names\n');
  }, 60_000);

  it('ready sandboxes end with their server, leaving no process behind', async () => {
    const root = project('closing');
    const sb = sandboxFor(root, 3);
    // Three commands at once: the pool makes three ready for the next burst.
    await Promise.all([1, 2, 3].map(() => run(sb, 'sleep 0.2', root)));
    await until('three warm sandboxes are ready', () => (sb.warm.size === 3 ? true : undefined), 10_000);
    expect(processesWith(WARM_SCRIPT).length).toBeGreaterThanOrEqual(3);
    await sb.close();
    await until('no warm sandbox is left', () => (processesWith(root).length ? undefined : true), 10_000);
  }, 60_000);
});

describe("the workspace server's --warm flag", () => {
  it('takes a whole number, 0 turning warm sandboxes off, and refuses anything else clearly', () => {
    const script = path.join(__dirname, '../../dist/tools/workspace/server.js');
    const root = project('flag');
    for (const bad of ['-1', 'two', '1.5', '']) {
      const r = spawnSync(process.execPath, [script, '--root', root, '--warm', bad], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('--warm takes a whole number (0 or more)');
    }
    // 0 is accepted: the server starts and waits for a client (its stdin closes at once here, so it ends).
    const ok = spawnSync(process.execPath, [script, '--root', root, '--warm', '0'], { encoding: 'utf8', input: '' });
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
  });
});

describe('the warm pool', () => {
  /** Warm "sandboxes" that are plain shells running the same script (the pool does not care what wraps it). */
  const plain = (key: string, cwd: string) => ({
    key,
    launch: () => ({
      file: '/bin/sh',
      args: ['-c', WARM_SCRIPT],
      cap: null,
      env: { PATH: process.env.PATH ?? '' },
      cwd,
    }),
  });

  it('keeps as many as ran at once, hands each out once, ends unused ones after their idle time', async () => {
    const dir = project('pool');
    const pool = new WarmPool({ max: 4, idleMs: 2000, refillDelayMs: 10 });
    try {
      const ends = [1, 2, 3].map(() => pool.started(async () => plain('k', dir)));
      await until('three are ready', () => (pool.size === 3 ? true : undefined), 5000);
      ends.forEach((end) => end());
      // Another key: none fits, and the ready ones are for a policy that no longer holds.
      expect(pool.take('other')).toBeNull();
      expect(pool.size).toBe(0);
      pool.started(async () => plain('k', dir))();
      await until('three are ready again', () => (pool.size === 3 ? true : undefined), 5000);
      const w = pool.take('k')!;
      expect(pool.size).toBe(2);
      const child = w.run(path.join(dir, 'sub'), 'pwd; printf "%s" "$1"\n\n');
      let out = '';
      child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      await new Promise((r) => child.once('close', r));
      expect(out).toBe(`${path.join(dir, 'sub')}\n`);
      expect(w.usable).toBe(false);
      // Unused for their idle time: ended.
      await until('the idle ones end', () => (pool.size === 0 ? true : undefined), 10_000);
    } finally {
      await pool.close();
    }
  }, 30_000);

  it('with max 0 makes none', async () => {
    const dir = project('pool-off');
    const pool = new WarmPool({ max: 0, idleMs: 1000, refillDelayMs: 1 });
    pool.started(async () => plain('k', dir))();
    await new Promise((r) => setTimeout(r, 100));
    expect(pool.size).toBe(0);
    expect(pool.take('k')).toBeNull();
    await pool.close();
  });
});
