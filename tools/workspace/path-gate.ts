/**
 * The server's own path check: the same guard the worker's permission gate uses, so a path outside the root, or a
 * sensitive file inside it, is refused here too unless the call carries a signed grant covering it. The worker's
 * decision is not trusted blindly; a client without the grant key gets nothing past this gate.
 */
import path from 'node:path';
import {
  grantCovers,
  inOwnState,
  OWN_STATE_REASON,
  ProtectedMatcher,
  SensitiveMatcher,
  type PathOp,
  type RootFacts,
} from '../../common/path-guard';
import { verifiedGrants } from '../../runtime/grant-signing';
import { guardOne, guardToolCall, resolveRoot, type GuardedPath } from '../../runtime/path-resolve';
import { ToolError } from './tool-result';

export interface PathGateOptions {
  root: string;
  /** Secret for verifying grants; without it no grant is accepted. */
  grantKey?: string;
  sensitivePatterns: readonly string[];
  /** Files host tools run or load later: writing one needs a grant, as a sensitive file does. */
  protectedPatterns?: readonly string[];
  /** Real paths of Klea's own state: refused to every tool, whatever grant a call carries. */
  ownState?: readonly string[];
  homeDir?: string;
}

export interface PathGate {
  /** The root's real path and case sensitivity (resolved once, when the gate is made). */
  root(): Promise<RootFacts>;
  /** Resolves and checks one path argument; throws a ToolError the model can act on when it is refused. */
  allow(raw: string, op: PathOp, meta: unknown): Promise<GuardedPath>;
  /** Checks every path a call names (for run_command, its cwd and the paths in the command). */
  allowCall(tool: string, args: Record<string, unknown>, meta: unknown, readOnly: boolean): Promise<void>;
  /** The sensitive pattern a root-relative path matches, or null. */
  sensitive(relative: string): string | null;
  /** The protected pattern a root-relative path matches (`.git` for a repository's own entry), or null. */
  protectedBy(relative: string): string | null;
  /** Whether a real path is Klea's own state (no tool may touch it, no walk may enter it). */
  ownState(real: string): boolean;
  /** A real path as the model should see it: relative to the root when inside it. */
  rel(real: string): Promise<string>;
}

export function createPathGate(opts: PathGateOptions): PathGate {
  const { sensitivePatterns, protectedPatterns = [], ownState = [], homeDir } = opts;
  const matcher = new SensitiveMatcher(sensitivePatterns);
  const protectedFiles = new ProtectedMatcher(protectedPatterns);
  const guardOpts = { sensitivePatterns, protectedPatterns, ownState, homeDir };
  // A missing root fails the calls that use it, not the server's start.
  const rootFacts = new Promise<RootFacts>((resolve) => resolve(resolveRoot(path.resolve(opts.root))));

  return {
    root: () => rootFacts,

    async allow(raw, op, meta) {
      const root = await rootFacts;
      const g = guardOne(raw, 'path', op, root, matcher, { projectDir: root.real, ...guardOpts }, protectedFiles);
      // Security: Klea's own state is refused whatever the call carries.
      if (g.class === 'forbidden') throw new ToolError(`refused: ${raw} is ${OWN_STATE_REASON}`);
      // Security: outside or sensitive paths pass only with a verified grant for this very path and operation.
      if (g.class !== 'inside' && !grantCovers(verifiedGrants(opts.grantKey, meta), g.real, op)) {
        throw new ToolError(
          `refused: ${raw} is ${g.reason}; this server only touches files inside ${root.real} (and no sensitive files) unless the user grants access`
        );
      }
      return g;
    },

    async allowCall(tool, args, meta, readOnly) {
      const root = await rootFacts;
      const grants = verifiedGrants(opts.grantKey, meta);
      for (const g of guardToolCall(
        { server: 'workspace', tool, args, readOnly },
        { projectDir: root.real, ...guardOpts }
      )) {
        if (g.class === 'forbidden') throw new ToolError(`refused: ${g.requested} (${g.arg}) is ${OWN_STATE_REASON}`);
        // Security: every path the call names needs the same grant a single path argument would.
        if (g.class !== 'inside' && !grantCovers(grants, g.real, g.op)) {
          throw new ToolError(
            `refused: ${g.requested} (${g.arg}) is ${g.reason}; not allowed without the user's grant`
          );
        }
      }
    },

    sensitive: (relative) => matcher.match(relative),
    protectedBy: (relative) => protectedFiles.match(relative),
    ownState: (real) => inOwnState(real, ownState),

    async rel(real) {
      const root = (await rootFacts).real;
      const r = path.relative(root, real);
      return r.startsWith('..') || path.isAbsolute(r) ? real : r || '.';
    },
  };
}
