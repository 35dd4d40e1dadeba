/**
 * How the workspace server starts one run_command: inside a bubblewrap sandbox (bubblewrap-policy.ts) built when
 * the command starts, from the facts as they are then (the project, the grants the call carries, the sensitive
 * files to hide, the network setting: on, it reaches out through the egress proxy only, sandbox-egress.ts), under
 * the process and memory caps of command-limits.ts; or, only when the operator chose `mode: none`, as a plain shell. Where bubblewrap cannot run, commands are refused with the reason;
 * they never silently run unsandboxed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promises as fs } from 'node:fs';
import { NETWORK_META_KEY } from '../../common/workspace-protocol';
import { verifiedGrants } from '../../runtime/grant-signing';
import { probeSandbox, type SandboxProbe } from '../../runtime/sandbox-probe';
import { bubblewrapArgs, SANDBOX_PATH, writeSandboxFiles, type SandboxFiles } from './bubblewrap-policy';
import { sandboxPath } from './tool-dirs';
import { commandCgroups, DEFAULT_COMMAND_LIMITS, launchWithLimits, type CommandLimits } from './command-limits';
import type { CommandLaunch } from './commands';
import { createEgressProxy, type EgressProxy } from './egress-proxy';
import { egressMounts, throughEgress } from './sandbox-egress';
import { scrubEnv } from './env';
import type { PathGate } from './path-gate';
import { buildSandboxView } from './sandbox-view';
import { ToolError } from './tool-result';

/** Where commands sandbox themselves: `bwrap` (the default), or `none` (explicitly unsandboxed). */
export type SandboxMode = 'bwrap' | 'none';

export interface CommandSandboxOptions {
  mode: SandboxMode;
  bwrap?: string;
  /** The network commands get when a call does not say (a session's setting arrives per call). */
  network?: 'on' | 'off';
  /** With the network on, the only host names commands may reach (`tools.sandbox.network_allow`). */
  networkAllow?: readonly string[];
  limits?: Partial<CommandLimits>;
  /** Klea's own state (state dir, results, audit log, config): hidden from commands when inside the project. */
  hide?: readonly string[];
  /** Secret for verifying grants (the same the path gate uses). */
  grantKey?: string;
  /** Files host tools run later: read-only to commands (default: none). */
  protectedPatterns?: readonly string[];
  /** Most entries looked through for the files to hide (tools.sandbox.scan_limit). */
  scanLimit?: number;
  /** Toolchain directories bound read-only, their PATH entries first (tools.sandbox.tool_dirs, ./tool-dirs). */
  toolDirs?: readonly string[];
}

/** The default of tools.sandbox.scan_limit. */
export const DEFAULT_SCAN_LIMIT = 200_000;

export interface CommandSandbox {
  /** `bwrap` and whether it can run here, or `none`. */
  status(): Promise<{ mode: SandboxMode; probe: SandboxProbe | null }>;
  /** How to start `command` in `cwd` (a real path the gate allowed) under this call's grants. */
  prepare(command: string, cwd: string, meta: unknown): Promise<CommandLaunch>;
  /** Removes the cgroups still kept for commands (the server is done). */
  close(): Promise<void>;
}

/**
 * The environment a sandboxed command starts with: the server's, without secrets, and without what names the host's
 * places (its PATH, HOME, TMPDIR, XDG directories) or its agents and buses (ssh and gpg agents, D-Bus, the display):
 * those paths do not exist in the sandbox, and a command has no business looking for them.
 */
export function sandboxEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out = scrubEnv(env);
  for (const k of Object.keys(out))
    if (
      /^(PATH|HOME|TMPDIR|XDG_[A-Z_]+|SSH_AUTH_SOCK|SSH_AGENT_PID|GPG_AGENT_INFO|DBUS_[A-Z_]+|DISPLAY|WAYLAND_DISPLAY|XAUTHORITY)$/.test(
        k
      )
    )
      delete out[k];
  return out;
}

