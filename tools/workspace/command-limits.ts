/**
 * The limits every sandboxed command runs under, applied around bubblewrap (bubblewrap-policy.ts): a cap on the
 * processes it may run at once (a pids cgroup where this machine lets us make one, else RLIMIT_NPROC) and a cap on
 * each process's address space (RLIMIT_AS), and a cap on the size of any file it writes (RLIMIT_FSIZE, with SIGXFSZ
 * ignored so a write past it fails with EFBIG instead of killing the writer). The cgroup is also how a command ends with everything it started: a
 * process that left the command's process group (setsid) is still in its cgroup.
 */
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface CommandLimits {
  /** Most processes a command may run at once (pids cgroup where it can be made, else RLIMIT_NPROC). */
  maxProcesses: number;
  /** Address-space cap per process, in bytes (RLIMIT_AS); also what the sandbox's scratch space holds in all. */
  memoryBytes: number;
  /** The largest file a command may write, in bytes (RLIMIT_FSIZE). */
  fileBytes: number;
}

export const DEFAULT_COMMAND_LIMITS: CommandLimits = {
  maxProcesses: 256,
  memoryBytes: 4 * 1024 ** 3,
  fileBytes: 1024 ** 3,
};

/** A pids cgroup for one command: its process cap, and the way to end every process in it. */
export interface PidsCgroup {
  /** The file a process writes its pid to, to join. */
  procs: string;
  /** SIGKILLs every process still in the cgroup. */
  killAll(): void;
  /** Whether no process is left in it, or counts against its cap. */
  isEmpty(): boolean;
  /** Done with it (after killAll): removed, at once or (from `CommandCgroups`) once its last process is gone. */
  dispose(): void;
}

/** The file-system calls a cgroup is made with (tests pass their own). */
export interface CgroupFs {
  mkdir(p: string): void;
  write(p: string, data: string): void;
  read(p: string): string;
  rmdir(p: string): void;
  /** The names in a directory. */
  list(p: string): string[];
  /** When a path was last modified (ms since the epoch). */
  mtimeMs(p: string): number;
}

const realFs: CgroupFs = {
  mkdir: (p) => mkdirSync(p, { recursive: true }),
  write: (p, data) => writeFileSync(p, data),
  read: (p) => readFileSync(p, 'utf8'),
  rmdir: (p) => rmdirSync(p),
  list: (p) => readdirSync(p),
  mtimeMs: (p) => statSync(p).mtimeMs,
};

/** How old an empty cgroup of a server that is gone must be to be swept (one is joined within ms of being made). */
const SWEEP_AFTER_MS = 60_000;

/** Where the command cgroups are made under cgroup v1's pids hierarchy. */
const V1_PARENT = path.join('/sys/fs/cgroup/pids', 'klea');

/**
 * Removes the empty command cgroups of servers that are gone (killed before they could remove their own: their
 * names start `cmd-<pid>-`, no process has that pid, and they are over a minute old). One still holding a process
 * stays: it may be another PID namespace's, and only its own server ends its commands.
 */
