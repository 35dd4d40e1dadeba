/**
 * Klea's configuration: the schema of `klea.yaml`, its defaults, and the environment overrides of
 * ARCHITECTURE §9. Pure (no file or env access): `runtime/config.ts` reads the file and the environment and
 * hands both to `resolveConfig`.
 */
import { z } from 'zod';

export const DEFAULT_SENSITIVE_PATTERNS = [
  '.env',
  '.env.*',
  '*.env',
  '**/.ssh/**',
  '**/.aws/**',
  '**/.gnupg/**',
  '**/.config/gcloud/**',
  '**/.azure/**',
  '**/.kube/config',
  '**/.docker/config.json',
  '.netrc',
  '_netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  'id_rsa',
  'id_rsa.*',
  'id_dsa',
  'id_ecdsa',
  'id_ecdsa.*',
  'id_ed25519',
  'id_ed25519.*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  '*.keystore',
  '*.jks',
  'credentials.json',
  'service-account*.json',
  '*.tfstate',
];

const McpStdioServerSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  /** Per-call timeout for this server's tools. */
  timeout_ms: z.number().int().positive().optional(),
  disabled: z.boolean().default(false),
});

const McpHttpServerSchema = z.strictObject({
  url: z.url(),
  headers: z.record(z.string(), z.string()).default({}),
  timeout_ms: z.number().int().positive().optional(),
  disabled: z.boolean().default(false),
});

export const McpServerConfigSchema = z.union([McpStdioServerSchema, McpHttpServerSchema]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

export const ModeSchema = z.enum(['general', 'scientific']);
export type Mode = z.infer<typeof ModeSchema>;
export const ToolAccessSchema = z.enum(['full', 'read_only']);
export type ToolAccess = z.infer<typeof ToolAccessSchema>;
export const ReviewPolicySchema = z.enum(['plan', 'always']);
export type ReviewPolicy = z.infer<typeof ReviewPolicySchema>;

export const ConfigSchema = z.strictObject({
  model: z
    .strictObject({
      /** Model name sent to the chat-completions endpoint (env KLEA_MODEL). */
      name: z.string().min(1).default('gpt-4o-mini'),
      /** OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1 (env OPENAI_BASE_URL). */
      base_url: z.url().nullable().default(null),
      /** API key (env OPENAI_API_KEY; prefer the environment to the file). */
      api_key: z.string().nullable().default(null),
      temperature: z.number().min(0).max(2).default(0),
      /** One model request's timeout. */
      timeout_ms: z.number().int().positive().default(120_000),
      /** Re-asks of a structured node whose output fails validation. */
      max_reasks: z.number().int().min(0).max(5).default(2),
    })
    .prefault({}),
  temporal: z
    .strictObject({
      address: z.string().min(1).default('127.0.0.1:7233'),
      namespace: z.string().min(1).default('default'),
      task_queue: z.string().min(1).default('klea'),
      /** Where people open the Temporal Web UI; used for links from the API and the web page. */
      ui_url: z.url().default('http://127.0.0.1:8233'),
      /** API key for Temporal Cloud (env TEMPORAL_API_KEY); turns TLS on. */
      api_key: z.string().min(1).nullable().default(null),
      tls: z
        .strictObject({
          enabled: z.boolean().default(false),
          /** Override of the server name checked in the server's certificate. */
          server_name: z.string().min(1).nullable().default(null),
          /** mTLS client certificate and key (PEM files), for Temporal Cloud with certificates or self-hosted mTLS. */
          client_cert_path: z.string().min(1).nullable().default(null),
          client_key_path: z.string().min(1).nullable().default(null),
          /** CA bundle for a self-hosted server with a private CA. */
          server_ca_path: z.string().min(1).nullable().default(null),
        })
        .prefault({}),
    })
    .prefault({}),
  worker: z
    .strictObject({
      /**
       * Runs kept in the worker's workflow cache (a parked task woken after eviction is replayed from history).
       * null: sized from the worker's heap by the Temporal SDK.
       */
      max_cached_workflows: z.number().int().min(0).nullable().default(null),
      /** Activities (model and tool calls) one worker runs at once. */
      max_concurrent_activities: z.number().int().positive().default(50),
      /** How long a run's next task waits for the worker that ran it before any worker takes it. */
      sticky_queue_timeout_ms: z.number().int().positive().default(5000),
    })
    .prefault({}),
  api: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8080),
      /** Bearer token for every route but /healthz (env KLEA_API_TOKEN). */
      token: z.string().min(16, 'must be at least 16 characters').nullable().default(null),
      /** Project directories a client may ask for must lie under one of these (default: project.dir). */
      allowed_project_roots: z.array(z.string().min(1)).default([]),
      max_body_bytes: z
        .number()
        .int()
        .positive()
        .default(256 * 1024),
    })
    .prefault({}),
  project: z
    .strictObject({
      /** Default project directory of new sessions (env KLEA_PROJECT_DIR). */
      dir: z.string().min(1).default('.'),
    })
    .prefault({}),
  general: z
    .strictObject({
      mode: ModeSchema.default('general'),
      tool_access: ToolAccessSchema.default('full'),
      review: ReviewPolicySchema.default('plan'),
      memory: z
        .strictObject({
          summarisation_threshold_chars: z.number().int().positive().default(40_000),
          num_history_chars: z.number().int().positive().default(20_000),
        })
        .prefault({}),
    })
    .prefault({}),
  tools: z
    .strictObject({
      /** Globs (relative to the project directory) of files treated as sensitive even inside the project. */
      sensitive_patterns: z.array(z.string().min(1)).default(DEFAULT_SENSITIVE_PATTERNS),
      /** Default per-call tool timeout. */
      call_timeout_ms: z.number().int().positive().default(60_000),
      /** Where tool outputs too large for prompts are kept in full (content-addressed, `<sha256>.txt`). */
      results_dir: z.string().min(1).default('.klea/results'),
    })
    .prefault({}),
  mcp: z
    .strictObject({
      /** The bundled workspace server, rooted at the session's project directory. */
      workspace: z
        .strictObject({
          enabled: z.boolean().default(true),
          /** Audit log: one JSON line per workspace tool call (tool, arguments, grants used, outcome). */
          call_log: z.string().min(1).nullable().default(null),
          /**
           * Intents and results of side-effecting calls by idempotency key, so a retried write or edit does not
           * act twice (env KLEA_WORKSPACE_STATE_DIR). Every worker that can take a retry must share it.
           */
          state_dir: z.string().min(1).default('.klea/workspace-state'),
        })
        .prefault({}),
      /** Further MCP servers, in the common `mcpServers` shape. */
      servers: z
        .record(
          z.string().regex(/^[A-Za-z0-9_-]+$/, 'server names may use letters, digits, _ and -'),
          McpServerConfigSchema
        )
        .default({}),
    })
    .prefault({}),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Environment variables that override the file (ARCHITECTURE §9). */
