/**
 * The bubblewrap policy every `run_command` runs under, so what the permission gate decided is what the kernel
 * allows. A command sees the project read-write at its real path, the system read-only, the paths the user granted
 * (read-only for `read` and `execute`, read-write for `write`) and nothing else: no home directories, no other
 * project, not the host's /tmp, not Klea's own state, not the sensitive files of the project. Files host tools run
 * later (git hooks and config, editor settings) are read-only. It gets new user, PID, IPC, UTS, cgroup and (unless
 * the session allows the network) network namespaces, its own /proc, a minimal read-only /dev, a private /tmp,
 * /dev/shm and an empty HOME (in memory, together no larger than its memory cap; the rest of the root is
 * read-only), and ends with everything it started.
 *
 * The argument list is built by a pure function (`bubblewrapArgs`) so the policy can be read and tested on its own.
 * The process and memory caps around bubblewrap are command-limits.ts; whether bubblewrap works on this machine is
 * `probeSandbox` (runtime/sandbox-probe, shared with the worker).
 */
import { existsSync, lstatSync, mkdirSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PathOp } from '../../common/path-guard';
import { USERNS_ARGS } from '../../runtime/sandbox-probe';

export interface SandboxPolicy {
  /** The project's real path: bound read-write. */
  projectDir: string;
  /** The command's working directory (a real path inside the project or a granted directory). */
  cwd: string;
  /** Granted real paths outside the project (or sensitive inside it), bound as their operation allows. */
  grants: ReadonlyArray<{ path: string; op: PathOp }>;
  /** Real paths inside the project the command must not see (sensitive files, Klea's own state). */
  hidden: ReadonlyArray<{ path: string; dir: boolean }>;
  /** Real paths bound onto themselves so they cannot be renamed away (`.git`, whose protected parts lie in it). */
  pinned: readonly string[];
  /** Real paths the command may read but not change, replace or remove (protected files: git hooks, `.envrc`). */
  readOnly: readonly string[];
  /** Bytes the in-memory scratch space (/tmp, HOME and /dev/shm) holds in all. */
  scratchBytes: number;
  /** The session allows the network (name resolution files are bound; the way out is sandbox-egress.ts). */
  network: boolean;
  /**
   * A file of git ignore rules naming the placeholders of this command (`/AGENTS.md`), bound as git's own ignore
   * file in HOME, so `git add -A` in the command does not stage them.
   */
  gitIgnore?: string;
  /** More mounts (the egress proxy's socket and bridge), made before the root turns read-only. */
  extraMounts?: readonly string[];
  /** Environment of the command (already scrubbed of secrets). */
  env: Readonly<Record<string, string>>;
  /** Toolchain directories outside the system's (`tools.sandbox.tool_dirs`, ./tool-dirs): bound read-only. */
  toolDirs?: readonly string[];
  /** Files made for the sandbox by `writeSandboxFiles`: a passwd and group naming only its user, an empty file. */
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

/** The PATH a command gets: system locations only (a PATH into the worker's home would not exist in the sandbox). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

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
export function bubblewrapArgs(policy: SandboxPolicy, exists: (p: string) => boolean = existsSync): string[] {
  // Security: scratch space is memory; half of it for /tmp, a quarter each for HOME and /dev/shm, so a command
  // filling all three stays within its cap and gets ENOSPC, not the worker's memory.
  const scratch = scratchSizes(policy.scratchBytes);
  const args = [
    '--die-with-parent',
    '--new-session',
    // Security: a network namespace of its own even with the network on (then only through the egress proxy).
    '--unshare-all',
    // Security: a user namespace of its own, in which no further one can be made (a nested one would hold every
    // capability there, and could unshare a mount namespace to work at the masks); bubblewrap checks it holds.
    ...USERNS_ARGS,
    '--cap-drop',
    'ALL',
    '--hostname',
    'klea-sandbox',
    '--clearenv',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    scratch.shm,
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--size',
    scratch.tmp,
    '--tmpfs',
    '/tmp',
    '--dir',
    '/home',
    '--size',
    scratch.home,
    '--tmpfs',
    SANDBOX_HOME,
  ];
  for (const dir of SYSTEM_DIRS) args.push(...systemEntry(dir, exists));
  for (const f of [...SYSTEM_ETC, ...(policy.network ? NETWORK_ETC : [])]) if (exists(f)) args.push('--ro-bind', f, f);
  // Security: the host's user list stays outside; programs that look up their user find the sandbox's.
  args.push('--ro-bind', policy.files.passwd, '/etc/passwd', '--ro-bind', policy.files.group, '/etc/group');
  // Security: a toolchain the user named, read-only at its own path; nothing else of the home it is in.
  for (const d of policy.toolDirs ?? []) if (exists(d)) args.push('--ro-bind', d, d);

  // Security: the project at its real path, read-write; nothing above it is bound.
  args.push('--bind', policy.projectDir, policy.projectDir);
  // Security: what host tools run later is read-only (a mount point cannot be written, replaced or removed), in a
  // directory that cannot be renamed away and rebuilt; a grant to write a protected file opens it.
  for (const p of policy.pinned) args.push('--bind', p, p);
  const writable = new Set(policy.grants.filter((g) => g.op === 'write').map((g) => g.path));
  for (const p of policy.readOnly) if (!writable.has(p)) args.push('--ro-bind', p, p);
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

  // git reads $HOME/.config/git/ignore when nothing else is set (XDG_CONFIG_HOME is not passed in).
  if (policy.gitIgnore) args.push('--ro-bind', policy.gitIgnore, `${SANDBOX_HOME}/.config/git/ignore`);
  args.push(...(policy.extraMounts ?? []));
  // Security: nothing outside the binds and the sized scratch space can be written (the root is memory too).
  args.push('--remount-ro', '/');
  for (const [k, v] of Object.entries({ ...policy.env, HOME: SANDBOX_HOME, TMPDIR: '/tmp' }))
    args.push('--setenv', k, v);
  args.push('--chdir', policy.cwd);
  return args;
}

/** The sizes (bytes, as bubblewrap's `--size` takes them) of /tmp, HOME and /dev/shm: together `total`. */
export function scratchSizes(total: number): { tmp: string; home: string; shm: string } {
  const quarter = Math.max(1024 * 1024, Math.floor(total / 4));
  return { tmp: String(2 * quarter), home: String(quarter), shm: String(quarter) };
}

/** The whole argv that runs `command` (with `/bin/sh -c`) in the sandbox `policy` describes. */
export function bubblewrapCommand(bwrap: string, policy: SandboxPolicy, command: string): string[] {
  return [bwrap, ...bubblewrapArgs(policy), '--', '/bin/sh', '-c', command];
}

export interface SandboxFiles {
  passwd: string;
  group: string;
  /** Bound over a hidden file: it reads as empty. */
  empty: string;
}

/** Writes the files every sandbox binds (once per server) into `dir`, which no command can see. */
export function writeSandboxFiles(dir: string): SandboxFiles {
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
