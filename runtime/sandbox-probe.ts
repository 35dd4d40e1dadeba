/**
 * Whether bubblewrap can create the namespaces `run_command` needs on this machine. Shared by the workspace server
 * (which refuses commands when it cannot) and the worker (which says so in the `context` event and to /healthz).
 */
import { execFile } from 'node:child_process';
import type { SandboxReport } from '../common/sandbox-status';

export interface SandboxProbe {
  available: boolean;
  /** Why not, and how to fix it; null when available. */
  problem: string | null;
  /** Why not, alone (bubblewrap's own message); null when available. */
  reason?: string | null;
}

/**
 * Whether bubblewrap can create the namespaces a command needs here. Some containers forbid user namespaces;
 * there commands are refused (never run unsandboxed) and the operator is told what to change.
 */
export function probeSandbox(bwrap: string, timeoutMs = 10_000): Promise<SandboxProbe> {
  return new Promise((resolve) => {
    execFile(
      bwrap,
      [
        '--unshare-all',
        // Every protection the sandbox needs is tried here: one that cannot be had refuses every command.
        ...USERNS_ARGS,
        '--die-with-parent',
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        'true',
      ],
      { timeout: timeoutMs },
      (err, _stdout, stderr) => {
        if (!err) return resolve({ available: true, problem: null });
        const e = err as NodeJS.ErrnoException;
        const why =
          e.code === 'ENOENT'
            ? `bubblewrap is not installed (${bwrap}): install the Debian package "bubblewrap"`
            : (stderr || e.message).trim().split('\n')[0];
        const fix = /disable-userns|assert-userns/.test(why)
          ? 'Install bubblewrap 0.8.0 or later, which keeps commands from making user namespaces of their own, or ' +
            'set tools.sandbox.mode: none to run commands without the sandbox'
          : 'Set tools.sandbox.mode: none to run commands without it, or allow user namespaces ' +
            '(sysctl kernel.unprivileged_userns_clone=1; in Docker, --security-opt seccomp=unconfined ' +
            '--security-opt apparmor=unconfined)';
        resolve({ available: false, reason: why, problem: `the command sandbox cannot run here (${why}). ${fix}` });
      }
    );
  });
}

/**
 * What keeps a command from making user namespaces of its own (bubblewrap 0.8.0 or later): every command's sandbox
 * has them (tools/workspace/bubblewrap-policy.ts), and the probe tries them.
 */
export const USERNS_ARGS = ['--unshare-user', '--disable-userns', '--assert-userns-disabled'];

const probes = new Map<string, Promise<SandboxProbe>>();

/** The sandbox as configured and as this machine allows it; bubblewrap is tried once per process. */
export async function sandboxReport(sandbox: { mode: 'bwrap' | 'none'; bwrap_path: string }): Promise<SandboxReport> {
  if (sandbox.mode === 'none') return { status: 'off', problem: null };
  let probe = probes.get(sandbox.bwrap_path);
  if (!probe) probes.set(sandbox.bwrap_path, (probe = probeSandbox(sandbox.bwrap_path)));
  const { available, problem, reason } = await probe;
  return available ? { status: 'on', problem: null } : { status: 'unavailable', problem, reason: reason ?? null };
}
