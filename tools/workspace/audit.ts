/**
 * The call log (`--call-log FILE`): one JSON line per call, appended when it returns: time, duration, tool,
 * arguments, the grants it presented (verified ones only), whether it failed, whether it was answered from the
 * idempotency store, and for changes the file's hashes before and after.
 */
import { promises as fs } from 'node:fs';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { verifiedGrants } from '../../runtime/grant-signing';

export type AuditLog = (
  tool: string,
  args: unknown,
  meta: unknown,
  started: number,
  res: CallToolResult,
  replayed?: boolean
) => Promise<void>;

/** Without a file, calls are not logged. */
export function createAuditLog(callLog: string | undefined, grantKey: string | undefined): AuditLog {
  return async (tool, args, meta, started, res, replayed = false) => {
    if (!callLog) return;
    const s = res.structuredContent as Record<string, unknown> | undefined;
    const line = {
      at: new Date(started).toISOString(),
      ms: Date.now() - started,
      tool,
      args,
      grants: verifiedGrants(grantKey, meta),
      isError: res.isError === true,
      ...(replayed ? { replayed: true } : {}),
      ...(s && 'sha256_after' in s
        ? { sha256_before: s.sha256_before, sha256_after: s.sha256_after, changed: s.changed ?? true }
        : {}),
    };
    // A full disk or a removed log must not fail the call the log is about.
    await fs.appendFile(callLog, `${JSON.stringify(line)}\n`).catch(() => undefined);
  };
}