export function sweepCommandCgroups(
  alive: (pid: number) => boolean = pidAlive,
  fsImpl: CgroupFs = realFs,
  parent = V1_PARENT
): string[] {
  let names: string[];
  try {
    names = fsImpl.list(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = /^cmd-(\d+)-/.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    try {
      const dir = path.join(parent, name);
      if (Date.now() - fsImpl.mtimeMs(dir) < SWEEP_AFTER_MS) continue;
      fsImpl.rmdir(dir);
      removed.push(name);
    } catch {
      /* not empty, or not ours to remove */
    }
  }
  return removed;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A pids cgroup capped at `max`, where this machine lets us make one (cgroup v1's pids hierarchy, or a v2 cgroup
 * with the pids controller delegated); null otherwise, and the caller falls back to RLIMIT_NPROC, which the kernel
 * enforces for every user but root.
 */
export function makePidsCgroup(max: number, id: string, fsImpl: CgroupFs = realFs): PidsCgroup | null {
  const candidates = [V1_PARENT, ...v2Parent(fsImpl)];
  for (const parent of candidates) {
    const dir = path.join(parent, id);
    try {
      fsImpl.mkdir(dir);
      fsImpl.write(path.join(dir, 'pids.max'), String(max));
    } catch {
      try {
        fsImpl.rmdir(dir);
      } catch {
        /* never made */
      }
      continue;
    }
    const procs = path.join(dir, 'cgroup.procs');
    // A process that has exited but is not yet reaped is gone from cgroup.procs and still counts against pids.max.
    const current = path.join(dir, 'pids.current');
    return {
      procs,
      isEmpty: () => {
        try {
          return fsImpl.read(current).trim() === '0';
        } catch {
          return false;
        }
      },
      killAll() {
        let pids: string[] = [];
        try {
          pids = fsImpl.read(procs).split('\n').filter(Boolean);
        } catch {
          return;
        }
        for (const pid of pids) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      },
      dispose() {
        try {
          fsImpl.rmdir(dir);
        } catch {
          /* a process is still in it: see CommandCgroups */
        }
      },
    };
  }
  return null;
}

/** How often a cgroup whose last processes are still exiting is looked at again: quickly at first, then less often. */
const SETTLE_FAST_MS = 20;
const SETTLE_FAST_LOOKS = 50;
const SETTLE_SLOW_MS = 500;
/** Looks after which a cgroup that will not empty is left (a process stuck in the kernel); about two minutes. */
const SETTLE_LOOKS = SETTLE_FAST_LOOKS + 240;
/** How long closing waits for the last processes of its commands to exit before it removes what it can. */
const CLOSE_WAIT_MS = 5_000;

/**
 * The pids cgroups of one server's commands: one made for each command, and removed once no process is left in it
 * (a process killed a moment ago takes a while to exit, longer on a busy machine, and a cgroup with a process in
 * it cannot be removed). Closing ends every process still in them and waits for them before removing the cgroups.
 */
export class CommandCgroups {
  /** Cgroups whose command is still running. */
  private readonly live = new Set<PidsCgroup>();
  /** Cgroups whose last processes are still exiting, by the timer that looks again. */
  private readonly settling = new Map<PidsCgroup, NodeJS.Timeout>();
  private made = 0;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly max: number,
    private readonly prefix: string,
    private readonly fsImpl: CgroupFs = realFs
  ) {}

  /** A cgroup for one command (null where none can be made); its `dispose` removes it once it is empty. */
  take(): PidsCgroup | null {
    const cgroup = makePidsCgroup(this.max, `${this.prefix}-${++this.made}`, this.fsImpl);
    if (!cgroup) return null;
    this.live.add(cgroup);
    return {
      ...cgroup,
      dispose: () => {
        this.live.delete(cgroup);
        this.remove(cgroup, 0);
      },
    };
  }

  /**
   * The server is done: every process still in one of its cgroups is killed, and each cgroup is removed once empty
   * (waiting at most `waitMs` in all; what is still busy then is removed as far as it can be).
   */
  close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    return (this.closing ??= this.endAll(waitMs));
  }

  private async endAll(waitMs: number): Promise<void> {
    this.closed = true;
    const left = [...this.live, ...this.settling.keys()];
    for (const timer of this.settling.values()) clearTimeout(timer);
    this.live.clear();
    this.settling.clear();
    const deadline = Date.now() + waitMs;
    let busy = left;
    while (busy.length) {
      for (const cgroup of busy) cgroup.killAll();
      busy = busy.filter((cgroup) => !cgroup.isEmpty());
      if (!busy.length || Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_FAST_MS));
    }
    for (const cgroup of left) cgroup.dispose();
  }

  /** What `close` does, without waiting: for a process that is exiting now. */
  closeNow(): void {
    this.closed = true;
    for (const timer of this.settling.values()) clearTimeout(timer);
    for (const cgroup of [...this.live, ...this.settling.keys()]) {
      cgroup.killAll();
      cgroup.dispose();
    }
    this.live.clear();
    this.settling.clear();
  }

  private remove(cgroup: PidsCgroup, looks: number): void {
    this.settling.delete(cgroup);
    if (this.closed || looks >= SETTLE_LOOKS || cgroup.isEmpty()) {
      cgroup.dispose();
      return;
    }
    // Security: a process forked while the last kill ran was not in the list it read; it is killed now.
    if (looks > 0) cgroup.killAll();
    const every = looks < SETTLE_FAST_LOOKS ? SETTLE_FAST_MS : SETTLE_SLOW_MS;
    this.settling.set(cgroup, setTimeout(() => this.remove(cgroup, looks + 1), every).unref());
  }
}

