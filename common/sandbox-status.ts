/**
 * Where `run_command` runs, as the worker found it at start: `on` (inside bubblewrap), `off` (the operator chose
 * `tools.sandbox.mode: none`: commands run unsandboxed) or `unavailable` (bubblewrap cannot create its namespaces
 * here: commands are refused). The worker says it in the `context` event and in its Temporal identity, which is
 * how the API's /healthz learns it (the API may run on another machine than the worker).
 */
import { z } from 'zod';

export const SandboxStatusSchema = z
  .enum(['on', 'off', 'unavailable'])
  .describe(
    'on: commands run in the bubblewrap sandbox; off: unsandboxed (tools.sandbox.mode: none); unavailable: refused'
  );
export type SandboxStatus = z.infer<typeof SandboxStatusSchema>;

export interface SandboxReport {
  status: SandboxStatus;
  /** Why commands cannot run, and how to fix it; null unless `unavailable`. */
  problem: string | null;
  /** Why, alone and short (bubblewrap's own message), for the worker's identity; null unless `unavailable`. */
  reason?: string | null;
}

/** What a person reads about the sandbox (the status pane, `klea` and the context event's note). */
export function sandboxNote(report: SandboxReport): string | null {
  if (report.status === 'off') return 'commands run WITHOUT the sandbox (tools.sandbox.mode: none)';
  if (report.status === 'unavailable') return `commands are refused: ${report.problem ?? 'the sandbox cannot run'}`;
  return null;
}

/** What `projectContextInfo` tells a workflow for its `context` event. */
export interface ProjectContextInfo {
  file: string | null;
  sandbox: SandboxStatus;
  sandboxNote: string | null;
}

const TAG = / sandbox=(on|off|unavailable)(?: why=(.+))?$/;

/** How long a reason a worker's identity carries. */
const MAX_WHY = 160;

/**
 * A worker's Temporal identity: the usual `pid@host`, its sandbox status and, when commands are refused, why (one
 * short line), so /healthz can say it wherever the API runs.
 */
export function workerIdentity(base: string, status: SandboxStatus, reason?: string | null): string {
  const why =
    status === 'unavailable' && reason
      ? reason
          .replace(/\p{Cc}+/gu, ' ')
          .trim()
          .slice(0, MAX_WHY)
      : '';
  return `${base} sandbox=${status}${why ? ` why=${why}` : ''}`;
}

/** The sandbox status a worker's identity carries; null for a worker that does not say (another version). */
export function sandboxOfIdentity(identity: string | null | undefined): SandboxStatus | null {
  const m = TAG.exec(identity ?? '');
  return m ? (m[1] as SandboxStatus) : null;
}

/** Why a worker's identity says its commands are refused; null when it does not say. */
export function sandboxWhyOfIdentity(identity: string | null | undefined): string | null {
  return TAG.exec(identity ?? '')?.[2] ?? null;
}
