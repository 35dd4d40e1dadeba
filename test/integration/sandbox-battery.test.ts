/**
 * The command sandbox's battery, through the whole task path (scripted model, real dev server, real workspace
 * server, real bubblewrap): with the network off a command resolves no name and reaches no socket of the host (the
 * resolver's, D-Bus, an ssh agent's, its loopback); it has no controlling terminal to inject keystrokes into
 * (TIOCSTI); it cannot make a user namespace of its own (where it would hold every capability, to work at the masks);
 * the file tools never follow a symlink it planted; and with the network on, the egress proxy refuses the loopback
 * and private addresses in every spelling, and a Host other than the host it checked. Where bubblewrap cannot keep
 * commands from making user namespaces, commands are refused and /healthz says why.
 *
 * Each attack has a control that shows the breach the test would see with the protection off: the sandbox off
 * (tools.sandbox.mode: none), the user's grant, or the same spelling or probe outside the sandbox. A symlink swapped
 * in the middle of a file tool's call is tested where the swap can be put exactly there: workspace-server.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { createApp } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import type { TaskInput } from '../../common/task';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { everythingShown, makeProject, picksByStep, plan, step, TaskDriver } from '../support/task-driver';
import { permissionSignal } from '../../workflows/task/messages';

type Call = { name: string; args: Record<string, unknown> };
type Decision = 'allow_once' | 'allow_session' | 'deny';
const cmd = (command: string): Call => ({ name: 'workspace__run_command', args: { command } });
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** A shell word that yields `s` without spelling it (so the permission gate cannot see the path). */
const hiddenWord = (s: string) => `$(echo ${b64(s)} | base64 -d)`;

/** Runs a task whose steps each make one call, answering permission requests with `decisions`, then denying. */
async function runCalls(
  fake: FakeModel,
  env: TestEnv,
  projectDir: string,
  calls: Call[],
  decisions: Decision[] = [],
  extra: Partial<TaskInput> = {}
): Promise<{ t: TaskDriver; asked: number; outputs: string[] }> {
  const steps = calls.map((_, i) => step(`s${i + 1}`, `Make call ${i + 1}`, { depends_on: i ? [`s${i}`] : [] }));
  fake.on('write_plan', { call: plan(steps) });
  // Each step's own call; a step whose call failed (an attack, by design) has nothing more to try.
  fake.always('pick_tools', picksByStep(Object.fromEntries(calls.map((c, i) => [`s${i + 1}`, [c]]))));
  fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'the output is the answer' } });
  fake.always('compose_answer', { content: 'done' });
  const t = await TaskDriver.start(env, 'Make these calls', projectDir, extra);
  for (;;) {
    const s = await t.state();
    if (['done', 'failed', 'cancelled'].includes(s.status)) break;
    for (const p of s.pending)
      if (p.kind === 'permission')
        for (const r of p.requests)
          await t.handle
            .signal(permissionSignal, { requestId: r.requestId, decision: decisions.shift() ?? 'deny' })
            .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
  }
  await t.result();
  const events = await t.events();
  return {
    t,
    asked: events.filter((e: KleaEvent) => e.type === 'permission_requested').length,
    outputs: (await t.state()).steps.map((s) => s.result ?? ''),
  };
}

/** A listener (a path or an abstract unix socket, or a TCP port on the host's loopback) that counts connections. */
async function countingListener(where: string | { port: 0; host: '127.0.0.1' }) {
  const l = { connections: 0, port: 0, server: net.createServer((s) => (l.connections++, s.destroy())) };
  await new Promise<void>((r) =>
    typeof where === 'string' ? l.server.listen(where, () => r()) : l.server.listen(0, '127.0.0.1', () => r())
  );
  if (typeof where !== 'string') l.port = (l.server.address() as net.AddressInfo).port;
  return l;
}

/**
 * With the network off: what a command resolves and reaches. `agent` and `bus` are the base64 of a unix socket's
 * path (as SSH_AUTH_SOCK names an agent's) and of an abstract socket's name (as a D-Bus session bus may be); `port`
 * is a TCP listener on the host's loopback.
 */