/** The git ignore file naming these root-relative placeholders, written once per set in the server's own directory. */
function ignoreFile(dir: string, placeholders: readonly string[]): string {
  const text = [...placeholders]
    .sort()
    .map((p) => `/${p.replace(/([\\*?[!#])/g, '\\$1')}`)
    .join('\n');
  const file = path.join(dir, `git-ignore-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(`${file}.tmp`, `${text}\n`, { mode: 0o644 });
    renameSync(`${file}.tmp`, file);
  }
  return file;
}

export function createCommandSandbox(gate: PathGate, opts: CommandSandboxOptions): CommandSandbox {
  const bwrap = opts.bwrap ?? '/usr/bin/bwrap';
  const limits = { ...DEFAULT_COMMAND_LIMITS, ...opts.limits };
  let probe: Promise<SandboxProbe> | undefined;
  let files: SandboxFiles | undefined;
  /** The server's own directory for what sandboxes bind: its users, the empty file, the egress proxy's socket. */
  const sandboxDir = path.join(os.tmpdir(), `klea-sandbox-${process.pid}-${randomBytes(4).toString('hex')}`);
  let egress: Promise<{ proxy: EgressProxy; socket: string }> | undefined;
  /** The egress proxy, started when a command first has the network on. */
  const egressProxy = () =>
    (egress ??= (async () => {
      const socket = path.join(sandboxDir, 'egress.sock');
      // Security: in the server's own directory, which no other user (and no command) can open.
      await fs.mkdir(sandboxDir, { recursive: true, mode: 0o700 });
      await fs.rm(socket, { force: true });
      const proxy = createEgressProxy({ allow: opts.networkAllow });
      await proxy.listen(socket);
      return { proxy, socket };
    })());
  const probed = () => (probe ??= probeSandbox(bwrap));
  const cgroups = commandCgroups(limits.maxProcesses, `cmd-${process.pid}-${randomBytes(4).toString('hex')}`);

  /** Klea's own files that lie inside the project and exist now. */
  async function ownEntries(root: string): Promise<Array<{ path: string; dir: boolean }>> {
    const inside = (x: string) => x === root || x.startsWith(root + path.sep);
    const own = await Promise.all(
      (opts.hide ?? []).filter(inside).map(async (h) => {
        const st = await fs.stat(h).catch(() => null);
        return st ? [{ path: h, dir: st.isDirectory() }] : [];
      })
    );
    return own.flat();
  }

  return {
    async close() {
      await cgroups.close();
      if (egress) await (await egress.catch(() => null))?.proxy.close();
    },

    async status() {
      return { mode: opts.mode, probe: opts.mode === 'bwrap' ? await probed() : null };
    },

    async prepare(command, cwd, meta) {
      if (opts.mode === 'none')
        return { file: '/bin/sh', args: ['-c', command], cgroup: null, env: scrubEnv(process.env) };
      const p = await probed();
      if (!p.available) throw new ToolError(`run_command refused: ${p.problem}`);
      const m = meta && typeof meta === 'object' ? (meta as Record<string, unknown>) : {};
      const network = (m[NETWORK_META_KEY] ?? opts.network) === 'on';
      const root = (await gate.root()).real;
      const grants = verifiedGrants(opts.grantKey, meta);
      // Security: what is hidden is listed as the command starts, so a secret created a moment ago is hidden too,
      // and one that appears while it runs stops it.
      const view = await buildSandboxView(gate, {
        root,
        grants,
        protectedPatterns: opts.protectedPatterns ?? [],
        scanLimit: opts.scanLimit ?? DEFAULT_SCAN_LIMIT,
      });
      const hidden = [...view.hidden, ...(await ownEntries(root))];
      files ??= writeSandboxFiles(sandboxDir);
      const gitIgnore = view.placeholders.length ? ignoreFile(sandboxDir, view.placeholders) : undefined;
      const rest = sandboxEnv(process.env);
      const policy = {
        projectDir: root,
        cwd,
        grants,
        hidden,
        pinned: view.pinned,
        readOnly: view.readOnly,
        scratchBytes: limits.memoryBytes,
        network,
        // Python writes no bytecode into the project: a cached .pyc of a file changed within the same second (same
        // size) would run the old code, and a step's check would judge a fix by it.
        env: { ...rest, PATH: sandboxPath(process.env.PATH, opts.toolDirs ?? []), PYTHONDONTWRITEBYTECODE: '1' },
        toolDirs: opts.toolDirs ?? [],
        files,
        gitIgnore,
      };
      // Security: with the network on, the sandbox still has no network of its own but loopback; the only way out
      // is the egress proxy's socket, which refuses this machine and its networks.
      const extraMounts = network ? egressMounts((await egressProxy()).socket) : [];
      const shell = ['/bin/sh', '-c', command];
      const argv = [
        bwrap,
        ...bubblewrapArgs({ ...policy, extraMounts }),
        '--',
        ...(network ? throughEgress(shell) : shell),
      ];
      return {
        ...launchWithLimits(argv, { limits, cgroup: cgroups.take() }),
        // Only the launcher (the joining shell or prlimit, then bwrap) sees this environment; the command gets the
        // one set inside the sandbox.
        env: { PATH: SANDBOX_PATH },
        onStop: view.onStop,
        finish: view.finish,
      };
    },
  };
}
