/**
 * Keeps one child process of `make start` (the worker or the API) running: when it dies, says how and starts it
 * again after the delay `decideRestart` chooses, or gives up when that says so. `stop()` ends it for good; a
 * death during or after `stop()` is never restarted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  DEFAULT_RESTART_POLICY,
  NO_FAILURES,
  decideRestart,
  describeDuration,
  describeExit,
  type RestartHistory,
  type RestartPolicy,
} from './restart-policy';

export interface SupervisorOptions {
  /** The child's name in messages: "worker", "api". */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  policy?: RestartPolicy;
  /** Called with each new process, to stream its output. */
  attachOutput?: (proc: ChildProcess) => void;
  /** Progress for people: started, died, starting again. */
  say: (msg: string) => void;
  /** Called once when the child keeps dying fast, with a message that names it and its last exit. */
  onGiveUp: (msg: string) => void;
}

export class Supervisor {
  private proc: ChildProcess | undefined;
  private startedAt = 0;
  private history: RestartHistory = NO_FAILURES;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private starts = 0;
  private readonly policy: RestartPolicy;

  constructor(private readonly opts: SupervisorOptions) {
    this.policy = opts.policy ?? DEFAULT_RESTART_POLICY;
  }

  /** The running process's pid, if one is running. */
  get pid(): number | undefined {
    return this.proc && this.proc.exitCode === null && this.proc.signalCode === null ? this.proc.pid : undefined;
  }

  start(): void {
    if (this.stopping) return;
    const { name } = this.opts;
    const proc = spawn(this.opts.command, this.opts.args, {
      env: this.opts.env,
      cwd: this.opts.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so stopping it also ends anything it started.
      detached: true,
    });
    this.proc = proc;
    this.startedAt = Date.now();
    this.starts++;
    this.opts.attachOutput?.(proc);
    let ended = false;
    const end = (how: string) => {
      if (ended) return;
      ended = true;
      this.onEnd(how);
    };
    proc.once('error', (err) => end(`could not start: ${err.message}`));
    proc.once('exit', (code, signal) => end(describeExit(code, signal)));
    if (proc.pid !== undefined) {
      this.opts.say(
        this.starts === 1 ? `${name} started (pid ${proc.pid})` : `${name} started again (pid ${proc.pid})`
      );
    }
  }

  /** Stops the child (SIGTERM to its group, SIGKILL after `graceMs`) and cancels any pending restart. */
  stop(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    return this.proc ? stopProcessGroup(this.proc, graceMs) : Promise.resolve();
  }

  private onEnd(how: string): void {
    if (this.stopping) return;
    const { name } = this.opts;
    const ranForMs = Date.now() - this.startedAt;
    const decision = decideRestart(this.history, ranForMs, this.policy);
    if (decision.action === 'give_up') {
      this.stopping = true;
      this.opts.onGiveUp(
        `giving up on the ${name}: it exited ${decision.fastFailures} times in a row, each within ` +
          `${describeDuration(this.policy.fastFailureMs)} of starting (last exit: ${how}); see its log above`
      );
      return;
    }
    this.history = decision.history;
    this.opts.say(
      `the ${name} exited (${how}) after ${describeDuration(ranForMs)}; ` +
        `starting it again in ${describeDuration(decision.delayMs)}`
    );
    this.restartTimer = setTimeout(() => this.start(), decision.delayMs);
  }
}

/** SIGTERM to the process's group, SIGKILL after `graceMs`; resolves once the process has exited. */
export function stopProcessGroup(proc: ChildProcess, graceMs: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null || !proc.pid) return Promise.resolve();
  return new Promise((resolve) => {
    const group = -proc.pid!;
    const kill = (sig: NodeJS.Signals) => {
      try {
        process.kill(group, sig);
      } catch {
        /* gone */
      }
    };
    const timer = setTimeout(() => kill('SIGKILL'), graceMs);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    kill('SIGTERM');
  });
}
