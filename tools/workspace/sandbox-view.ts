/**
 * What one command's sandbox must cover, found as the command starts, and what the command may not have made, undone
 * once it is over. The look-through (sandbox-view-scan.ts) finds the sensitive files and unix sockets to hide, the
 * protected files to make read-only and the repositories to pin, and watches every directory it reads until the
 * command ends, so that what appears stops it (`onStop`). A protected path of the project's root that does not exist
 * yet gets a placeholder for as long as a command runs (sandbox-view-placeholders.ts); what cannot have one is
 * looked for once the command is over, and removed (sandbox-view-sweep.ts). What these share is in
 * sandbox-view-state.ts; what they need to know of git, in sandbox-view-git.ts.
 */
import path from 'node:path';
import type { PathGate } from './path-gate';
import { makePlaceholders, releasePlaceholders } from './sandbox-view-placeholders';
import { lookThrough } from './sandbox-view-scan';
import { createViewState } from './sandbox-view-state';
import { sweep } from './sandbox-view-sweep';

export interface ViewOptions {
  root: string;
  /** Real paths granted to the call (read, write or execute), each exactly as granted. */
  grants: ReadonlyArray<{ path: string; op: string }>;
  protectedPatterns: readonly string[];
  /** Most entries looked through in all. */
  scanLimit: number;
}

export interface SandboxView {
  hidden: Array<{ path: string; dir: boolean }>;
  pinned: string[];
  readOnly: string[];
  /** The placeholders this command holds, root-relative: git inside the sandbox is told to ignore them. */
  placeholders: string[];
  /**
   * Registers what to do when the command must be stopped while it runs (at once if it already must): why, and
   * whether its output must be withheld (a secret may be in it).
   */
  onStop(stop: (reason: string, withhold: boolean) => void): void;
  /** The command is over (nothing it started is left): undoes what it must not have done; notes for its result. */
  finish(): Promise<string[]>;
}

export async function buildSandboxView(gate: PathGate, opts: ViewOptions): Promise<SandboxView> {
  const view = createViewState(gate, opts.root, opts.grants);
  const hidden: SandboxView['hidden'] = [];
  await makePlaceholders(view, opts.protectedPatterns);

  const release = async () => {
    view.over = true;
    for (const w of view.watchers) w.close();
    releasePlaceholders(view.mine);
  };

  try {
    await lookThrough(view, hidden, opts.grants, opts.scanLimit);
  } catch (err) {
    await release();
    throw err;
  }

  return {
    hidden,
    pinned: view.pinned,
    // Outer paths first, so a protected file in a protected directory is bound after it.
    readOnly: [...view.readOnly].sort((a, b) => a.length - b.length),
    placeholders: view.mine.map((p) => path.relative(opts.root, p)),
    onStop(fn) {
      view.stop = fn;
      if (view.stopReason) fn(view.stopReason.reason, view.stopReason.withhold);
    },
    async finish() {
      view.over = true;
      for (const w of view.watchers) w.close();
      // Security: looked for with the placeholders still in place, so none is taken for something the command made.
      const notes = await sweep(view);
      await release();
      return notes;
    },
  };
}
