import {
  DEFAULT_RESTART_POLICY,
  NO_FAILURES,
  decideRestart,
  describeDuration,
  describeExit,
  type RestartDecision,
  type RestartHistory,
  type RestartPolicy,
} from '../../runtime/restart-policy';

const policy: RestartPolicy = { initialDelayMs: 1000, maxDelayMs: 30_000, fastFailureMs: 10_000, maxFastFailures: 5 };

/** Feeds deaths after the given run lengths through the policy; returns each decision. */
function deaths(runsMs: number[], p: RestartPolicy = policy): RestartDecision[] {
  let history: RestartHistory = NO_FAILURES;
  return runsMs.map((ran) => {
    const d = decideRestart(history, ran, p);
    if (d.action === 'restart') history = d.history;
    return d;
  });
}

const delays = (ds: RestartDecision[]) => ds.map((d) => (d.action === 'restart' ? d.delayMs : 'give up'));

describe('restart policy', () => {
  it('a child that keeps dying right after it starts is restarted after 1, 2, 4, 8 s, then given up on', () => {
    expect(delays(deaths([200, 300, 100, 2000, 500]))).toEqual([1000, 2000, 4000, 8000, 'give up']);
    expect(deaths([1, 1, 1, 1, 1]).at(-1)).toEqual({ action: 'give_up', fastFailures: 5 });
  });

  it('a child that ran for a while before dying is restarted after the initial delay, and resets the count', () => {
    // Four fast deaths, a long run (an out-of-memory kill under load, say), then four fast deaths again.
    const runs = [1, 1, 1, 1, 3_600_000, 1, 1, 1, 1];
    expect(delays(deaths(runs))).toEqual([1000, 2000, 4000, 8000, 1000, 1000, 2000, 4000, 8000]);
  });

  it('a run exactly as long as the fast-failure window counts as a long run', () => {
    expect(decideRestart({ fastFailures: 4 }, policy.fastFailureMs, policy)).toEqual({
      action: 'restart',
      delayMs: 1000,
      history: { fastFailures: 0 },
    });
  });

  it('the delay never exceeds the cap', () => {
    const p = { ...policy, maxFastFailures: 20 };
    expect(delays(deaths(Array(10).fill(1), p))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('the default gives up after 5 deaths within 10 s of starting, waiting 15 s in all before that', () => {
    const ds = deaths([1, 1, 1, 1, 1], DEFAULT_RESTART_POLICY);
    expect(ds.at(-1)?.action).toBe('give_up');
    // Long enough to see the failures scroll by (and fix a quick cause) before everything stops.
    expect(ds.reduce((sum, d) => sum + (d.action === 'restart' ? d.delayMs : 0), 0)).toBe(15_000);
  });
});

describe('exit and duration wording', () => {
  it('says whether a child exited with a code or was killed, and what a SIGKILL usually means', () => {
    expect(describeExit(1, null)).toBe('code 1');
    expect(describeExit(0, null)).toBe('code 0');
    expect(describeExit(null, 'SIGSEGV')).toBe('signal SIGSEGV');
    expect(describeExit(null, 'SIGKILL')).toMatch(/^signal SIGKILL: .*out-of-memory killer/);
    expect(describeExit(null, null)).toBe('code unknown');
  });

  it('reads like a person would say it', () => {
    expect(describeDuration(250)).toBe('250 ms');
    expect(describeDuration(1000)).toBe('1 s');
    expect(describeDuration(59_999)).toBe('59 s');
    expect(describeDuration(184_000)).toBe('3 min 4 s');
    expect(describeDuration(7_500_000)).toBe('2 h 5 min');
  });
});
