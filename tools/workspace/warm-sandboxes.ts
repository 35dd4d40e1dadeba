/**
 * Warm sandboxes: bubblewrap started ahead of the command it will run, so a command does not wait for its sandbox.
 *
 * Starting a sandbox (the joining shell, the cgroup, bubblewrap's namespaces and mounts) costs a few milliseconds of
 * CPU, and holds the server's main thread while it forks. When a batch starts eight commands together on a small
 * machine, that work queues up in front of every one of them. A warm sandbox is the same launch as a cold one,
 * made a moment earlier: it has joined its cgroup, has its namespaces and mounts, and waits inside, in a shell that
 * reads the working directory and the command from a pipe, then `cd`s there and `exec`s `/bin/sh -c COMMAND`
 * exactly as a cold sandbox does.
 *
 * Security: a warm sandbox is used only for a command whose sandbox would be built the same way now. Its key is
 * bubblewrap's whole argument list (project, hidden files, network, environment, limits) plus the identity (device
 * and inode) of the project and of every hidden entry, taken just before it was started; a command uses it only
 * when the key computed for that command is the same. A sensitive file created since, or replaced (an editor's
 * atomic save makes a new inode, and the kernel drops a mount whose mountpoint was unlinked), changes the key, and
 * the command gets a new sandbox. Calls that carry grants never use one, and none is ever made with a grant. A warm
 * sandbox runs one command and ends with it; one left unused for `idleMs` is ended.
 *
 * How many: as many as the most commands that ran at once since the pool was last idle (at most `max`), made up
 * a moment after commands start, once the commands starting together have started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { ProcessGroupCap, SandboxLaunch } from './sandbox';

/** What a warm sandbox runs inside: the working directory (one line), then the command (the rest, to the end). */
export const WARM_SCRIPT =
  'IFS= read -r d <&3 && c=$(cat <&3; echo .) && exec 3<&- && c=${c%.} && cd -- "$d" && exec /bin/sh -c "$c"';

/** Whether a command can be handed to a warm sandbox (the pipe carries the directory as one line). */
export const warmable = (command: string, cwd: string): boolean => !cwd.includes('\n') && !command.includes('\0');

/** How to start warm sandboxes for one policy: its key, and a launch (each with a cgroup of its own). */
export interface WarmSpec {
  /** Identifies the sandbox these launches build (see the module comment). */
  key: string;
  /** A launch running WARM_SCRIPT, from the working directory `cwd` of the launcher. */
  launch(): SandboxLaunch & { env: NodeJS.ProcessEnv; cwd: string };
}

/** A sandbox started ahead of its command. */
export class WarmSandbox {
  private ended = false;
  private taken = false;
  /** Its cgroup is given back (empty), once it has closed unused. */
  private readonly released: Promise<void>;
  /** Output before a command was given means bubblewrap failed; such a sandbox is never used. */
  private spoke = false;
  readonly closed: Promise<void>;

  constructor(
    readonly key: string,
    readonly child: ChildProcess,
    readonly cap: ProcessGroupCap | null
  ) {
    unreleased.add(this);
    if (!exitHooked) {
      exitHooked = true;
      process.once('exit', endAtExit);
    }
    this.closed = new Promise((resolve) => child.once('close', () => resolve()));
    child.once('exit', () => (this.ended = true));
    child.once('error', () => (this.ended = true));
    const early = () => {
      if (!this.taken) this.spoke = true;
    };
    child.stdout?.on('data', early);
    child.stderr?.on('data', early);
    this.input.on('error', () => undefined);
    // One that ends unused gives its cgroup back; a used one is its command's (commands.ts).
    this.released = this.closed.then(() => (this.taken ? undefined : this.release()));
    // Waiting costs the server nothing: a warm sandbox never keeps it running.
    for (const h of this.handles()) h.unref?.();
  }

  private get input(): Writable {
    return this.child.stdio[3] as Writable;
  }

