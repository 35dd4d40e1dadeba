/**
 * Resolving Klea's configuration: the parsed `klea.yaml` checked against the schema (common/config.ts), the
 * environment overrides of docs/architecture.md §9 applied, and the result checked again, with one line per problem
 * naming the key or the variable. Pure (no file or env access): `runtime/config.ts` reads the file and the
 * environment and hands both to `resolveConfig`.
 */
import type { z } from 'zod';
import { ConfigSchema, type Config } from './config';
import { describeZodIssues } from './zod-issues';

/** Environment variables that override the file (docs/architecture.md §9). */
export const ENV_OVERRIDES: ReadonlyArray<{
  env: string;
  path: readonly string[];
  kind: 'string' | 'port' | 'count' | 'list';
}> = [
  { env: 'OPENAI_API_KEY', path: ['model', 'api_key'], kind: 'string' },
  { env: 'OPENAI_BASE_URL', path: ['model', 'base_url'], kind: 'string' },
  { env: 'KLEA_MODEL', path: ['model', 'name'], kind: 'string' },
  { env: 'KLEA_STRUCTURED_OUTPUT', path: ['model', 'structured_output'], kind: 'string' },
  { env: 'KLEA_MODEL_PROFILE', path: ['model', 'profile'], kind: 'string' },
  { env: 'KLEA_ROUTE_TIMEOUT_MS', path: ['model', 'route_timeout_ms'], kind: 'count' },
  { env: 'KLEA_MAX_TOKENS_PER_TASK', path: ['model', 'max_tokens_per_task'], kind: 'count' },
  { env: 'KLEA_MAX_OUTPUT_TOKENS', path: ['model', 'max_output_tokens'], kind: 'count' },
  { env: 'KLEA_MAX_CALLS_PER_STEP', path: ['limits', 'max_calls_per_step'], kind: 'count' },
  { env: 'KLEA_SESSION_IDLE_CLOSE_MS', path: ['session', 'idle_close_ms'], kind: 'count' },
  { env: 'KLEA_TASK_CONTINUE_AS_NEW_AFTER_EVENTS', path: ['task', 'continue_as_new_after_events'], kind: 'count' },
  { env: 'TEMPORAL_ADDRESS', path: ['temporal', 'address'], kind: 'string' },
  { env: 'TEMPORAL_NAMESPACE', path: ['temporal', 'namespace'], kind: 'string' },
  { env: 'KLEA_TASK_QUEUE', path: ['temporal', 'task_queue'], kind: 'string' },
  { env: 'KLEA_TEMPORAL_UI_URL', path: ['temporal', 'ui_url'], kind: 'string' },
  { env: 'TEMPORAL_API_KEY', path: ['temporal', 'api_key'], kind: 'string' },
  { env: 'KLEA_PAYLOAD_KEY', path: ['temporal', 'payload_key'], kind: 'string' },
  { env: 'KLEA_PROJECT_DIR', path: ['project', 'dir'], kind: 'string' },
  { env: 'KLEA_API_HOST', path: ['api', 'host'], kind: 'string' },
  { env: 'KLEA_API_PORT', path: ['api', 'port'], kind: 'port' },
  { env: 'KLEA_API_ALLOWED_HOSTS', path: ['api', 'allowed_hosts'], kind: 'list' },
  { env: 'KLEA_API_TOKEN', path: ['api', 'token'], kind: 'string' },
  { env: 'KLEA_WORKSPACE_STATE_DIR', path: ['mcp', 'workspace', 'state_dir'], kind: 'string' },
  { env: 'KLEA_RESULTS_DIR', path: ['tools', 'results_dir'], kind: 'string' },
  { env: 'KLEA_WORKER_METRICS_ADDRESS', path: ['worker', 'metrics_address'], kind: 'string' },
  { env: 'KLEA_HOST_ID', path: ['worker', 'host_id'], kind: 'string' },
  { env: 'KLEA_HOST_WAIT_MS', path: ['worker', 'host_wait_ms'], kind: 'count' },
  { env: 'KLEA_GROUP_ID', path: ['worker', 'group_id'], kind: 'string' },
  { env: 'KLEA_GROUP_DIR', path: ['worker', 'group_dir'], kind: 'string' },
  { env: 'KLEA_GROUP_LEASE_MS', path: ['worker', 'group_lease_ms'], kind: 'count' },
  { env: 'KLEA_BWRAP', path: ['tools', 'sandbox', 'bwrap_path'], kind: 'string' },
];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** How the config's problems read: `unknown key "x"`, a bad server name explained, `(top level)` for the file. */
const describeConfigIssues = (error: z.ZodError) =>
  describeZodIssues(error, { whole: '(top level)', unknownKeys: 'grouped', recordKeys: 'explain' });

/** One line per problem: `<source>: <key.path>: <what was expected>`. */
export function formatConfigIssues(source: string, error: z.ZodError): string {
  return describeConfigIssues(error)
    .map((d) => `${source}: ${d.path}: ${d.message}`)
    .join('\n');
}

/**
 * Merges the parsed file (any JSON-like value) with the environment and validates the result.
 * Throws ConfigError whose message names the key and what was expected.
 */
export function resolveConfig(
  fileValue: unknown,
  env: Readonly<Record<string, string | undefined>>,
  source = 'klea.yaml'
): Config {
  const fromFile = ConfigSchema.safeParse(fileValue ?? {});
  if (!fromFile.success) throw new ConfigError(formatConfigIssues(source, fromFile.error));

  const merged = structuredClone(fromFile.data) as unknown as Record<string, Record<string, unknown>>;
  for (const { env: name, path, kind } of ENV_OVERRIDES) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (kind === 'port') {
      value = /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isInteger(value) || (value as number) > 65535) {
        throw new ConfigError(`environment: ${name}: expected a port number (0-65535), got "${raw}"`);
      }
    }
    if (kind === 'list')
      value = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    if (kind === 'count') {
      value = /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isSafeInteger(value) || (value as number) < 1)
        throw new ConfigError(`environment: ${name}: expected a positive whole number, got "${raw}"`);
    }
    const parent = path
      .slice(0, -1)
      .reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, merged as Record<string, unknown>);
    parent[path[path.length - 1]] = value;
  }
  const final = ConfigSchema.safeParse(merged);
  if (!final.success) {
    const byEnv = new Map(ENV_OVERRIDES.map((o) => [o.path.join('.'), o.env]));
    throw new ConfigError(
      describeConfigIssues(final.error)
        .map(({ path: key, message }) => {
          const envName = byEnv.get(key);
          return envName && env[envName] ? `environment: ${envName}: ${message}` : `${source}: ${key}: ${message}`;
        })
        .join('\n')
    );
  }
  // Keys that need each other, once the file and the environment are one (either may give either).
  const { group_id: group, host_id: host, group_dir: groupDir } = final.data.worker;
  const named = (key: string, envName: string) => (env[envName] ? `environment: ${envName}` : `${source}: ${key}`);
  if (group === null && groupDir !== null)
    throw new ConfigError(
      `${named('worker.group_dir', 'KLEA_GROUP_DIR')}: the group's directory is for a host of a group: set ` +
        'worker.group_id (KLEA_GROUP_ID) too, or leave it out'
    );
  if (group !== null && (host === null || groupDir === null))
    throw new ConfigError(
      `${named('worker.group_id', 'KLEA_GROUP_ID')}: a host of a group needs ` +
        `${host === null ? 'worker.host_id (KLEA_HOST_ID)' : 'worker.group_dir (KLEA_GROUP_DIR)'}`
    );
  return final.data;
}
