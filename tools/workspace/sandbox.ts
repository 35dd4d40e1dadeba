/**
 * The command sandbox: every `run_command` runs inside bubblewrap, so what the permission gate decided is what the
 * kernel allows. A command sees the project read-write at its real path, the system read-only, the paths the user
 * granted (read-only for `read` and `execute`, read-write for `write`) and nothing else: no home directories, no
 * other project, not the host's /tmp, not Klea's own state, not the sensitive files of the project. It gets new
 * user, PID, IPC, UTS, cgroup and (unless the session allows the network) network namespaces, its own /proc, a
 * minimal /dev, a private /tmp and an empty HOME, and ends with everything it started.
 *
 * The argument list is built by a pure function (`sandboxArgs`) so the policy can be read and tested on its own;
 * Whether bubblewrap works on this machine is `probeSandbox` (runtime/sandbox-probe, shared with the worker).
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PathOp } from '../../common/path-guard';

/** Where commands sandbox themselves: `bwrap` (the default), or `none` (explicitly unsandboxed). */
export type SandboxMode = 'bwrap' | 'none';

export interface SandboxLimits {
  /** Most processes a command may run at once (pids cgroup where it can be made, else RLIMIT_NPROC). */
  maxProcesses: number;
  /** Address-space cap per process, in bytes (RLIMIT_AS). */
  memoryBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { maxProcesses: 256, memoryBytes: 4 * 1024 ** 3 };

export interface SandboxPolicy {
  /** The project's real path: bound read-write. */
  projectDir: string;
  /** The command's working directory (a real path inside the project or a granted directory). */
  cwd: string;
  /** Granted real paths outside the project (or sensitive inside it), bound as their operation allows. */
  grants: ReadonlyArray<{ path: string; op: PathOp }>;
  /** Real paths inside the project the command must not see (sensitive files, Klea's own state). */
  hidden: ReadonlyArray<{ path: string; dir: boolean }>;
  /** The session allows the network. */
  network: boolean;
  /** Environment of the command (already scrubbed of secrets). */
  env: Readonly<Record<string, string>>;
  /** Files made for the sandbox by `sandboxFiles`: a passwd and group naming only its user, an empty file. */
  files: SandboxFiles;
}

/** The system directories a command may read: programs, libraries and shared data, never user data. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt'];

/** The parts of /etc that programs need to start and to resolve names; not shadow, not ssh keys, not sudoers. */
const SYSTEM_ETC = [
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/nsswitch.conf',
  '/etc/mime.types',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/ca-certificates.conf',
  '/etc/pki',
  '/etc/protocols',
  '/etc/services',
  '/etc/python3',
  '/etc/python3.11',
];
/** Only with the network on: name resolution. */
const NETWORK_ETC = ['/etc/resolv.conf', '/etc/hosts', '/etc/host.conf', '/etc/gai.conf'];

/** HOME inside the sandbox: an empty tmpfs, so no dotfile or credential of the worker's user is there. */
export const SANDBOX_HOME = '/home/sandbox';

/** `--ro-bind` for a real directory, `--symlink` for a link (merged-/usr systems link /bin to usr/bin). */
function systemEntry(p: string, exists: (p: string) => boolean): string[] {
  if (!exists(p)) return [];
  try {
    if (lstatSync(p).isSymbolicLink()) return ['--symlink', readlinkSync(p), p];
  } catch {
    return [];
  }
  return ['--ro-bind', p, p];
}

/**
 * bubblewrap's arguments for one command (everything before `--`). Order matters: later mounts cover earlier ones,
 * so the project comes first, then grants inside it, then what must stay hidden.
 */
export function sandboxArgs(policy: SandboxPolicy, exists: (p: string) => boolean = existsSync): string[] {
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-all',
    ...(policy.network ? ['--share-net'] : []),
    '--cap-drop',
    'ALL',
    '--hostname',
    'klea-sandbox',
    '--clearenv',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--tmpfs',
    '/home',
    '--dir',
    SANDBOX_HOME,
  ];
  for (const dir of SYSTEM_DIRS) args.push(...systemEntry(dir, exists));
  for (const f of [...SYSTEM_ETC, ...(policy.network ? NETWORK_ETC : [])]) if (exists(f)) args.push('--ro-bind', f, f);
  // Security: the host's user list stays outside; programs that look up their user find the sandbox's.
  args.push('--ro-bind', policy.files.passwd, '/etc/passwd', '--ro-bind', policy.files.group, '/etc/group');

