/**
 * When `make start` starts a dead worker or API again, and when it gives up. Pure: the supervisor passes in how
 * long the child ran and how it ended, and gets back a decision it carries out.
 *
 * A child that dies soon after it started is probably failing for a reason a restart will not fix (a bad
 * build, a port taken, a broken config), so those deaths are counted and spaced out by a doubling delay; after
 * `maxFastFailures` of them in a row the supervisor stops. A child that ran for a while before dying (an
 * out-of-memory kill, a crash under load) was working, so its death resets the count and the delay.
 */
export interface RestartPolicy {
  /** Delay before the first restart after a death (and after any death that follows a long run). */
  initialDelayMs: number;
  /** The delay doubles with each fast failure in a row, up to this. */
  maxDelayMs: number;
  /** A run shorter than this counts as a fast failure. */
  fastFailureMs: number;
  /** This many fast failures in a row and the supervisor gives up. */
  maxFastFailures: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  fastFailureMs: 10_000,
  maxFastFailures: 5,
};

/** What the supervisor remembers between deaths of one child. */
export interface RestartHistory {
  /** Fast failures in a row, this death not included. */
  fastFailures: number;
}

export const NO_FAILURES: RestartHistory = { fastFailures: 0 };

export type RestartDecision =
  { action: 'restart'; delayMs: number; history: RestartHistory } | { action: 'give_up'; fastFailures: number };

export function decideRestart(
  history: RestartHistory,
  ranForMs: number,
  policy: RestartPolicy = DEFAULT_RESTART_POLICY
): RestartDecision {
  const fastFailures = ranForMs < policy.fastFailureMs ? history.fastFailures + 1 : 0;
  if (fastFailures >= policy.maxFastFailures) return { action: 'give_up', fastFailures };
  const doublings = Math.max(0, fastFailures - 1);
  const delayMs = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** doublings);
  return { action: 'restart', delayMs, history: { fastFailures } };
}

/** How a child ended, for people: "code 1", "signal SIGKILL (...)". */
export function describeExit(code: number | null, signal: string | null): string {
  // The out-of-memory killer sends SIGKILL; saying so saves a trip to dmesg.
  if (signal === 'SIGKILL') return 'signal SIGKILL: killed from outside, e.g. by the out-of-memory killer or kill -9';
  if (signal) return `signal ${signal}`;
  return `code ${code ?? 'unknown'}`;
}

/** A duration for a log line: "800 ms", "12 s", "3 min 4 s", "2 h 5 min". */
export function describeDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${s % 60} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}