export const ENV_OVERRIDES: ReadonlyArray<{ env: string; path: readonly string[]; kind: 'string' | 'port' }> = [
  { env: 'OPENAI_API_KEY', path: ['model', 'api_key'], kind: 'string' },
  { env: 'OPENAI_BASE_URL', path: ['model', 'base_url'], kind: 'string' },
  { env: 'KLEA_MODEL', path: ['model', 'name'], kind: 'string' },
  { env: 'TEMPORAL_ADDRESS', path: ['temporal', 'address'], kind: 'string' },
  { env: 'TEMPORAL_NAMESPACE', path: ['temporal', 'namespace'], kind: 'string' },
  { env: 'KLEA_TASK_QUEUE', path: ['temporal', 'task_queue'], kind: 'string' },
  { env: 'KLEA_TEMPORAL_UI_URL', path: ['temporal', 'ui_url'], kind: 'string' },
  { env: 'TEMPORAL_API_KEY', path: ['temporal', 'api_key'], kind: 'string' },
  { env: 'KLEA_PROJECT_DIR', path: ['project', 'dir'], kind: 'string' },
  { env: 'KLEA_API_HOST', path: ['api', 'host'], kind: 'string' },
  { env: 'KLEA_API_PORT', path: ['api', 'port'], kind: 'port' },
  { env: 'KLEA_API_TOKEN', path: ['api', 'token'], kind: 'string' },
  { env: 'KLEA_WORKSPACE_STATE_DIR', path: ['mcp', 'workspace', 'state_dir'], kind: 'string' },
];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  return issue.message;
}

function issuePath(prefix: readonly PropertyKey[], issue: z.core.$ZodIssue): string {
  const parts = [...prefix, ...issue.path].map(String);
  return parts.length ? parts.join('.') : '(top level)';
}

/** One line per problem: `<source>: <key.path>: <what was expected>`. */
export function formatZodIssues(source: string, error: z.ZodError): string {
  return error.issues.map((i) => `${source}: ${issuePath([], i)}: ${describeIssue(i)}`).join('\n');
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
  if (!fromFile.success) throw new ConfigError(formatZodIssues(source, fromFile.error));

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
    merged[path[0]][path[1]] = value;
  }
  const final = ConfigSchema.safeParse(merged);
  if (!final.success) {
    const byEnv = new Map(ENV_OVERRIDES.map((o) => [o.path.join('.'), o.env]));
    throw new ConfigError(
      final.error.issues
        .map((i) => {
          const key = i.path.map(String).join('.');
          const envName = byEnv.get(key);
          return envName && env[envName]
            ? `environment: ${envName}: ${describeIssue(i)}`
            : `${source}: ${key}: ${describeIssue(i)}`;
        })
        .join('\n')
    );
  }
  return final.data;
}

/** True when a model endpoint is configured (a key, or a base URL for keyless local servers). */
export function isModelConfigured(config: Config): boolean {
  return Boolean(config.model.api_key || config.model.base_url);
}

export const MODEL_NOT_CONFIGURED_HINT =
  'set OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI endpoint), and KLEA_MODEL to choose the model';
