/**
 * How the workspace server starts one run_command: inside the bubblewrap sandbox (sandbox.ts) built from this
 * call's facts (the project, the grants the call carries, the sensitive files to hide, the network setting), or,
 * only when the operator chose `mode: none`, as a plain shell. Where bubblewrap cannot run, commands are refused
 * with the reason; they never silently run unsandboxed.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { promises as fs } from 'node:fs';
import { NETWORK_META_KEY } from '../../common/workspace-protocol';
import { verifiedGrants } from '../../runtime/grant-signing';
import { probeSandbox, type SandboxProbe } from '../../runtime/sandbox-probe';
import { scrubEnv } from './env';
import type { PathGate } from './path-gate';
import type { CommandLaunch } from './commands';
import {
  DEFAULT_SANDBOX_LIMITS,
  processCapPool,
  SANDBOX_PATH,
  sandboxArgs,
  sandboxFiles,
  sandboxLaunch,
  type SandboxFiles,
  type SandboxLimits,
  type SandboxMode,
  type SandboxPolicy,
} from './sandbox';
import { ToolError } from './tool-result';
import { WARM_SCRIPT, warmable, WarmPool } from './warm-sandboxes';

export interface CommandSandboxOptions {
  mode: SandboxMode;
  bwrap?: string;
  /** The network commands get when a call does not say (a session's setting arrives per call). */
  network?: 'on' | 'off';
  limits?: Partial<SandboxLimits>;
  /** Klea's own state (state dir, results, audit log, config): hidden from commands when inside the project. */
  hide?: readonly string[];
  /** Secret for verifying grants (the same the path gate uses). */
  grantKey?: string;
  /** Most sandboxes started ahead of their commands (warm-sandboxes.ts); 0 starts each with its command. */
  warm?: number;
}

export interface CommandSandbox {
  /** `bwrap` and whether it can run here, or `none`. */
  status(): Promise<{ mode: SandboxMode; probe: SandboxProbe | null }>;
  /** How to start `command` in `cwd` (a real path the gate allowed) under this call's grants. */
  prepare(command: string, cwd: string, meta: unknown): Promise<CommandLaunch>;
  /** Sandboxes ready ahead of their commands. */
  readonly warm: WarmPool;
  /** Ends the ready sandboxes and removes the cgroups kept for commands (the server is done). */
  close(): Promise<void>;
}

/** Most entries looked at when listing the sensitive files to hide; a larger project is cut off here. */
const HIDE_SCAN_LIMIT = 50_000;

/** Most warm sandboxes a server keeps (as many as commands a batch runs at once, up to this). */
export const DEFAULT_WARM_SANDBOXES = 8;
/** A warm sandbox unused this long is ended. */
const WARM_IDLE_MS = 30_000;