  private handles(): Array<{ ref?: () => void; unref?: () => void }> {
    return [this.child, this.child.stdout, this.child.stderr, this.input].filter(Boolean) as Array<{
      ref?: () => void;
      unref?: () => void;
    }>;
  }

  get usable(): boolean {
    return !this.ended && !this.spoke && !this.taken && this.child.exitCode === null;
  }

  /** Runs `command` in `cwd` (a real path inside the sandbox); the child and its cgroup are then the command's. */
  run(cwd: string, command: string): ChildProcess {
    this.taken = true;
    unreleased.delete(this);
    for (const h of this.handles()) h.ref?.();
    this.input.end(`${cwd}\n${command}`);
    return this.child;
  }

  /** Kills it with everything in it, now. */
  kill(): void {
    this.ended = true;
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    this.cap?.killAll();
  }

  /** Ends it with everything in it; resolves once its cgroup is back, empty. */
  end(): Promise<void> {
    // Whoever ends it waits for it: the process must not exit before the cgroup is back.
    for (const h of this.handles()) h.ref?.();
    this.kill();
    return this.released;
  }

  private async release(): Promise<void> {
    this.cap?.killAll();
    // Killed processes take a moment to leave the cgroup; it goes back (or is removed, at exit) empty.
    for (let i = 0; i < RELEASE_LOOKS && this.cap && !this.cap.isEmpty(); i++)
      await new Promise((r) => setTimeout(r, RELEASE_EVERY_MS));
    this.giveBack();
  }

  /** Its cgroup goes back to the pool it came from (once). */
  giveBack(): void {
    if (!unreleased.delete(this)) return;
    this.cap?.dispose();
  }
}

/** Warm sandboxes whose cgroup is not given back yet (a used one's is its command's). */
const unreleased = new Set<WarmSandbox>();
let exitHooked = false;

/**
 * The process is exiting with warm sandboxes still there (a server made inside a process that just ends, such as
 * a test): they are killed here, and their cgroups removed once empty, waiting at most a moment.
 */
function endAtExit(): void {
  const left = [...unreleased];
  for (const w of left) w.kill();
  const deadline = Date.now() + EXIT_WAIT_MS;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (left.some((w) => w.cap && !w.cap.isEmpty()) && Date.now() < deadline) Atomics.wait(nap, 0, 0, 5);
  for (const w of left) w.giveBack();
}
const EXIT_WAIT_MS = 500;

/** How long an ended sandbox's cgroup is waited for to empty: looks, and the time between them. */
const RELEASE_LOOKS = 100;
const RELEASE_EVERY_MS = 10;
/** How long after a command starts the pool is made up (a batch's commands start within a few milliseconds). */
const REFILL_DELAY_MS = 50;

/** Starts a warm sandbox (its launch runs WARM_SCRIPT); null when it cannot be started. */
export function startWarm(key: string, launch: ReturnType<WarmSpec['launch']>): WarmSandbox | null {
  let child: ChildProcess;
  try {
    // Its own process group, as a cold command has; fd 3 carries the directory and the command.
    child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
  } catch {
    launch.cap?.dispose();
    return null;
  }
  if (!child.pid) {
    child.once('error', () => launch.cap?.dispose());
    return null;
  }
  return new WarmSandbox(key, child, launch.cap);
}

export interface WarmPoolOptions {
  /** Most sandboxes kept ready (0: none). */
  max: number;
  /** A ready sandbox unused this long is ended. */
  idleMs: number;
  /** How long after the first of a run of commands starts the pool is made up (a batch starts its commands together). */
  refillDelayMs?: number;
}

/** Every pool of this process that is not closed yet: their sandboxes are ended when the server stops. */
const pools = new Set<WarmPool>();

/** Ends every warm sandbox of this process (the server is stopping). */
export function endWarmSandboxes(): Promise<void> {
  return Promise.all([...pools].map((p) => p.close())).then(() => undefined);
}

