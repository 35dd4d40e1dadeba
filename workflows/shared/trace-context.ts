/**
 * One task, one trace: a task is started by the session's loop, whose own trace is that of the request that
 * started the session. The message or `startTask` update that asked for the task remembers the trace it arrived
 * in (Temporal's OpenTelemetry interceptors make it the active context inside the handler), and the loop starts
 * the child in it, so the task's spans continue the REST call that asked for it.
 *
 * In memory only (a symbol-keyed property, never in history or in what continue-as-new carries): a task queued
 * before a continue-as-new starts in the session's trace instead. Without tracing the context is an empty one.
 */
import { context, type Context } from '@opentelemetry/api';

const TRACE = Symbol('klea.trace');
type Traced = { [TRACE]?: Context };

/** Remembers the active trace context on a queued item. */
export function rememberTrace(item: object): void {
  Object.defineProperty(item, TRACE, { value: context.active(), enumerable: false, configurable: true });
}

/** Runs `fn` in the trace context remembered on `item`, or in the current one. */
export function inTraceOf<T>(item: object, fn: () => T): T {
  const ctx = (item as Traced)[TRACE];
  return ctx ? context.with(ctx, fn) : fn();
}