export function createCommandSandbox(gate: PathGate, opts: CommandSandboxOptions): CommandSandbox {
  const bwrap = opts.bwrap ?? '/usr/bin/bwrap';
  const limits = { ...DEFAULT_SANDBOX_LIMITS, ...opts.limits };
  let probe: Promise<SandboxProbe> | undefined;
  let files: SandboxFiles | undefined;
  const probed = () => (probe ??= probeSandbox(bwrap));
  const caps = processCapPool(limits.maxProcesses, `cmd-${process.pid}-${randomBytes(4).toString('hex')}`);
  const warm = new WarmPool({
    max: opts.mode === 'bwrap' ? (opts.warm ?? DEFAULT_WARM_SANDBOXES) : 0,
    idleMs: WARM_IDLE_MS,
  });

  /** Sensitive files and directories inside the project, by the same patterns the gate uses. */
  async function sensitiveEntries(root: string): Promise<Array<{ path: string; dir: boolean }>> {
    const out: Array<{ path: string; dir: boolean }> = [];
    let seen = 0;
    const visit = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const d of entries) {
        if (++seen > HIDE_SCAN_LIMIT) return;
        const real = path.join(dir, d.name);
        if (gate.sensitive(path.relative(root, real))) out.push({ path: real, dir: d.isDirectory() });
        // Symlinks are not followed: the sandbox shows a link's target only if that target is bound anyway.
        else if (d.isDirectory() && d.name !== '.git') await visit(real);
      }
    };
    await visit(root);
    return out;
  }

  /**
   * The sandbox a command gets now: the project, the sensitive files to hide as they are now, this call's grants
   * and network; and the identity (device, inode) of the project and of each hidden entry.
   */
  async function policyNow(cwd: string, grants: SandboxPolicy['grants'], network: boolean) {
    const root = (await gate.root()).real;
    const inside = (x: string) => x === root || x.startsWith(root + path.sep);
    const own = await Promise.all(
      (opts.hide ?? []).filter(inside).map(async (h) => {
        const st = await fs.stat(h).catch(() => null);
        return st ? [{ path: h, dir: st.isDirectory() }] : [];
      })
    );
    const hidden = [...(await sensitiveEntries(root)), ...own.flat()];
    const identity = await Promise.all(
      [root, ...hidden.map((h) => h.path)].map((p) =>
        fs.lstat(p).then(
          (st) => `${st.dev}:${st.ino}`,
          () => 'gone'
        )
      )
    );
    files ??= sandboxFiles(path.join(os.tmpdir(), `klea-sandbox-${process.pid}-${randomBytes(4).toString('hex')}`));
    const { PATH: _hostPath, HOME: _home, TMPDIR: _tmp, ...rest } = scrubEnv(process.env);
    const policy: SandboxPolicy = {
      projectDir: root,
      cwd,
      grants,
      hidden,
      network,
      env: { ...rest, PATH: SANDBOX_PATH },
      files,
    };
    return { policy, identity };
  }

  /**
   * Only the launcher (the joining shell or prlimit, then bwrap) sees this environment; the command gets the one set
   * inside the sandbox.
   */
  const launch = (policy: SandboxPolicy, command: string) => ({
    ...sandboxLaunch(policy, command, { bwrap, limits, cap: caps.take() }),
    env: { PATH: SANDBOX_PATH },
  });

  /** What a warm sandbox must have been built as to run a command under `policy` (warm-sandboxes.ts). */
  const warmKey = (policy: SandboxPolicy, identity: string[]) =>
    [...sandboxArgs({ ...policy, cwd: policy.projectDir }), '', JSON.stringify(limits), '', ...identity].join('\0');

  return {
    warm,

    async close() {
      await warm.close();
      caps.close();
    },

    async status() {
      return { mode: opts.mode, probe: opts.mode === 'bwrap' ? await probed() : null };
    },

    async prepare(command, cwd, meta) {
      if (opts.mode === 'none')
        return { file: '/bin/sh', args: ['-c', command], cap: null, env: scrubEnv(process.env) };
      const p = await probed();
      if (!p.available) throw new ToolError(`run_command refused: ${p.problem}`);
      const m = meta && typeof meta === 'object' ? (meta as Record<string, unknown>) : {};
      const network = (m[NETWORK_META_KEY] ?? opts.network) === 'on';
      const grants = verifiedGrants(opts.grantKey, meta);
      const now = await policyNow(cwd, grants, network);
      // Security: a warm sandbox never holds a grant, and serves only a command whose sandbox it is exactly.
      if (grants.length || !warm.enabled || !warmable(command, cwd)) return launch(now.policy, command);
      const ready = warm.take(warmKey(now.policy, now.identity));
      const done = warm.started(async () => {
        const next = await policyNow(now.policy.projectDir, [], network);
        return {
          key: warmKey(next.policy, next.identity),
          launch: () => ({
            ...launch({ ...next.policy, cwd: next.policy.projectDir }, WARM_SCRIPT),
            cwd: next.policy.projectDir,
          }),
        };
      });
      return ready ? { warm: ready, command, done } : { ...launch(now.policy, command), done };
    },
  };
}
