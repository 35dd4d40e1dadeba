/**
 * One task, one trace: a task is started by the session's loop, whose own trace is that of the request that
 * started the session. The message or `startTask` update that asked for the task remembers the trace it arrived
 * in (Temporal's OpenTelemetry interceptors make it the active context inside the handler), and the loop starts
 * the child in it, so the task's spans continue the REST call that asked for it.
 *
 * In memory only (a symbol-keyed property, never in history or in what continue-as-new carries): a task queued
 * before a continue-as-new starts in the session's trace instead. An untraced run remembers nothing.
 *
 * This module is shared by every run (shared/preload.ts), so it holds no OpenTelemetry API of its own: a traced
 * run hands it its own (shared/traced-interceptors.ts), kept on the run's global object, which the worker keeps
 * apart for each run.
 */
import type { Context, ContextAPI } from '@opentelemetry/api';

const TRACE = Symbol('klea.trace');
type Traced = { [TRACE]?: Context };

/** Where a traced run keeps its OpenTelemetry context API: a property of its own global object. */
const RUN_CONTEXT_API = Symbol.for('klea.trace-context-api');
type RunGlobals = { [RUN_CONTEXT_API]?: ContextAPI };

/** Called by a traced run as it starts: the context API whose active context it remembers. */
export function useTraceContext(api: ContextAPI): void {
  (globalThis as RunGlobals)[RUN_CONTEXT_API] = api;
}

/** Remembers the active trace context on a queued item (nothing in an untraced run). */
export function rememberTrace(item: object): void {
  const api = (globalThis as RunGlobals)[RUN_CONTEXT_API];
  if (api) Object.defineProperty(item, TRACE, { value: api.active(), enumerable: false, configurable: true });
}

/** Runs `fn` in the trace context remembered on `item`, or in the current one. */
export function inTraceOf<T>(item: object, fn: () => T): T {
  const ctx = (item as Traced)[TRACE];
  const api = (globalThis as RunGlobals)[RUN_CONTEXT_API];
  return ctx && api ? api.with(ctx, fn) : fn();
}
