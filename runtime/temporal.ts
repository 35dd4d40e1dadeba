/** Temporal plumbing shared by the worker, the API, the start script and the test harness. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_NAMES } from '../common/search-attributes';

export const REPO_ROOT = findRepoRoot(__dirname);

function findRepoRoot(from: string): string {
  let dir = from;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'Makefile'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

/** The Temporal CLI: TEMPORAL_CLI_PATH, else the project-local install in .tools/bin, else `temporal` on PATH. */
export function temporalCliPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_CLI_PATH) return env.TEMPORAL_CLI_PATH;
  const local = path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
  return existsSync(local) ? local : 'temporal';
}

/**
 * Registers Klea's custom search attributes (Keyword) in the namespace when missing. The dev server registers
 * them from flags only when its database is new, so this runs on every start and is a no-op when present.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !(customAttributes && name in customAttributes));
  if (missing.length === 0) return [];
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((name) => [name, keyword])),
  });
  return missing;
}

export async function connectClient(address: string, extra: Partial<ConnectionOptions> = {}): Promise<Connection> {
  return Connection.connect({ address, connectTimeout: '5s', ...extra });
}
