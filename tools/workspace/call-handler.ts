/**
 * Every tool call goes through one pipeline: answer from the idempotency store when an earlier attempt left a
 * result, otherwise run the tool, turn refusals and file-system errors into `isError` results (never protocol
 * errors, so a model can read them), record the result for a retry, and write the call log line.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuditLog } from './audit';
import type { CallState, CallStateStore } from './call-state';
import { errnoText } from './fs-ops';
import { text, ToolError } from './tool-result';

export type ToolBody<A> = (
  args: A,
  meta: unknown,
  signal: AbortSignal | undefined,
  state: CallState | null
) => Promise<CallToolResult>;

export type ToolHandler<A> = (args: A, extra: { _meta?: unknown; signal?: AbortSignal }) => Promise<CallToolResult>;

export type Handle = <A>(tool: string, body: ToolBody<A>) => ToolHandler<A>;

export interface CallHandlerDeps {
  store: CallStateStore;
  audit: AuditLog;
  rel: (real: string) => Promise<string>;
}

export function createCallHandler({ store, audit, rel }: CallHandlerDeps): Handle {
  return <A>(tool: string, body: ToolBody<A>): ToolHandler<A> => {
    const run = async (
      args: A,
      meta: unknown,
      signal: AbortSignal | undefined,
      state: CallState | null
    ): Promise<CallToolResult> => {
      try {
        return await body(args, meta, signal, state);
      } catch (err) {
        if (err instanceof ToolError) return text(err.message, undefined, true);
        const e = err as NodeJS.ErrnoException;
        return text(`error: ${errnoText(e)}${e.path ? `: ${await rel(e.path)}` : ''}`, undefined, true);
      }
    };
    return async (args, extra) => {
      const started = Date.now();
      const state = store.forCall(tool, extra._meta);
      const earlier = state ? await store.recover(state) : null;
      if (earlier) {
        await audit(tool, args, extra._meta, started, earlier.res, earlier.replayed);
        return earlier.res;
      }
      const res = await run(args, extra._meta, extra.signal, state);
      // Unrecorded, a retry still finds the intent and judges it by the file; the caller gets its answer anyway.
      if (state) await store.settle(state, res).catch(() => undefined);
      await audit(tool, args, extra._meta, started, res);
      return res;
    };
  };
}