  // Security: the project at its real path, read-write; nothing above it is bound.
  args.push('--bind', policy.projectDir, policy.projectDir);
  // Security: a grant opens exactly the path it names, and only as far as its operation allows.
  for (const g of policy.grants) {
    if (!exists(g.path)) continue;
    args.push(g.op === 'write' ? '--bind' : '--ro-bind', g.path, g.path);
  }
  // Security: sensitive files and Klea's state are covered last, so no bind above can reveal them.
  const granted = new Set(policy.grants.map((g) => g.path));
  for (const h of policy.hidden) {
    if (granted.has(h.path)) continue;
    args.push(...(h.dir ? ['--tmpfs', h.path, '--remount-ro', h.path] : ['--ro-bind', policy.files.empty, h.path]));
  }

  for (const [k, v] of Object.entries({ ...policy.env, HOME: SANDBOX_HOME, TMPDIR: '/tmp' }))
    args.push('--setenv', k, v);
  args.push('--chdir', policy.cwd);
  return args;
}

/** The PATH a command gets: system locations only (a PATH into the worker's home would not exist in the sandbox). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SandboxFiles {
  passwd: string;
  group: string;
  /** Bound over a hidden file: it reads as empty. */
  empty: string;
}

/** Writes the files every sandbox binds (once per server) into `dir`, which no command can see. */
export function sandboxFiles(dir: string): SandboxFiles {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group'), empty: path.join(dir, 'empty') };
  writeFileSync(
    files.passwd,
    `root:x:0:0:sandbox:${SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`
  );
  writeFileSync(files.group, 'root:x:0:\nnogroup:x:65534:\n');
  writeFileSync(files.empty, '', { mode: 0o444 });
  return files;
}

/** A pids cgroup for one command: its process cap, and the way to end every process in it. */
export interface ProcessGroupCap {
  /** The file a process writes its pid to, to join. */
  procs: string;
  /** SIGKILLs every process still in the cgroup. */
  killAll(): void;
  /** Whether no process is left in it, or counts against its cap. */
  isEmpty(): boolean;
  /** Done with it (after killAll): removed, or (from a `ProcessCapPool`) kept for the next command if empty. */
  dispose(): void;
}

/**
 * A pids cgroup capped at `max`, where this machine lets us make one (cgroup v1's pids hierarchy, or a v2 cgroup
 * with the pids controller delegated); null otherwise, and the caller falls back to RLIMIT_NPROC, which the kernel
 * enforces for every user but root.
 */
export function makeProcessCap(
  max: number,
  id: string,
  fsImpl = { mkdir, write, read, rmdir }
): ProcessGroupCap | null {
  const candidates = [path.join('/sys/fs/cgroup/pids', 'klea'), ...v2Parent(fsImpl)];
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
    const members = (): string[] | null => {
      try {
        return fsImpl.read(procs).split('\n').filter(Boolean);
      } catch {
        return null;
      }
    };
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
        const pids = members() ?? [];
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
          /* still busy: the kernel frees it when its last process is reaped */
        }
      },
    };
  }
  return null;
}

/** Most empty cgroups a pool keeps (about as many as commands run at once). */
const POOL_SIZE = 16;

/**
 * Pids cgroups for commands, kept for reuse. Making one is a mkdir in the cgroup file system, which holds the
 * server's main thread for a millisecond or two when several commands start together. A cgroup goes back to the
 * pool once no process is left in it (its cap is the same for every command).
 */
export class ProcessCapPool {
  private readonly free: ProcessGroupCap[] = [];
  /** Cgroups whose last processes are still exiting (just killed), by the timer that looks again. */
  private readonly settling = new Map<ProcessGroupCap, NodeJS.Timeout>();
  private made = 0;
  private closed = false;

