/** API process entry: `npm run api`. Listens, refuses unsafe binds, and shuts down on SIGTERM/SIGINT. */
import { Client, Connection } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { startTracing } from '../runtime/tracing';
import { loadConfigOrExit } from '../runtime/config';
import { createLogger } from '../runtime/log';
import { dataConverterFor } from '../runtime/payload-codec';
import { exitWithParent } from '../runtime/supervised';
import { temporalConnectionOptions } from '../runtime/temporal';
import { createApp } from './app';
import { isLoopbackName } from './loopback';

async function main() {
  const log = createLogger('api');
  const { config } = loadConfigOrExit('api');
  const { host, port, token } = config.api;
  if (!isLoopbackName(host) && !token) {
    // Security: an agent that can run commands must not be reachable from the network without a token.
    log.error(`refusing to listen on ${host} without KLEA_API_TOKEN: set a token or bind 127.0.0.1`);
    process.exit(1);
  }
  // The connection is lazy: the API starts (and /healthz reports "unreachable") even when Temporal is down.
  const connection = Connection.lazy(temporalConnectionOptions(config));
  // With OTEL_EXPORTER_OTLP_ENDPOINT set: request spans, continued into workflows through Temporal's headers.
  const tracing = startTracing('klea-api', { log });
  // With a payload key, everything the API sends to or reads from a workflow is encrypted in Temporal's history.
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverterFor(config),
    ...(tracing ? { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } } : {}),
  });
  const app = createApp({ client, config });

  const server = app.listen(port, host);
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE')
      log.error(`port ${port} on ${host} is already in use: stop what uses it or set KLEA_API_PORT`);
    else log.error(`cannot listen on ${host}:${port}: ${err.message}`);
    process.exit(1);
  });
  server.on('listening', () =>
    log.info(`listening on http://${host}:${port}`, {
      auth: token ? 'bearer token' : 'none (loopback only)',
      payloads: config.temporal.payload_key ? 'encrypted (codec endpoint /codec)' : 'plain',
    })
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    server.closeAllConnections();
    server.close(() => {
      void Promise.allSettled([connection.close(), tracing?.shutdown()]).finally(() => process.exit(0));
    });
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  exitWithParent(() => stop('supervisor gone'));
}

main().catch((err: unknown) => {
  process.stderr.write(`api: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
