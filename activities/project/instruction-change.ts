/**
 * What a write_file or edit_file would do to an agent instruction file (AGENTS.md, CLAUDE.md): every later plan
 * reads it as standing instructions, so changing it is the user's decision, taken on the diff the permission request
 * shows (never a side effect of a step).
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { isAgentInstructions, type GuardedPath } from '../../common/path-guard';
import { fileChange, type FileChange } from '../../common/text-diff';

/** Larger instruction files are not read for a diff (the request still shows the call). */
const MAX_BYTES = 1024 * 1024;

/** The file's text now: null when it does not exist, undefined when it cannot be read (or is no plain file). */
function readNow(real: string): string | null | undefined {
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_BYTES) return undefined;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The change a workspace write_file or edit_file call would make to the agent instruction file `g` names, as a
 * unified diff; undefined for any other path or call, or when the call would fail anyway.
 */
export function instructionChange(
  tool: string,
  args: Record<string, unknown>,
  g: GuardedPath,
  projectDir: string
): FileChange | undefined {
  // Security: only a protected instruction file; a sensitive one (a secret) is never read into a request.
  if (g.op !== 'write' || g.arg !== 'path' || !g.reason.startsWith('a protected file') || !isAgentInstructions(g.real))
    return undefined;
  const before = readNow(g.real);
  if (before === undefined) return undefined;
  let after: string;
  if (tool === 'write_file') {
    if (typeof args.content !== 'string') return undefined;
    // As write_file does: a file that ends with a newline keeps it.
    after = before?.endsWith('\n') && args.content && !args.content.endsWith('\n') ? `${args.content}\n` : args.content;
  } else if (tool === 'edit_file') {
    const { old_string: from, new_string: to, replace_all: all } = args;
    if (before === null || typeof from !== 'string' || !from || typeof to !== 'string') return undefined;
    const count = before.split(from).length - 1;
    if (count === 0 || (count > 1 && all !== true)) return undefined;
    after = all === true ? before.split(from).join(to) : before.replace(from, () => to);
  } else return undefined;
  if (after === before) return undefined;
  const rel = path.relative(projectDir, g.real);
  return fileChange(rel.startsWith('..') ? g.real : rel, before, after);
}
