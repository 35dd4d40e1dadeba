/**
 * write_file and edit_file: changing files. Both report the content's sha256 before and after, and both change
 * a file through the idempotency store, so a retried call does not change it twice. A call that carries
 * `klea/checkpoint` journals the file's content before it changes it (tools/checkpoints).
 */
import { closestText } from '../closest-text';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { fileChange, removedMost } from '../../../common/text-diff';
import type { WriteChange } from '../../checkpoints/recorder';
import { REPLACE_META_KEY } from '../../../common/workspace-protocol';
import type { ToolContext } from '../context';
import { readText, readTextIfExists, sha256 } from '../fs-ops';
import { checkParses } from '../syntax-check';
import { text, ToolError } from '../tool-result';

/** Refuses a file larger than the per-file limit before anything is written. */
function checkSize(bytes: number, limit: number, shown: string): void {
  if (bytes > limit)
    throw new ToolError(
      `refused: ${shown} would be ${bytes} bytes, over the per-file limit of ${limit} bytes (tools.max_file_mb); nothing changed`
    );
}

/**
 * Refuses a whole-file write that would remove most of an existing file of `KEEP_MIN_LINES` non-blank lines or more
 * (fewer than half of them kept): a model that meant to change a part of a file and wrote only that part. The model
 * reads why, and how to do either on purpose. A short file is no exception: a 1.5B model's own `write_file` of a
 * README's new section kept none of the file's 10 lines.
 */
export function checkKept(before: string, after: string, shown: string): void {
  const most = removedMost(before, after);
  if (!most) return;
  const { old, kept } = most;
  throw new ToolError(
    `refused: this write would remove ${old - kept} of the ${old} lines of ${shown} (write_file ` +
      'replaces the whole file); nothing changed. To change a part of it, use edit_file. To replace it on purpose, ' +
      'delete it first and then write it.'
  );
}

/** The call says it replaces the file on purpose (`_meta["klea/replace"]`: Klea's own write for `/init`). */
function replacesOnPurpose(meta: unknown): boolean {
  return !!meta && typeof meta === 'object' && (meta as Record<string, unknown>)[REPLACE_META_KEY] === true;
}

/**
 * Runs the calls that change one file one at a time, each from reading the file to writing it: two calls at once (an
 * attempt a frozen worker resumes beside its retry, say) would both read the old text and both apply their change.
 */
function oneFileAtATime() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(real: string, run: () => Promise<T>): Promise<T> => {
    const mine = (tails.get(real) ?? Promise.resolve()).then(run);
    const tail = mine.catch(() => undefined);
    tails.set(real, tail);
    void tail.then(() => {
      if (tails.get(real) === tail) tails.delete(real);
    });
    return mine;
  };
}

