/** Temporal plumbing shared by the worker, the API, the start script and the test harness. */
import { existsSync, readFileSync } from 'node:fs';
import type { Config } from '../common/config';
import path from 'node:path';
import { type Connection, type ConnectionOptions } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { REPO_ROOT } from './repo-root';

// Re-exported for the worker, the API, the scripts and the tests, which import it from here; the CLI imports
// repo-root.ts alone, so as not to load the Temporal packages.
export { REPO_ROOT };

/** The Temporal CLI: TEMPORAL_CLI_PATH, else the project-local install in .tools/bin, else `temporal` on PATH. */
export function temporalCliPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_CLI_PATH) return env.TEMPORAL_CLI_PATH;
  const local = path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
  return existsSync(local) ? local : 'temporal';
}

/**
 * Registers Klea's custom search attributes in the namespace when missing. The dev server registers
 * them from flags only when its database is new, so this runs on every start and is a no-op when present.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTES.filter(({ name }) => !(customAttributes && name in customAttributes));
  if (missing.length === 0) return [];
  const { INDEXED_VALUE_TYPE_KEYWORD, INDEXED_VALUE_TYPE_INT, INDEXED_VALUE_TYPE_DATETIME } =
    temporal.api.enums.v1.IndexedValueType;
  const indexed = {
    Keyword: INDEXED_VALUE_TYPE_KEYWORD,
    Int: INDEXED_VALUE_TYPE_INT,
    Datetime: INDEXED_VALUE_TYPE_DATETIME,
  };
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(({ name, type }) => [name, indexed[type]])),
  });
  return missing.map(({ name }) => name);
}

/** Address, TLS and API key for Temporal, from config (the same for the worker's and the API's connections). */
export function temporalConnectionOptions(
  config: Config
): Pick<ConnectionOptions, 'address' | 'tls'> & { apiKey?: string } {
  const { address, api_key: apiKey, tls } = config.temporal;
  const wantsTls = tls.enabled || Boolean(apiKey) || Boolean(tls.client_cert_path);
  const read = (p: string | null) => (p ? readFileSync(p) : undefined);
  return {
    address,
    ...(apiKey ? { apiKey } : {}),
    ...(wantsTls
      ? {
          tls: {
            ...(tls.server_name ? { serverNameOverride: tls.server_name } : {}),
            ...(tls.server_ca_path ? { serverRootCACertificate: read(tls.server_ca_path) } : {}),
            ...(tls.client_cert_path && tls.client_key_path
              ? { clientCertPair: { crt: read(tls.client_cert_path)!, key: read(tls.client_key_path)! } }
              : {}),
          },
        }
      : {}),
  };
}
