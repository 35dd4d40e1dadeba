/**
 * The API's traces and metrics. Every request is a server span (continuing a `traceparent` the caller sent) in
 * which the route's Temporal calls run, so Temporal's OpenTelemetry client interceptor (api/index.ts) carries the
 * trace into the workflow start, signal or update. Requests are counted and timed by route pattern and status;
 * open event streams are a gauge. GET /metrics serves the registry (behind the token like every other route).
 */
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { RequestHandler, Response } from 'express';
import { apiMetrics, type ApiMetrics } from '../runtime/metrics';
import { KLEA_TRACER } from '../runtime/tracing';
import { defineRoute, type RouteSpec } from './route';

const STREAMS = 'kleaOpenStreams';

/** Counts an event stream as open until the returned function is called. */
export function streamOpened(res: Response): () => void {
  const gauge = res.locals[STREAMS] as ApiMetrics['openStreams'] | undefined;
  gauge?.inc();
  let closed = false;
  return () => {
    if (closed) return;
    closed = true;
    gauge?.dec();
  };
}

export interface ApiObservability {
  metrics: ApiMetrics;
  middleware: RequestHandler;
  route: RouteSpec;
}

export function apiObservability(): ApiObservability {
  const metrics = apiMetrics();
  const tracer = trace.getTracer(KLEA_TRACER);

  const middleware: RequestHandler = (req, res, next) => {
    res.locals[STREAMS] = metrics.openStreams;
    const started = process.hrtime.bigint();
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      `${req.method} ${req.path}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': req.path } },
      parent
    );
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      // The pattern, not the path: ids would make a series per task. Unmatched requests share one label.
      const route = (req.route as { path?: string } | undefined)?.path;
      const label = route ? `${req.baseUrl}${route}` : 'unmatched';
      const status = String(res.headersSent ? res.statusCode : 499);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.requests.inc({ method: req.method, route: label, status });
      metrics.requestSeconds.observe({ method: req.method, route: label, status }, seconds);
      if (route) span.updateName(`${req.method} ${label}`);
      span.setAttributes({ 'http.route': label, 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.on('finish', end);
    res.on('close', end);
    context.with(trace.setSpan(parent, span), () => next());
  };

  const route = defineRoute({
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: "The API's Prometheus metrics (text exposition format)",
    tags: ['operations'],
    responses: { 200: { description: 'Prometheus metrics', contentType: 'text/plain' } },
    handler: async ({ res }) => {
      const text = await metrics.registry.metrics();
      res.status(200).type(metrics.registry.contentType).send(text);
      return undefined;
    },
  });

  return { metrics, middleware, route };
}