  constructor(
    private readonly max: number,
    private readonly prefix: string,
    private readonly fsImpl = { mkdir, write, read, rmdir }
  ) {}

  /** A cgroup for one command (null where none can be made); its `dispose` gives it back. */
  take(): ProcessGroupCap | null {
    const cap = this.free.pop() ?? makeProcessCap(this.max, `${this.prefix}-${++this.made}`, this.fsImpl);
    if (!cap) return null;
    return {
      procs: cap.procs,
      killAll: () => cap.killAll(),
      isEmpty: () => cap.isEmpty(),
      dispose: () => this.release(cap, 0),
    };
  }

  /** Removes every cgroup the pool still keeps (when the server ends); one given back later is removed at once. */
  close(): void {
    this.closed = true;
    for (const [cap, timer] of this.settling) {
      clearTimeout(timer);
      cap.dispose();
    }
    this.settling.clear();
    for (const cap of this.free.splice(0)) cap.dispose();
  }

  /** Kept once empty; a process killed a moment ago may take a few milliseconds to exit. */
  private release(cap: ProcessGroupCap, looks: number): void {
    this.settling.delete(cap);
    if (this.closed) cap.dispose();
    else if (cap.isEmpty()) {
      if (this.free.length < POOL_SIZE) this.free.push(cap);
      else cap.dispose();
    } else if (looks < SETTLE_LOOKS) {
      this.settling.set(cap, setTimeout(() => this.release(cap, looks + 1), SETTLE_EVERY_MS).unref());
    } else {
      cap.dispose();
    }
  }
}

const SETTLE_EVERY_MS = 20;
const SETTLE_LOOKS = 50;
const openPools = new Set<ProcessCapPool>();
/** A pool whose cgroups are removed when this process exits. */
export function processCapPool(max: number, prefix: string): ProcessCapPool {
  if (!openPools.size) process.once('exit', () => openPools.forEach((p) => p.close()));
  const pool = new ProcessCapPool(max, prefix);
  openPools.add(pool);
  return pool;
}

function v2Parent(fsImpl: { read: (p: string) => string }): string[] {
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

function mkdir(p: string): void {
  mkdirSync(p, { recursive: true });
}
function write(p: string, data: string): void {
  writeFileSync(p, data);
}
function read(p: string): string {
  return readFileSync(p, 'utf8');
}
function rmdir(p: string): void {
  rmdirSync(p);
}

export interface SandboxLaunch {
  file: string;
  args: string[];
  cap: ProcessGroupCap | null;
}

/**
 * How to start `command` in the sandbox. With a pids cgroup, a shell joins it first, caps its address space
 * (`ulimit -v`, RLIMIT_AS) and then becomes bubblewrap, so nothing the command starts is ever outside the cgroup or
 * above the cap; without one, prlimit sets the same memory cap and RLIMIT_NPROC around bubblewrap. Inside,
 * `/bin/sh -c` runs the command.
 */
export function sandboxLaunch(
  policy: SandboxPolicy,
  command: string,
  opts: { bwrap: string; prlimit?: string; limits: SandboxLimits; cap: ProcessGroupCap | null }
): SandboxLaunch {
  const sandboxed = [opts.bwrap, ...sandboxArgs(policy), '--', '/bin/sh', '-c', command];
  if (!opts.cap) {
    const limited = [
      opts.prlimit ?? 'prlimit',
      `--as=${opts.limits.memoryBytes}`,
      `--nproc=${opts.limits.maxProcesses}`,
      '--',
      ...sandboxed,
    ];
    return { file: limited[0], args: limited.slice(1), cap: null };
  }
  const kib = String(Math.floor(opts.limits.memoryBytes / 1024));
  return {
    file: '/bin/sh',
    args: ['-c', 'echo $$ > "$0" && ulimit -v "$1" && shift && exec "$@"', opts.cap.procs, kib, ...sandboxed],
    cap: opts.cap,
  };
}
