/**
 * The Temporal Web UI of the cluster on this machine (runtime/cluster.ts, `make cluster`): its configuration,
 * written at every start, and the command that runs it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface ClusterUiOptions {
  /** The cached UI server build (scripts/install-temporal-ui.sh prints it): bin/temporal-ui. */
  uiDir: string;
  /** Where its generated configuration goes (`cluster/ui` in Klea's data directory). */
  configDir: string;
  /** The frontend's address, and the UI's own port (on 127.0.0.1 only). */
  temporalAddress: string;
  port: number;
  namespace: string;
  /** The API's codec endpoint, when payloads are encrypted. */
  codecEndpoint?: string;
}

/**
 * The Temporal Web UI for a cluster: the UI server built from its Go module (it carries the page), listening on
 * 127.0.0.1 only, talking to the frontend. Started as the caller supervises it (a process of its own).
 */
export function temporalUiCommand(opts: ClusterUiOptions): { command: string; args: string[] } {
  mkdirSync(opts.configDir, { recursive: true });
  const origin = `http://127.0.0.1:${opts.port}`;
  writeFileSync(
    path.join(opts.configDir, 'klea.yaml'),
    [
      '# Written by make cluster (runtime/cluster-ui.ts) at every start.',
      `temporalGrpcAddress: ${JSON.stringify(opts.temporalAddress)}`,
      'host: 127.0.0.1',
      `port: ${opts.port}`,
      'publicPath: ""',
      'enableUi: true',
      `defaultNamespace: ${JSON.stringify(opts.namespace)}`,
      'disableNewsFetch: true',
      'notifyOnNewVersion: false',
      'cors:',
      '  cookieInsecure: true',
      '  unsafeAllowAllOrigins: false',
      '  allowOrigins:',
      `    - ${JSON.stringify(origin)}`,
      `    - ${JSON.stringify(`http://localhost:${opts.port}`)}`,
      ...(opts.codecEndpoint ? ['codec:', `  endpoint: ${JSON.stringify(opts.codecEndpoint)}`] : []),
      '',
    ].join('\n')
  );
  return {
    command: path.join(opts.uiDir, 'bin', 'temporal-ui'),
    args: ['--root', opts.configDir, '--config', '.', '--env', 'klea', 'start'],
  };
}
