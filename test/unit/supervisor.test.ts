/**
 * The supervisor `make start` puts around the worker and the API, with tiny child scripts in their place and a
 * policy measured in milliseconds. The whole stack under it is tested in test/e2e/start.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import type { RestartPolicy } from '../../runtime/restart-policy';
import { Supervisor, type SupervisorOptions } from '../../runtime/supervisor';

const fast: RestartPolicy = { initialDelayMs: 10, maxDelayMs: 40, fastFailureMs: 60_000, maxFastFailures: 3 };

/** Collects what the supervisor says and lets a test wait for a line (no sleeps: it resolves on the message). */
function listener() {
  const lines: string[] = [];
  const waiters: Array<{ re: RegExp; resolve: (m: RegExpExecArray) => void }> = [];
  let gaveUp: (msg: string) => void = () => {};
  const givenUp = new Promise<string>((r) => (gaveUp = r));
  const hear = (line: string) => {
    lines.push(line);
    for (const w of [...waiters]) {
      const m = w.re.exec(line);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  };
  return {
    lines,
    givenUp,
    say: hear,
    onGiveUp: (msg: string) => {
      hear(msg);
      gaveUp(msg);
    },
    /** The first line from `from` on that matches. */
    next(re: RegExp, from = 0): Promise<RegExpExecArray> {
      for (const line of lines.slice(from)) {
        const m = re.exec(line);
        if (m) return Promise.resolve(m);
      }
      return new Promise((resolve) => waiters.push({ re, resolve }));
    },
  };
}

function supervise(name: string, script: string, extra: Partial<SupervisorOptions> = {}) {
  const heard = listener();
  const procs: ChildProcess[] = [];
  const supervisor = new Supervisor({
    name,
    command: process.execPath,
    args: ['-e', script],
    policy: fast,
    attachOutput: (p) => procs.push(p),
    say: heard.say,
    onGiveUp: heard.onGiveUp,
    ...extra,
  });
  return { supervisor, heard, procs };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the supervisor of a make start child', () => {
  let running: Supervisor | undefined;
  afterEach(async () => {
    await running?.stop(1000);
    running = undefined;
    jest.useRealTimers();
  });

  it('gives up on a child that keeps dying right after it starts, naming it and its last exit', async () => {
    const { supervisor, heard, procs } = supervise('flaky', 'console.error("cannot start"); process.exit(3)');
    running = supervisor;

    supervisor.start();
    const msg = await heard.givenUp;

    expect(msg).toBe(
      'giving up on the flaky: it exited 3 times in a row, each within 1 min 0 s of starting ' +
        '(last exit: code 3); see its log above'
    );
    expect(procs).toHaveLength(3);
    expect(heard.lines.filter((l) => /^the flaky exited \(code 3\)/.test(l))).toEqual([
      expect.stringMatching(/starting it again in 10 ms$/),
      expect.stringMatching(/starting it again in 20 ms$/),
    ]);
    expect(heard.lines.filter((l) => /^flaky started/.test(l))).toHaveLength(3);
    expect(supervisor.pid).toBeUndefined();
  });

  it('starts a child killed with SIGKILL again, and stop() ends it without a restart', async () => {
    const { supervisor, heard } = supervise('worker', 'setInterval(() => {}, 1 << 30)');
    running = supervisor;
    supervisor.start();
    const first = Number((await heard.next(/^worker started \(pid (\d+)\)$/))[1]);

    process.kill(first, 'SIGKILL');
    const second = Number((await heard.next(/^worker started again \(pid (\d+)\)$/))[1]);

    expect(second).not.toBe(first);
    expect(heard.lines).toContainEqual(
      expect.stringMatching(
        /^the worker exited \(signal SIGKILL: killed from outside.*\) after .*; starting it again in 10 ms$/
      )
    );
    expect(supervisor.pid).toBe(second);

    const said = heard.lines.length;
    await supervisor.stop(5000);
    // stop() resolves on the child's exit, after the supervisor itself saw it: nothing more can be said.
    expect(alive(second)).toBe(false);
    expect(heard.lines.slice(said)).toEqual([]);
  });

  it('stop() while a restart is pending cancels it', async () => {
    jest.useFakeTimers({ doNotFake: ['Date', 'nextTick', 'setImmediate', 'queueMicrotask', 'setInterval'] });
    const { supervisor, heard, procs } = supervise('api', 'process.exit(1)', {
      policy: { ...fast, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    running = supervisor;
    supervisor.start();
    await heard.next(/starting it again in 1 min 0 s$/);

    await supervisor.stop();
    jest.runAllTimers();

    expect(procs).toHaveLength(1);
    expect(heard.lines.filter((l) => /started again/.test(l))).toEqual([]);
  });
});
