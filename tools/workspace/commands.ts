/**
 * Running run_command's shell commands: each started as command-sandbox.ts prepared it (inside bubblewrap unless
 * the operator chose none), in its own process group, output collected up to a cap, killed with everything it
 * started on timeout, on cancellation, or when the server stops.
 */
import { spawn } from 'node:child_process';
import type { LimitedLaunch } from './command-limits';

/** How one command starts: the process to spawn (bubblewrap under its limits, or a plain shell) and its environment. */
export type CommandLaunch = LimitedLaunch & {
  env: NodeJS.ProcessEnv;
  /**
   * Registers what to do when the command must be stopped while it runs (a secret appeared, a protected file was
   * created), with why, and whether its output must be withheld.
   */
  onStop?: (stop: (reason: string, withhold: boolean) => void) => void;
  /** Called once the command is over: undoes what its sandbox set up; notes for its result. */
  finish?: () => Promise<string[]>;
};

/** Process groups of commands still running: ended when the server stops, so none outlives it half-done. */
const runningCommands = new Set<number>();

export function killRunningCommands(): void {
  for (const pid of runningCommands) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  runningCommands.clear();
}

export interface CommandResult {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  stdout: string;
  stderr: string;
  duration_ms: number;
  /** Why the command was stopped while it ran, or null. */
  stopped: string | null;
  /** Its output was withheld: a secret appeared while it ran, and may be in it. */
  withheld: boolean;
  /** What was undone after it (a protected file it created, removed). */
  notes: string[];
}

export function runCommand(
  launch: CommandLaunch,
  cwd: string,
  timeoutMs: number,
  cap: number,
  signal?: AbortSignal
): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    // Its own process group, so a timeout kills everything the command started.
    const child = spawn(launch.file, launch.args, {
      cwd,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid) runningCommands.add(child.pid);
    const collect = () => {
      const chunks: Buffer[] = [];
      let size = 0;
      let dropped = 0;
      return {
        push(b: Buffer) {
          if (size < cap) {
            const take = b.subarray(0, cap - size);
            chunks.push(take);
            size += take.length;
            dropped += b.length - take.length;
          } else dropped += b.length;
        },
        text: () =>
          Buffer.concat(chunks).toString('utf8') + (dropped ? `\n[truncated: ${dropped} more bytes not shown]` : ''),
      };
    };
    const out = collect();
    const err = collect();
    child.stdout!.on('data', out.push);
    child.stderr!.on('data', err.push);
    let timedOut = false;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      // Security: whatever left the process group (setsid) is still in the pids cgroup, and ends here too.
      launch.cgroup?.killAll();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    // The client cancelled the request (the task was cancelled): stop the command and all it started.
    signal?.addEventListener('abort', killGroup, { once: true });
    let stopped: string | null = null;
    let withheld = false;
    // Security: a secret that appeared while the command ran may have reached it: it ends, and says nothing more.
    launch.onStop?.((reason, withhold) => {
      // A secret that appears after another reason to stop still withholds the output.
      if (stopped === null || (withhold && !withheld)) [stopped, withheld] = [reason, withhold];
      killGroup();
    });
    const finish = (code: number | null, exitSignal: NodeJS.Signals | null, spawnError?: Error) => {
      clearTimeout(timer);
      if (child.pid) runningCommands.delete(child.pid);
      launch.cgroup?.killAll();
      launch.cgroup?.dispose();
      signal?.removeEventListener('abort', killGroup);
      const notes = launch.finish ? launch.finish() : Promise.resolve([]);
      void notes
        .catch((): string[] => [])
        .then((n) =>
          resolve({
            exit_code: code,
            signal: exitSignal,
            timed_out: timedOut,
            stdout: withheld ? '' : out.text(),
            stderr: withheld ? '' : spawnError ? spawnError.message : err.text(),
            duration_ms: Date.now() - started,
            stopped,
            withheld,
            notes: n,
          })
        );
    };
    child.once('error', (e) => finish(null, null, e));
    child.once('close', (code, signal) => finish(code, signal));
  });
}
