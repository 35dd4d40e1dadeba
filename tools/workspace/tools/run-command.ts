/**
 * run_command: a shell command in the project directory (see commands.ts for how it runs). A call that carries
 * `klea/checkpoint` journals what the command changed in the project (tools/checkpoints).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { runCommand, type CommandResult } from '../commands';
import { CheckpointUnavailable } from '../../checkpoints/recorder';
import type { ToolContext } from '../context';
import { text, ToolError } from '../tool-result';

export function registerRunCommand(
  server: McpServer,
  { limits, gate, handle, sandbox, checkpoints }: ToolContext
): void {
  server.registerTool(
    'run_command',
    {
      title: 'Run a shell command',
      description:
        'Run a shell command (/bin/sh -c) in the project directory or a subdirectory and get its exit code and output (cut at a cap). ' +
        'Secrets in the environment are removed. Killed after timeout_ms. Use it to build, test, or inspect; prefer the file tools for reading and editing files. ' +
        'It runs in a sandbox: only the project (and paths the user granted) exist, and the network is off unless the user turned it on; ' +
        'then public internet hosts are reached through the proxy named by HTTP_PROXY/HTTPS_PROXY (curl, npm, pip and git use it), never this machine or its network.',
      inputSchema: {
        command: z.string().min(1).describe('the shell command line'),
        cwd: z.string().default('.').describe('working directory, relative to the project directory'),
        timeout_ms: z.number().int().min(100).max(limits.commandMaxTimeoutMs).default(limits.commandTimeoutMs),
      },
      annotations: {
        title: 'Run a shell command',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    handle('run_command', async (a: { command: string; cwd: string; timeout_ms: number }, meta, signal) => {
      // An empty cwd is the project itself, as its default "." is.
      if (!a.cwd.trim()) a = { ...a, cwd: '.' };
      await gate.allowCall('run_command', a, meta, false);
      const g = await gate.allow(a.cwd, 'execute', meta);
      const st = await fs.stat(g.real);
      if (!st.isDirectory()) throw new ToolError(`cwd ${a.cwd} is not a directory`);
      const run = async () => {
        const launch = await sandbox.prepare(a.command, g.real, meta);
        return runCommand(launch, g.real, a.timeout_ms, limits.commandOutputBytes, signal);
      };
      const cp = checkpoints?.forCall('run_command', meta);
      let result: CommandResult;
      let checkpointProblem: string | null = null;
      /** The project files the command created, changed or deleted (known when it is checkpointed). */
      let changed: string[] | null = null;
      if (cp && checkpoints) {
        const done = await checkpoints.command(cp, run).catch((err: unknown) => {
          if (!(err instanceof CheckpointUnavailable)) throw err;
          throw new ToolError(
            `run_command refused: its checkpoint could not be taken (${err.message}); the command was not run`
          );
        });
        result = done.value;
        checkpointProblem = done.problem;
        if (!done.problem) changed = done.changed;
      } else result = await run();
      const parts = [
        `exit code: ${result.exit_code ?? 'none'}${result.timed_out ? ` (killed after ${a.timeout_ms} ms)` : ''}${result.signal ? ` (signal ${result.signal})` : ''}`,
      ];
      if (result.stopped && result.withheld)
        parts.push(
          `stopped: ${result.stopped}; the sandbox cannot hide a file that appears after the command started, so ` +
            'the command was ended and its output is withheld. Run it again: the file is then hidden from it'
        );
      else if (result.stopped) parts.push(`stopped: ${result.stopped}`);
      for (const note of result.notes) parts.push(`note: ${note}`);
      const hint = result.exit_code === 127 ? await scriptHint(result.stderr, g.real) : null;
      if (hint) parts.push(`note: ${hint}`);
      if (checkpointProblem)
        parts.push(
          `note: what the command changed could not be checkpointed (${checkpointProblem}); a rewind of this step cannot undo it`
        );
      if (result.stdout) parts.push(`--- stdout ---\n${result.stdout}`);
      if (result.stderr) parts.push(`--- stderr ---\n${result.stderr}`);
      return text(
        parts.join('\n'),
        { ...(result as unknown as Record<string, unknown>), ...(changed ? { changed_files: changed } : {}) },
        result.exit_code !== 0 || result.stopped !== null
      );
    })
  );
}

/** How a script is run by the interpreter its name says. */
const INTERPRETERS: Record<string, string> = { '.py': 'python3', '.sh': 'sh', '.js': 'node', '.mjs': 'node' };

/**
 * For a command the shell could not find (exit 127) that names a script in the directory it ran in: how to run it
 * (`stats.py: not found` is a script run without its interpreter or `./`).
 */
export async function scriptHint(stderr: string, cwd: string): Promise<string | null> {
  const m = /^(?:\/bin\/)?sh: \d+: ([\w.-]+): not found$/m.exec(stderr);
  if (!m) return null;
  const name = m[1];
  const interpreter = INTERPRETERS[path.extname(name)];
  if (!interpreter) return null;
  const st = await fs.stat(path.join(cwd, name)).catch(() => null);
  return st?.isFile() ? `${name} is a file here, not a command: run it as \`${interpreter} ${name}\`` : null;
}
