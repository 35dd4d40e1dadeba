/**
 * A session's `network: on` is the internet, not this machine: through the whole task path (a real dev server, the
 * real workspace server, real bubblewrap, the scripted model), commands with the network on try to reach a
 * listener on the host's loopback, Temporal's gRPC port and HTTP API (where any workflow can be listed and
 * signalled), the cloud metadata address and private addresses, directly and through the sandbox's proxy, by
 * address and by a name that resolves to the loopback. None gets a connection; each is told why. The tests need no
 * internet: the proxy's way to a public address is tested in test/unit/egress-proxy.test.ts.
 */
import net from 'node:net';
import type { KleaEvent } from '../../common/events';
import { settingsSignal } from '../../workflows/session/messages';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { SessionDriver } from '../support/session-driver';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

/** A loopback listener that counts the connections it gets. */
function countingListener() {
  const l = { server: net.createServer((s) => (l.connections++, s.destroy())), port: 0, connections: 0 };
  return l;
}

const temporalPorts = () => ({
  grpc: Number(process.env.KLEA_TEST_TEMPORAL_ADDRESS!.split(':').pop()),
  http: Number(process.env.KLEA_TEST_TEMPORAL_HTTP_PORT),
});

/**
 * What a command asks of the sandbox's proxy (the one HTTP_PROXY names), as curl or npm would, written in Node so
 * the test needs nothing the sandbox may lack: `node probe.js get|post <url>` or `node probe.js connect host:port`.
 * It prints `<how> <target>: <status> <body>` (or the error code).
 */
const PROBE = `const http = require('http');
const proxy = new URL(process.env.HTTP_PROXY);
const [how, target] = process.argv.slice(2);
const say = (what) => console.log(how + ' ' + target + ': ' + what);
const req = http.request({ host: proxy.hostname, port: proxy.port, method: how === 'connect' ? 'CONNECT' : how.toUpperCase(),
  path: target, headers: { host: how === 'connect' ? target : new URL(target).host } });
const read = (status, stream, first) => { let b = first || ''; stream.on('data', (d) => (b += d)); stream.on('end', () => say(status + ' ' + b.trim())); };
req.on('connect', (res, socket, head) => (res.statusCode === 200 ? (say('200 tunnel open'), socket.destroy()) : read(res.statusCode, socket, head.toString())));
req.on('response', (res) => read(res.statusCode, res));
req.on('error', (e) => say(e.code));
req.end();
`;

/** Node's own connect, which no proxy setting changes: what a program that ignores HTTP_PROXY gets. */
const directConnect = (port: number) =>
  `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => console.log('connected ${port}')).on('error', (e) => console.log('direct ${port}: ' + e.code))"`;

/** Runs each command as a step of one task in a session whose network is on; returns each step's output. */
async function runWithNetworkOn(fake: FakeModel, env: TestEnv, commands: string[]): Promise<string[]> {
  const p = makeProject({ 'probe.js': PROBE });
  const s = await SessionDriver.start(env, p.dir);
  await s.handle.signal(settingsSignal, { network: 'on' });
  await s.waitFor((e) => e.type === 'context' && e.network === 'on', 'the network turned on');
  const steps = commands.map((_, i) => step(`s${i + 1}`, `Run command ${i + 1}`, { depends_on: i ? [`s${i}`] : [] }));
  fake.on('route_request', { call: { route: 'task', reply: null } });
  fake.on('write_plan', { call: plan(steps) });
  fake.on(
    'pick_tools',
    ...commands.map((command, i) => ({
      calls: [{ name: 'workspace__run_command', args: { step_id: `s${i + 1}`, command } }],
    }))
  );
  fake.always('evaluate_step', { call: { verdict: 'move_on', reason: 'the output is the answer' } });
  fake.on('compose_answer', { content: 'done' });
  const r = await s.submit('reach the network');
  const t = await TaskDriver.attach(env, r.taskId!);
  expect((await t.result()).status).toBe('done');
  expect(await t.waitFor('context')).toMatchObject({ network: 'on' });
  const finished = (await t.events()).filter(
    (e): e is Extract<KleaEvent, { type: 'step_finished' }> => e.type === 'step_finished'
  );
  return finished.map((e) => e.summary);
}