export function registerWriteTools(server: McpServer, { gate, store, handle, limits, checkpoints }: ToolContext): void {
  const inTurn = oneFileAtATime();
  /** Changes the file, journalling the change first when the call is checkpointed. */
  const change = <T>(meta: unknown, tool: string, c: WriteChange, apply: () => Promise<T>): Promise<T> => {
    const cp = checkpoints?.forCall(tool, meta);
    return cp && checkpoints ? checkpoints.write(cp, c, apply) : apply();
  };

  server.registerTool(
    'write_file',
    {
      title: 'Write a file',
      description:
        'Create a file in the project (add a new one), or overwrite one, with the given content (parent directories are created). The write is atomic. ' +
        'A write that would remove most of an existing file is refused: change a part of a file with edit_file. ' +
        'A write that would break the syntax of a code or config file is refused. ' +
        'The result reports the sha256 before and after; writing the same content again changes nothing.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        content: z.string().describe('the complete new content of the file'),
      },
      annotations: {
        title: 'Write a file',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    handle('write_file', async (a: { path: string; content: string }, meta, _signal, state) => {
      checkSize(Buffer.byteLength(a.content), limits.writeBytes, a.path);
      const g = await gate.allow(a.path, 'write', meta);
      return inTurn(g.real, () => writeWhole(g, a, meta, state));
    })
  );

  async function writeWhole(
    g: Awaited<ReturnType<typeof gate.allow>>,
    a: { path: string; content: string },
    meta: unknown,
    state: Parameters<typeof store.applyChange>[0]
  ) {
    const existing = await readTextIfExists(g, gate.rel).catch((err: unknown) => {
      if (err instanceof ToolError && /is a directory/.test(err.message))
        throw new ToolError(`${a.path} is a directory`);
      throw err;
    });
    const before = existing?.buf ?? null;
    if (before && !replacesOnPurpose(meta)) checkKept(before.toString('utf8'), a.content, a.path);
    // A file that ends with a newline keeps it: a model that leaves it out of the content means no change there.
    if (before?.at(-1) === 0x0a && a.content && !a.content.endsWith('\n')) a = { ...a, content: `${a.content}\n` };
    const stat = existing?.stat ?? null;
    const hashBefore = before ? sha256(before) : null;
    const hashAfter = sha256(a.content);
    const changed = hashBefore !== hashAfter;
    const r = await gate.rel(g.real);
    if (changed) await checkParses(before ? before.toString('utf8') : null, a.content, r);
    const bytes = Buffer.byteLength(a.content);
    const result = text(
      changed
        ? `wrote ${r} (${bytes} bytes${before ? '' : ', new file'})`
        : `${r} already has this content (${bytes} bytes); nothing changed`,
      {
        path: r,
        bytes,
        created: before === null,
        changed,
        sha256_before: hashBefore,
        sha256_after: hashAfter,
        // The change as a unified diff, for the step's `changes` (a new file is all added).
        ...(changed ? { change: fileChange(r, before ? before.toString('utf8') : null, a.content) } : {}),
      }
    );
    if (!changed) return result;
    return change(meta, 'write_file', { real: g.real, before, beforeMode: stat?.mode, hashBefore, hashAfter }, () =>
      store.applyChange(
        state,
        { real: g.real, content: a.content, mode: stat?.mode, sha256_before: hashBefore, sha256_after: hashAfter },
        result
      )
    );
  }

  server.registerTool(
    'edit_file',
    {
      title: 'Edit a file',
      description:
        'Change a file by replacing an exact string in it. old_string must occur exactly once (include surrounding lines to make it unique) unless replace_all is true. ' +
        'Fails, changing nothing, when old_string is missing or not unique, or when it would break the syntax of the file. The result reports the sha256 before and after.',
      inputSchema: {
        path: z.string().describe('file path, relative to the project directory'),
        old_string: z.string().min(1).describe('exact text to replace, including whitespace'),
        new_string: z.string().describe('replacement text'),
        replace_all: z.boolean().default(false).describe('replace every occurrence'),
      },
      annotations: {
        title: 'Edit a file',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    handle(
      'edit_file',
      async (
        a: { path: string; old_string: string; new_string: string; replace_all: boolean },
        meta,
        _signal,
        state
      ) => {
        if (a.old_string === a.new_string)
          throw new ToolError('old_string and new_string are the same: nothing to change');
        const g = await gate.allow(a.path, 'write', meta);
        return inTurn(g.real, () => editIn(g, a, meta, state));
      }
    )
  );

  async function editIn(
    g: Awaited<ReturnType<typeof gate.allow>>,
    a: { path: string; old_string: string; new_string: string; replace_all: boolean },
    meta: unknown,
    state: Parameters<typeof store.applyChange>[0]
  ) {
    const { buf, stat } = await readText(g, gate.rel);
    const current = buf.toString('utf8');
    const count = current.split(a.old_string).length - 1;
    const r = await gate.rel(g.real);
    if (count === 0) {
      const near = closestText(current, a.old_string);
      throw new ToolError(
        near
          ? `old_string was not found in ${r}; nothing changed. The closest text, line ${near.line}, to copy exactly as old_string:\n${near.text}`
          : `old_string was not found in ${r}; nothing changed (read the file to copy the exact text)`
      );
    }
    if (count > 1 && !a.replace_all) {
      throw new ToolError(
        `old_string occurs ${count} times in ${r}; nothing changed (add surrounding lines to make it unique, or set replace_all)`
      );
    }
    const next = a.replace_all
      ? current.split(a.old_string).join(a.new_string)
      : current.replace(a.old_string, () => a.new_string);
    checkSize(Buffer.byteLength(next), limits.writeBytes, r);
    await checkParses(current, next, r);
    const hashes = { sha256_before: sha256(buf), sha256_after: sha256(next) };
    return change(
      meta,
      'edit_file',
      {
        real: g.real,
        before: buf,
        beforeMode: stat.mode,
        hashBefore: hashes.sha256_before,
        hashAfter: hashes.sha256_after,
      },
      () =>
        store.applyChange(
          state,
          { real: g.real, content: next, mode: stat.mode, ...hashes },
          text(`edited ${r}: ${count} replacement${count > 1 ? 's' : ''}`, {
            path: r,
            replacements: count,
            ...hashes,
            change: fileChange(r, current, next),
          })
        )
    );
  }
}