const NET_PROBE = `import base64, socket, subprocess, sys
b = lambda s: base64.b64decode(s).decode()
out = []
for name in ("localhost", "example.com"):
    try:
        out.append("resolved %s: %s" % (name, socket.getaddrinfo(name, 80)[0][4][0]))
    except OSError as e:
        out.append("no name %s" % name)
r = subprocess.run(["getent", "hosts", "localhost"], capture_output=True, text=True)
out.append("getent localhost: rc=%d" % r.returncode)
# An abstract name as Node binds it: the whole of sun_path, padded with NULs.
bus = "\\0" + b(sys.argv[2])
for label, where in [("agent", b(sys.argv[1])), ("bus", bus + "\\0" * (108 - len(bus))),
                     ("dbus", "/run/dbus/system_bus_socket"), ("nscd", "/var/run/nscd/socket"),
                     ("resolved", "/run/systemd/resolve/io.systemd.Resolve")]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(where)
        out.append("connected %s" % label)
    except OSError as e:
        out.append("no %s: %s" % (label, e.strerror))
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(sys.argv[3])))
    out.append("connected loopback")
except OSError as e:
    out.append("no loopback: %s" % e.strerror)
print("\\n".join(out))
`;

/** Tries to inject a keystroke into a terminal: its controlling one (/dev/tty) and its standard streams. */
const TIOCSTI_PROBE = `import fcntl, os, termios
hits = []
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    fcntl.ioctl(fd, termios.TIOCSTI, b"#")
    hits.append("/dev/tty")
except OSError as e:
    print("/dev/tty: %s" % e.strerror)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"#")
        hits.append("fd %d" % fd)
    except OSError as e:
        print("fd %d: %s" % (fd, e.strerror))
print("injected into: " + (", ".join(hits) if hits else "nothing"))
`;

/** Makes a user namespace (with unshare(1) and unshare(2)), and from there tries to unmount the mask over .env. */
const USERNS_PROBE =
  'unshare -U true 2>&1; echo "unshare -U: rc=$?"; ' +
  `unshare -Urm sh -c "umount ${hiddenWord('.env')}; cat ${hiddenWord('.env')}" 2>&1; ` +
  `python3 -c "import ctypes, os; r = ctypes.CDLL(None, use_errno=True).unshare(0x10000000); ` +
  `print('unshare(CLONE_NEWUSER):', 'made' if r == 0 else os.strerror(ctypes.get_errno()))"`;

/** The network probe of sandbox-network.test.ts, with a Host of one's choosing: `node probe.js get <url> [host]`. */
const PROXY_PROBE = `const http = require('http');
const proxy = new URL(process.env.HTTP_PROXY);
const [how, target, host] = process.argv.slice(2);
const say = (what) => console.log(how + ' ' + target + ': ' + what);
const req = http.request({ host: proxy.hostname, port: proxy.port, method: how === 'connect' ? 'CONNECT' : 'GET',
  path: target, headers: { host: host || (how === 'connect' ? target : new URL(target).host) } });
const read = (status, stream, first) => { let b = first || ''; stream.on('data', (d) => (b += d)); stream.on('end', () => say(status + ' ' + b.trim())); };
req.on('connect', (res, socket, head) => (res.statusCode === 200 ? (say('200 tunnel open'), socket.destroy()) : read(res.statusCode, socket, head.toString())));
req.on('response', (res) => read(res.statusCode, res));
req.on('error', (e) => say(e.code));
req.end();
`;

const SECRET = 'SECRET=canary-behind-the-mask';
const CANARY = 'canary: outside the project, reached only through a planted link';

