/** Which OpenTelemetry variables turn traces on and how spans leave; the metrics address's form. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { parseHostPort } from '../../runtime/metrics';
import { startTracing, tracingSettingsFromEnv } from '../../runtime/tracing';

describe('tracingSettingsFromEnv', () => {
  it('is off with no endpoint, or when the SDK or the traces exporter is turned off', () => {
    expect(tracingSettingsFromEnv('klea-api', {})).toBeNull();
    expect(
      tracingSettingsFromEnv('klea-api', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })
    ).toBeNull();
    expect(
      tracingSettingsFromEnv('klea-api', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })
    ).toBeNull();
  });

  it('appends /v1/traces to the general endpoint and takes the traces endpoint as it is', () => {
    expect(tracingSettingsFromEnv('klea-api', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toEqual({
      url: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'klea-api',
    });
    expect(
      tracingSettingsFromEnv('klea-worker', {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9999/custom',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'klea-eu-1',
      })
    ).toEqual({ url: 'http://t:9999/custom', protocol: 'http/json', serviceName: 'klea-eu-1' });
  });

  it('refuses gRPC, naming what to set instead', () => {
    expect(() =>
      tracingSettingsFromEnv('klea-api', {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      })
    ).toThrow(/grpc is not supported.*http\/protobuf or http\/json/);
  });
});

describe('parseHostPort', () => {
  it('takes host:port and [v6]:port, and refuses anything else naming the setting', () => {
    expect(parseHostPort('127.0.0.1:9464', 'worker.metrics_address')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseHostPort('[::1]:9464', 'worker.metrics_address')).toEqual({ host: '::1', port: 9464 });
    for (const bad of ['9464', 'localhost', 'h:99999', 'http://h:1'])
      expect(() => parseHostPort(bad, 'worker.metrics_address')).toThrow(/^worker\.metrics_address must be host:port/);
  });
});

describe('startTracing over http/protobuf', () => {
  it('posts protobuf spans to /v1/traces with the headers from OTEL_EXPORTER_OTLP_HEADERS', async () => {
    const got: { url?: string; type?: string; auth?: string; bytes: number }[] = [];
    const server = http.createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => {
        got.push({ url: req.url, type: req.headers['content-type'], auth: req.headers.authorization, bytes });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    const saved = process.env.OTEL_EXPORTER_OTLP_HEADERS;
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'authorization=Bearer abc';
    const tracing = startTracing('klea-test', { env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } });
    try {
      expect(tracing?.settings.protocol).toBe('http/protobuf');
      trace.getTracer('klea').startSpan('one').end();
      await tracing!.flush();
      expect(got).toEqual([
        { url: '/v1/traces', type: 'application/x-protobuf', auth: 'Bearer abc', bytes: expect.any(Number) },
      ]);
      expect(got[0].bytes).toBeGreaterThan(0);
    } finally {
      await tracing?.shutdown();
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
      else process.env.OTEL_EXPORTER_OTLP_HEADERS = saved;
      await new Promise((r) => server.close(r));
    }
  });
});
