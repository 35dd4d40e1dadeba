/**
 * OpenTelemetry traces, exported over OTLP/HTTP when the standard variables say where to: off unless
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not
 * `true`; `OTEL_TRACES_EXPORTER=none` turns traces off too). `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` picks
 * `http/protobuf` (the default) or `http/json`; `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` and `OTEL_SERVICE_NAME`
 * are honoured as usual.
 *
 * One provider per process, registered globally (the API and the worker each call `startTracing` once); code
 * that makes spans uses `@opentelemetry/api`, whose tracer is a no-op while nothing is registered.
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from './log';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  /** Where spans go: the traces endpoint itself (`…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  serviceName: string;
}

/** The tracer name Klea's own spans are made with. */
export const KLEA_TRACER = 'klea';
export const kleaTracer = (): Tracer => trace.getTracer(KLEA_TRACER);

/**
 * What the environment asks for, or null when traces are off. Throws on a protocol Klea cannot speak (gRPC),
 * so a misconfigured process says so at start instead of dropping every span.
 */
export function tracingSettingsFromEnv(
  defaultServiceName: string,
  env: NodeJS.ProcessEnv = process.env
): TracingSettings | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return null;
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!tracesEndpoint && !endpoint) return null;
  // The signal-specific endpoint is used as is; the general one gets the signal's path appended (the OTLP spec).
  const url = tracesEndpoint || `${endpoint!.replace(/\/+$/, '')}/v1/traces`;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf')
    .trim()
    .toLowerCase();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new Error(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: Klea exports traces over OTLP/HTTP ` +
        "(set it to http/protobuf or http/json, and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port, usually 4318)"
    );
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || defaultServiceName;
  return { url, protocol, serviceName };
}

export interface Tracing {
  settings: TracingSettings;
  resource: Resource;
  /** Also handed to the worker's workflow span sink, so workflow spans leave by the same exporter. */
  spanProcessor: SpanProcessor;
  /** Sends what is buffered. */
  flush(): Promise<void>;
  /** Flushes and stops exporting (the global provider stays registered, as a no-op from then on). */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The process's tracing, if `startTracing` turned it on. */
export const currentTracing = (): Tracing | undefined => active;

/**
 * Starts exporting spans when the environment says where to; returns undefined (and creates nothing: no
 * exporter, no provider) when it does not. Idempotent per process.
 */
export function startTracing(
  defaultServiceName: string,
  opts: { log?: Logger; env?: NodeJS.ProcessEnv; version?: string } = {}
): Tracing | undefined {
  if (active) return active;
  const settings = tracingSettingsFromEnv(defaultServiceName, opts.env);
  if (!settings) return undefined;
  const resource = new Resource({
    [ATTR_SERVICE_NAME]: settings.serviceName,
    [ATTR_SERVICE_VERSION]: opts.version ?? '0.1.0',
  });
  const exporter =
    settings.protocol === 'http/json'
      ? new OtlpJsonExporter({ url: settings.url })
      : new OtlpProtoExporter({ url: settings.url });
  const spanProcessor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] })
  );
  trace.setGlobalTracerProvider(provider);
  opts.log?.info('exporting traces', { endpoint: settings.url, protocol: settings.protocol });
  const tracing: Tracing = {
    settings,
    resource,
    spanProcessor,
    flush: () => provider.forceFlush(),
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
      // Unregistered, so a later start in the same process (tests) registers its own provider.
      trace.disable();
      propagation.disable();
      context.disable();
      if (active === tracing) active = undefined;
    },
  };
  active = tracing;
  return tracing;
}

/**
 * Runs `fn` in a child span of the active one (a no-op span while tracing is off). A failure marks the span as
 * an error with its message; `fn` may add attributes as it learns them.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL
): Promise<T> {
  return kleaTracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