export class WarmPool {
  private ready: WarmSandbox[] = [];
  private timers = new Map<WarmSandbox, NodeJS.Timeout>();
  private running = 0;
  /** The most commands that ran at once since the pool was last idle. */
  private peak = 0;
  private refill: NodeJS.Timeout | undefined;
  private next: (() => Promise<WarmSpec | null>) | undefined;
  private filling = false;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(private readonly opts: WarmPoolOptions) {
    pools.add(this);
  }

  get enabled(): boolean {
    return this.opts.max > 0 && !this.closed;
  }

  /** How many are ready now. */
  get size(): number {
    return this.ready.filter((w) => w.usable).length;
  }

  /**
   * A ready sandbox built as `key` says, or null. Ready ones with another key are for a policy that no longer
   * holds (a new sensitive file, another network setting) and are ended.
   */
  take(key: string): WarmSandbox | null {
    let found: WarmSandbox | null = null;
    for (const w of this.ready.splice(0)) {
      if (!found && w.usable && w.key === key) found = w;
      else if (w.key === key && w.usable) this.ready.push(w);
      else void this.discard(w);
    }
    if (found) this.clearTimer(found);
    return found;
  }

  /**
   * A command is starting (warm or cold); `make` says how to build warm sandboxes for the policy it runs under.
   * Returns what to call when it ends.
   */
  started(make: () => Promise<WarmSpec | null>): () => void {
    this.running++;
    this.peak = Math.max(this.peak, this.running);
    this.next = make;
    this.schedule();
    let ended = false;
    return () => {
      if (!ended) this.running--;
      ended = true;
    };
  }

  /** Ends every ready sandbox and makes no more. */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.refill);
    // Kept among the pools until its sandboxes are gone, so a server that stops waits for them.
    this.closing ??= Promise.all(this.ready.splice(0).map((w) => this.discard(w))).then(() => {
      pools.delete(this);
    });
    return this.closing;
  }

  /**
   * Made up a moment after commands start (so the commands starting together start first), and not put off by
   * each one: a long run of commands keeps getting warm ones.
   */
  private schedule(): void {
    if (!this.enabled || this.refill) return;
    this.refill = setTimeout(() => {
      this.refill = undefined;
      void this.fill();
    }, this.opts.refillDelayMs ?? REFILL_DELAY_MS).unref();
  }

  private async fill(): Promise<void> {
    if (this.filling || !this.enabled || !this.next) return;
    this.filling = true;
    let made = 0;
    try {
      let missing = Math.min(this.opts.max, Math.max(1, this.peak)) - this.size;
      if (missing <= 0) return;
      // One look at the project for all of them: they are built alike.
      const spec = await this.next();
      while (spec && this.enabled && missing-- > 0) {
        // A start holds the main thread while it forks: requests that arrived meanwhile are read between them.
        if (made) await new Promise((r) => setImmediate(r));
        if (!this.enabled) break;
        const w = startWarm(spec.key, spec.launch());
        if (!w) break;
        made++;
        this.ready.push(w);
        this.timers.set(w, setTimeout(() => this.expire(w), this.opts.idleMs).unref());
        void w.closed.then(() => this.forget(w));
      }
    } finally {
      this.filling = false;
      // Commands that started meanwhile took some: made up again (unless starting them failed).
      if (made && this.size < Math.min(this.opts.max, this.peak)) this.schedule();
    }
  }

  private expire(w: WarmSandbox): void {
    this.timers.delete(w);
    this.ready = this.ready.filter((x) => x !== w);
    void this.discard(w);
    // Idle: the next burst of commands sets the size again.
    if (!this.ready.length && !this.running) this.peak = 0;
  }

  private forget(w: WarmSandbox): void {
    this.clearTimer(w);
    this.ready = this.ready.filter((x) => x !== w);
  }

  private clearTimer(w: WarmSandbox): void {
    clearTimeout(this.timers.get(w));
    this.timers.delete(w);
  }

  private discard(w: WarmSandbox): Promise<void> {
    this.clearTimer(w);
    return w.end();
  }
}