const openCgroups = new Set<CommandCgroups>();
/** A server's command cgroups, removed (as far as they can be) when this process exits. */
export function commandCgroups(max: number, prefix: string): CommandCgroups {
  if (!openCgroups.size) {
    process.once('exit', () => openCgroups.forEach((c) => c.closeNow()));
    sweepCommandCgroups();
  }
  const cgroups = new CommandCgroups(max, prefix);
  openCgroups.add(cgroups);
  return cgroups;
}

/** Ends the commands of every server in this process and waits (a while) for their cgroups to be removed. */
export async function closeCommandCgroups(): Promise<void> {
  await Promise.all([...openCgroups].map((c) => c.close()));
}

function v2Parent(fsImpl: CgroupFs): string[] {
  try {
    const line = fsImpl
      .read('/proc/self/cgroup')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    if (!line) return [];
    const own = path.join('/sys/fs/cgroup', line.slice(3));
    return fsImpl.read(path.join(own, 'cgroup.subtree_control')).includes('pids') ? [own] : [];
  } catch {
    return [];
  }
}

/** A process to spawn, and the cgroup it joins as it starts (null where none could be made). */
export interface LimitedLaunch {
  file: string;
  args: string[];
  cgroup: PidsCgroup | null;
}

/**
 * How to start `sandboxed` (bubblewrap's argv) under `limits`. With a pids cgroup, a shell joins it first, caps its
 * address space (`ulimit -v`, RLIMIT_AS) and then becomes bubblewrap; without one, prlimit sets the same memory cap
 * and RLIMIT_NPROC around bubblewrap.
 */
export function launchWithLimits(
  sandboxed: string[],
  opts: { limits: CommandLimits; cgroup: PidsCgroup | null; prlimit?: string }
): LimitedLaunch {
  if (!opts.cgroup) {
    const limited = [
      '/bin/sh',
      '-c',
      'trap "" XFSZ; exec "$@"',
      'sh',
      opts.prlimit ?? 'prlimit',
      `--as=${opts.limits.memoryBytes}`,
      `--nproc=${opts.limits.maxProcesses}`,
      `--fsize=${opts.limits.fileBytes}`,
      '--',
      ...sandboxed,
    ];
    return { file: limited[0], args: limited.slice(1), cgroup: null };
  }
  const kib = String(Math.floor(opts.limits.memoryBytes / 1024));
  // The shell's `ulimit -f` counts 512-byte blocks.
  const blocks = String(Math.max(1, Math.floor(opts.limits.fileBytes / 512)));
  return {
    file: '/bin/sh',
    // Security: the shell joins the cgroup and takes the caps before it becomes bubblewrap, so nothing the command
    // starts is ever outside the cgroup or above a cap. SIGXFSZ stays ignored through exec: an oversized write fails.
    args: [
      '-c',
      'echo $$ > "$0" && trap "" XFSZ && ulimit -v "$1" && ulimit -f "$2" && shift 2 && exec "$@"',
      opts.cgroup.procs,
      kib,
      blocks,
      ...sandboxed,
    ],
    cgroup: opts.cgroup,
  };
}