describe('the command sandbox with the network on', () => {
  let fake: FakeModel;
  let env: TestEnv;
  const listener = countingListener();

  beforeAll(async () => {
    await new Promise<void>((r) => listener.server.listen(0, '127.0.0.1', () => r()));
    listener.port = (listener.server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise((r) => listener.server.close(r)));
  useFakeModelEnv({ name: 'netsandbox' }, (f, e) => {
    fake = f;
    env = e;
  });

  it("attack: a command reaches for the host's loopback listener and Temporal's ports, directly and through the proxy; nothing connects", async () => {
    const { grpc, http } = temporalPorts();
    const outputs = await runWithNetworkOn(fake, env, [
      `${directConnect(listener.port)}; ${directConnect(grpc)}; ${directConnect(http)}`,
      `node probe.js get http://127.0.0.1:${listener.port}/`,
      `node probe.js get http://127.0.0.1:${http}/api/v1/namespaces/default/workflows`,
      `node probe.js post http://localhost:${http}/api/v1/namespaces/default/workflows/any/signal/review`,
      `node probe.js connect localhost:${grpc}`,
      `node probe.js connect [::1]:${http}`,
      `node probe.js connect 127.0.0.1:${listener.port}`,
      'echo "$HTTPS_PROXY" | grep -c "^http://127.0.0.1:"',
    ]);

    // Nothing on the host's loopback saw a connection, and each command was told why.
    expect(listener.connections).toBe(0);
    expect(outputs[0]).toContain(`direct ${listener.port}: ECONNREFUSED`);
    expect(outputs[0]).toContain(`direct ${grpc}: ECONNREFUSED`);
    expect(outputs[0]).toContain(`direct ${http}: ECONNREFUSED`);
    expect(outputs[0]).not.toContain('connected');
    const refused = "403 klea: the command sandbox's network reaches public addresses only:";
    expect(outputs[1]).toContain(`get http://127.0.0.1:${listener.port}/: ${refused} 127.0.0.1 is a loopback address`);
    expect(outputs[2]).toContain(`: ${refused} 127.0.0.1 is a loopback address`);
    expect(outputs[2]).not.toContain('executions');
    expect(outputs[3]).toContain(`: ${refused} localhost resolves to 127.0.0.1, a loopback address`);
    expect(outputs[4]).toContain(`connect localhost:${grpc}: ${refused} localhost resolves to 127.0.0.1`);
    expect(outputs[5]).toContain(`connect [::1]:${http}: ${refused} ::1 is a loopback address`);
    expect(outputs[6]).toContain(`connect 127.0.0.1:${listener.port}: ${refused} 127.0.0.1 is a loopback address`);
    expect(outputs.join('\n')).not.toContain('tunnel open');
    expect(outputs[7]).toMatch(/stdout ---\n1/);
  });

  it('attack: a command reaches for the cloud metadata address and private networks; the proxy refuses each', async () => {
    const outputs = await runWithNetworkOn(fake, env, [
      'node probe.js get http://169.254.169.254/latest/meta-data/',
      'node probe.js connect 10.0.0.1:443',
      'node probe.js get http://192.168.0.1/',
      'node probe.js get http://[fd00::1]/',
    ]);
    expect(outputs[0]).toMatch(/: 403 .*169\.254\.169\.254 is a link-local address/);
    expect(outputs[1]).toMatch(/connect 10\.0\.0\.1:443: 403 .*10\.0\.0\.1 is a private address/);
    expect(outputs[2]).toMatch(/: 403 .*192\.168\.0\.1 is a private address/);
    expect(outputs[3]).toMatch(/: 403 .*fd00::1 is a unique-local address/);
  });
});

describe('the command sandbox with the network on and tools.sandbox.network_allow', () => {
  let fake: FakeModel;
  let env: TestEnv;
  // `localhost` is listed to show that a listed name still never reaches the loopback.
  useFakeModelEnv(
    { name: 'netallow', overrides: { tools: { sandbox: { network_allow: ['localhost', '*.npmjs.org'] } } } },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  it('attack: names not on the list, and a listed name that resolves to the loopback, are refused', async () => {
    const { http } = temporalPorts();
    const outputs = await runWithNetworkOn(fake, env, [
      'node probe.js get http://example.com/',
      'node probe.js connect evil.example:443',
      'node probe.js get http://93.184.215.14/',
      `node probe.js get http://localhost:${http}/api/v1/namespaces/default/workflows`,
    ]);
    expect(outputs[0]).toMatch(
      /get http:\/\/example\.com\/: 403 .*example\.com is not in tools\.sandbox\.network_allow/
    );
    expect(outputs[1]).toMatch(
      /connect evil\.example:443: 403 .*evil\.example is not in tools\.sandbox\.network_allow/
    );
    expect(outputs[2]).toMatch(
      /: 403 .*93\.184\.215\.14 is an address, and tools\.sandbox\.network_allow lists names only/
    );
    expect(outputs[3]).toMatch(/: 403 .*localhost resolves to 127\.0\.0\.1, a loopback address/);
  });
});