describe('the command sandbox: the battery', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'battery' }, (f, e) => {
    fake = f;
    env = e;
  });

  /** The network-off probe through a task; the listeners it reaches for and the connections they saw. */
  async function probeNetworkOff() {
    const p = makeProject({ 'netprobe.py': NET_PROBE });
    const agentPath = path.join(p.outside, 'agent.sock');
    const busName = `klea-test-bus-${process.pid}-${Date.now()}`;
    const agent = await countingListener(agentPath);
    const bus = await countingListener(`\0${busName}`);
    const loopback = await countingListener({ port: 0, host: '127.0.0.1' });
    try {
      const { outputs } = await runCalls(fake, env, p.dir, [
        cmd(`python3 netprobe.py ${b64(agentPath)} ${b64(busName)} ${loopback.port} 2>&1`),
      ]);
      return {
        output: outputs[0],
        connections: { agent: agent.connections, bus: bus.connections, loopback: loopback.connections },
      };
    } finally {
      for (const l of [agent, bus, loopback]) await new Promise((r) => l.server.close(r));
    }
  }

  it("attack: with the network off a command resolves no name and reaches no host socket (resolver's, D-Bus, an agent's, the loopback)", async () => {
    const { output, connections } = await probeNetworkOff();
    expect(connections).toEqual({ agent: 0, bus: 0, loopback: 0 });
    expect(output).toContain('no name localhost');
    expect(output).toContain('no name example.com');
    expect(output).toContain('getent localhost: rc=2');
    expect(output).toMatch(/no agent: No such file or directory/);
    expect(output).toMatch(/no bus: Connection refused/);
    for (const socket of ['dbus', 'nscd', 'resolved'])
      expect(output).toContain(`no ${socket}: No such file or directory`);
    expect(output).toMatch(/no loopback: Connection refused/);
    expect(output).not.toMatch(/^connected|^resolved/m);
  });

  it('attack: a command has no controlling terminal to inject keystrokes into (TIOCSTI)', async () => {
    const p = makeProject({ 'tiocsti.py': TIOCSTI_PROBE });
    const { outputs } = await runCalls(fake, env, p.dir, [cmd('python3 tiocsti.py 2>&1')]);
    expect(outputs[0]).toContain('/dev/tty: No such device or address');
    expect(outputs[0]).toContain('injected into: nothing');
  });

  it('control: the same probe given a terminal (outside the sandbox, under script(1)) injects into it', () => {
    const p = makeProject({ 'tiocsti.py': TIOCSTI_PROBE });
    const out = execFileSync('script', ['-qec', `python3 ${path.join(p.dir, 'tiocsti.py')}`, '/dev/null'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Kernels that forbid TIOCSTI to all but CAP_SYS_ADMIN (dev.tty.legacy_tiocsti = 0) refuse it themselves.
    const legacy = existsSync('/proc/sys/dev/tty/legacy_tiocsti')
      ? readFileSync('/proc/sys/dev/tty/legacy_tiocsti', 'utf8').trim()
      : '1';
    if (legacy === '1' || process.getuid?.() === 0) expect(out).toMatch(/injected into: \/dev\/tty/);
    else expect(out).toMatch(/\/dev\/tty: Input\/output error/);
  });

  it('attack: a command cannot make a user namespace of its own, to unmount the mask over .env from', async () => {
    const p = makeProject({ '.env': `${SECRET}\n` });
    const { t, outputs } = await runCalls(fake, env, p.dir, [cmd(USERNS_PROBE)]);
    expect(outputs[0]).toMatch(/unshare: unshare failed: No space left on device\nunshare -U: rc=1/);
    expect(outputs[0]).toContain('unshare(CLONE_NEWUSER): No space left on device');
    expect(await everythingShown(t)).not.toContain(SECRET);
  });

  /** A link a command plants to a folder outside, then every file tool through it (and through a link to a file). */
  async function throughPlantedLinks(decisions: Decision[]) {
    const p = makeProject({ 'notes/readme.md': 'inside\n' });
    const outside = path.join(p.outside, 'private');
    execFileSync('mkdir', ['-p', outside]);
    writeFileSync(path.join(outside, 'secret.txt'), `${CANARY}\n`);
    writeFileSync(path.join(outside, 'name-only-outside.txt'), '');
    const { t, asked, outputs } = await runCalls(
      fake,
      env,
      p.dir,
      [
        cmd(`ln -s ${hiddenWord(outside)} link; ln -s ${hiddenWord(path.join(outside, 'secret.txt'))} notes/x.md`),
        { name: 'workspace__read_file', args: { path: 'link/secret.txt' } },
        { name: 'workspace__read_file', args: { path: 'notes/x.md' } },
        { name: 'workspace__list_dir', args: { path: 'link' } },
        { name: 'workspace__find_files', args: { pattern: '*.txt', path: 'link' } },
        { name: 'workspace__grep', args: { pattern: 'canary', path: 'link' } },
        { name: 'workspace__write_file', args: { path: 'link/planted.txt', content: 'planted\n' } },
        { name: 'workspace__edit_file', args: { path: 'notes/x.md', old_string: 'canary', new_string: 'pwned' } },
      ],
      decisions
    );
    return {
      asked,
      outputs,
      shown: await everythingShown(t),
      planted: existsSync(path.join(outside, 'planted.txt')),
      secret: readFileSync(path.join(outside, 'secret.txt'), 'utf8'),
    };
  }

  it('attack: the file tools never follow a symlink a command planted; each call through one is asked about, and denied, touches nothing', async () => {
    const r = await throughPlantedLinks([]);
    expect(r.asked).toBe(7);
    expect(r.shown).not.toContain(CANARY);
    expect(r.shown).not.toContain('name-only-outside');
    expect(r.planted).toBe(false);
    expect(r.secret).toBe(`${CANARY}\n`);
    for (const o of r.outputs.slice(1)) expect(o).toMatch(/denied by the user/);
  });

  it('control: allowed, the same calls do reach through the links (what the test would see without the gate)', async () => {
    const r = await throughPlantedLinks(Array(7).fill('allow_once'));
    expect(r.shown).toContain(CANARY);
    expect(r.shown).toContain('name-only-outside');
    expect(r.planted).toBe(true);
    expect(r.secret).toBe(`${CANARY.replace('canary', 'pwned')}\n`);
  });

  describe('with the network on', () => {
    /** Spellings of the loopback (and of the metadata address) that a careless proxy would take for a name. */
    const spellings = (port: number) => [
      [`get http://2130706433:${port}/`, 'is a loopback address'],
      [`get http://0x7f.1:${port}/`, 'is a loopback address'],
      [`get http://0177.0.0.1:${port}/`, 'is a loopback address'],
      [`get http://127.0.0.1.:${port}/`, '127.0.0.1 is a loopback address'],
      [`get http://[::ffff:127.0.0.1]:${port}/`, '::ffff:7f00:1 is a loopback address'],
      [`connect 2130706433:${port}`, '2130706433 (127.0.0.1) is a loopback address'],
      [`connect 0x7f000001:${port}`, '0x7f000001 (127.0.0.1) is a loopback address'],
      [`connect 017700000001:${port}`, '017700000001 (127.0.0.1) is a loopback address'],
      [`connect 127.1:${port}`, '127.1 (127.0.0.1) is a loopback address'],
      [`connect 127.0.0.1.:${port}`, '127.0.0.1 is a loopback address'],
      [`connect localhost.:${port}`, 'localhost resolves to'],
      [`connect [::ffff:7f00:1]:${port}`, '::ffff:7f00:1 is a loopback address'],
      [`connect [0:0:0:0:0:ffff:127.0.0.1]:${port}`, '(::ffff:7f00:1) is a loopback address'],
      ['get http://0xa9fea9fe/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ];

    it('attack: the egress proxy refuses the loopback and private addresses in every spelling, and a Host that differs from what it checked', async () => {
      const listener = await countingListener({ port: 0, host: '127.0.0.1' });
      try {
        const p = makeProject({ 'probe.js': PROXY_PROBE });
        const cases = [
          ...spellings(listener.port),
          // A public address with the Host of a service inside (a front that routes by Host would take it there).
          [`get http://93.184.215.14/ 127.0.0.1:${listener.port}`, 'the Host header (127.0.0.1:'],
          [`connect 93.184.215.14:443 localhost:${listener.port}`, 'the Host header (localhost:'],
        ];
        const { outputs } = await runCalls(
          fake,
          env,
          p.dir,
          cases.map(([c]) => cmd(`node probe.js ${c}`)),
          [],
          { network: 'on' }
        );
        cases.forEach(([c, why], i) => {
          expect([c, outputs[i]]).toEqual([c, expect.stringContaining(': 403 klea: the command sandbox')]);
          expect([c, outputs[i]]).toEqual([c, expect.stringContaining(why)]);
        });
        expect(listener.connections).toBe(0);
      } finally {
        await new Promise((r) => listener.server.close(r));
      }
    });

    it('control: outside the sandbox the same spellings reach the listener on the loopback', async () => {
      const listener = await countingListener({ port: 0, host: '127.0.0.1' });
      const port = listener.port;
      try {
        // Each client waits for the listener to close the connection, so every connection is counted by then.
        const viaUrl = [`http://2130706433:${port}/`, `http://0x7f.1:${port}/`, `http://0177.0.0.1:${port}/`];
        for (const url of viaUrl)
          await new Promise<void>((r) =>
            http
              .get(url)
              .on('error', () => undefined)
              .on('close', () => r())
          );
        for (const host of ['2130706433', '0x7f000001', '017700000001', '127.1'])
          await new Promise<void>((r) =>
            net
              .connect({ host, port })
              .on('error', () => undefined)
              .on('close', () => r())
          );
        expect(listener.connections).toBe(7);
      } finally {
        await new Promise((r) => listener.server.close(r));
      }
    });
  });
});

describe('the command sandbox: the battery with the sandbox off (the control)', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'battery-off', overrides: { tools: { sandbox: { mode: 'none' } } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('control: the same probe resolves names and reaches the agent, the bus and the loopback', async () => {
    const p = makeProject({ 'netprobe.py': NET_PROBE });
    const agentPath = path.join(p.outside, 'agent.sock');
    const busName = `klea-test-bus-${process.pid}-${Date.now()}`;
    const agent = await countingListener(agentPath);
    const bus = await countingListener(`\0${busName}`);
    const loopback = await countingListener({ port: 0, host: '127.0.0.1' });
    try {
      const { outputs } = await runCalls(fake, env, p.dir, [
        cmd(`python3 netprobe.py ${b64(agentPath)} ${b64(busName)} ${loopback.port} 2>&1`),
      ]);
      expect(outputs[0]).toMatch(/resolved localhost: /);
      expect(outputs[0]).toContain('getent localhost: rc=0');
      expect(outputs[0]).toMatch(/connected agent\nconnected bus/);
      expect(outputs[0]).toContain('connected loopback');
      expect([agent.connections, bus.connections, loopback.connections]).toEqual([1, 1, 1]);
    } finally {
      for (const l of [agent, bus, loopback]) await new Promise((r) => l.server.close(r));
    }
  });

  it('control: the same commands make a user namespace', async () => {
    const p = makeProject({ '.env': `${SECRET}\n` });
    const { outputs } = await runCalls(fake, env, p.dir, [cmd(USERNS_PROBE)]);
    expect(outputs[0]).toContain('unshare -U: rc=0');
    expect(outputs[0]).toContain('unshare(CLONE_NEWUSER): made');
  });
});

describe('the command sandbox where bubblewrap cannot keep commands from making user namespaces', () => {
  // A bubblewrap older than 0.8.0: everything but --disable-userns.
  const oldBwrap = path.join(makeProject().root, 'bwrap');
  writeFileSync(
    oldBwrap,
    '#!/bin/sh\nfor a in "$@"; do [ "$a" = --disable-userns ] && { echo "bwrap: Unknown option --disable-userns" >&2; exit 1; }; done\n' +
      'exec /usr/bin/bwrap "$@"\n'
  );
  chmodSync(oldBwrap, 0o755);
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'old-bwrap', overrides: { tools: { sandbox: { bwrap_path: oldBwrap } } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('refuses every command, never running it with less; the context event and /healthz say why', async () => {
    const p = makeProject();
    const { t, outputs } = await runCalls(fake, env, p.dir, [cmd('touch ran.txt')]);
    expect(outputs[0]).toMatch(
      /run_command refused: the command sandbox cannot run here \(bwrap: Unknown option --disable-userns\)/
    );
    expect(outputs[0]).toMatch(/bubblewrap 0\.8\.0 or later/);
    expect(existsSync(path.join(p.dir, 'ran.txt'))).toBe(false);
    const context = (await t.events()).find((e) => e.type === 'context') as { sandbox?: string; sandboxNote?: string };
    expect(context.sandbox).toBe('unavailable');
    expect(context.sandboxNote).toMatch(/--disable-userns/);
    const health = await request(createApp({ client: env.client, config: env.config })).get('/healthz');
    expect(health.body.sandbox).toEqual({
      status: 'unavailable',
      detail: expect.stringMatching(/refused there: bwrap: Unknown option --disable-userns/),
    });
  });
});
