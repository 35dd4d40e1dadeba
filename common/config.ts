/**
 * Klea's configuration: the schema of `klea.yaml` and its defaults. Pure (no file or env access):
 * `runtime/config.ts` reads the file and the environment and hands both to `resolveConfig` (config-resolve.ts, with
 * the environment overrides of docs/architecture.md §9). The default path patterns are in path-patterns.ts; the
 * `mcp:` section, written the way other MCP clients write theirs, is in mcp-config.ts.
 */
import { z } from 'zod';
import { DEFAULT_GROUP_LEASE_MS, DEFAULT_HOST_WAIT_MS, GroupIdSchema, HostIdSchema } from './home';
import { McpConfigSchema } from './mcp-config';
import { NetworkAllowSchema } from './network-allow';
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_SENSITIVE_PATTERNS } from './path-patterns';
import {
  ModeSchema,
  NetworkSchema,
  ReviewPolicySchema,
  ToolAccessSchema,
  type Mode,
  type Network,
  type ReviewPolicy,
  type ToolAccess,
} from './settings';
import { parsePayloadKeys } from './payload-keys';
import type { NodeName } from './model-protocol';

export { ModeSchema, NetworkSchema, ReviewPolicySchema, ToolAccessSchema };
export type { Mode, Network, ReviewPolicy, ToolAccess };

export const StructuredOutputSchema = z.enum(['auto', 'tool_calling', 'json_schema']);
export type StructuredOutput = z.infer<typeof StructuredOutputSchema>;

/** What the model can do (docs/models.md): `small` turns on the help of activities/llm/small-model.ts. */
export const ModelProfileSchema = z.enum(['standard', 'small']);
export type ModelProfile = z.infer<typeof ModelProfileSchema>;

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
      /**
       * How structured nodes get JSON out of the endpoint (env KLEA_STRUCTURED_OUTPUT): `tool_calling` forces a
       * function, `json_schema` asks through `response_format`, `auto` starts with tool calling and moves to
       * json_schema for a server that ignores or refuses a forced function.
       */
      structured_output: StructuredOutputSchema.default('auto'),
      /**
       * What the model can do (env KLEA_MODEL_PROFILE): `standard` (the default) offers every tool as it is and takes
       * the model's calls as made; `small` adds the help a model of a few billion parameters or less needs
       * (docs/models.md). A protocol choice (`structured_output`) never switches it.
       */
      profile: ModelProfileSchema.default('standard'),
      /**
       * How long routing a message (chat or task) may take, the model's retries included (env
       * KLEA_ROUTE_TIMEOUT_MS); then the message is answered with the error instead of waiting on.
       */
      route_timeout_ms: z.number().int().positive().default(60_000),
      /**
       * Tokens (input + output) a task may use before it pauses with a review of reason `budget` (env
       * KLEA_MAX_TOKENS_PER_TASK); approving raises it by the same amount again. Null (the default): no budget.
       */
      max_tokens_per_task: z.number().int().positive().nullable().default(null),
      /**
       * Most tokens one answer may have, sent as `max_tokens` with every request (env KLEA_MAX_OUTPUT_TOKENS). Null
       * (the default): under the `small` profile `SMALL_MAX_OUTPUT_TOKENS` (`SMALL_PLAN_OUTPUT_TOKENS` for a plan),
       * none under `standard` (the server's own limit). See `outputLimit`.
       */
      max_output_tokens: z.number().int().positive().nullable().default(null),
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
      /**
       * AES-256-GCM keys for every payload Klea puts in Temporal (env KLEA_PAYLOAD_KEY): `<keyId>:<base64>`,
       * comma-separated, the first encrypting and all decrypting (common/payload-keys.ts). Null: payloads are
       * stored as plain JSON.
       */
      payload_key: z
        .string()
        .nullable()
        .default(null)
        .superRefine((value, ctx) => {
          const parsed = value === null ? null : parsePayloadKeys(value);
          // Security: the issue carries no input, so no message or log can quote the key.
          if (parsed && 'problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem, input: '' });
        }),
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
      /**
       * host:port where the worker serves Prometheus metrics at /metrics, Klea's and the Temporal SDK's (env
       * KLEA_WORKER_METRICS_ADDRESS, e.g. 127.0.0.1:9464); null: not served, nothing listens.
       */
      metrics_address: z.string().min(1).nullable().default(null),
      /**
       * The worker host this worker stands for on a cluster (env KLEA_HOST_ID): it also polls the task queue
       * `klea-host-<id>`, where the activities of the projects it holds run (common/home.ts). null: one machine.
       */
      host_id: HostIdSchema.nullable().default(null),
      /**
       * How long an activity for a project's host waits to be taken before its task says `waiting_for_host` (env
       * KLEA_HOST_WAIT_MS; the API hands it to each session it starts with a home).
       */
      host_wait_ms: z.number().int().min(100).max(3_600_000).default(DEFAULT_HOST_WAIT_MS),
      /**
       * The group of hosts this host shares its projects with, on a volume they all reach at the same paths (env
       * KLEA_GROUP_ID): it also polls `klea-group-<id>`, and changes a project only while it holds the project's
       * lease (activities/project/lease.ts). Needs host_id and group_dir. null: its projects are its own.
       */
      group_id: GroupIdSchema.nullable().default(null),
      /**
       * The group's own directory on the shared volume (env KLEA_GROUP_DIR): the projects' leases, checkpoints,
       * workspace state and tool results, which every host of the group reads and writes. Outside every project.
       */
      group_dir: z.string().min(1).nullable().default(null),
      /**
       * How long a host's lease on a group project lasts without being renewed (env KLEA_GROUP_LEASE_MS): a host
       * that is gone or cut off gives the project up within it, and another host of the group takes it after it.
       */
      group_lease_ms: z.number().int().min(1_000).max(600_000).default(DEFAULT_GROUP_LEASE_MS),
    })
    .prefault({}),
  api: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8080),
      /** Bearer token for every route but /healthz (env KLEA_API_TOKEN). */
      token: z.string().min(16, 'must be at least 16 characters').nullable().default(null),
      /**
       * Host names (or host:port) the API answers besides loopback names (env KLEA_API_ALLOWED_HOSTS, comma
       * separated); a request for any other Host gets 403, so a DNS name rebound to this machine gets nothing.
       */
      allowed_hosts: z.array(z.string().min(1)).default([]),
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
      /**
       * Every session's and task's project directory must resolve, symlinks included, under one of these (empty:
       * `dir` only). The API refuses others with 400, and the worker checks again, so a workflow started some other
       * way (the Temporal CLI) with another directory ends at once without running a tool.
       */
      allowed_roots: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  limits: z
    .strictObject({
      /**
       * Tool calls one step may make in sequence (env KLEA_MAX_CALLS_PER_STEP): a step's pick may leave it open
       * (`step_done: false`) to see what its calls returned and call again, until it says the step is complete
       * or this many calls are spent.
       */
      max_calls_per_step: z.number().int().min(1).max(50).default(6),
    })
    .prefault({}),
  session: z
    .strictObject({
      /**
       * A session with no task, nothing queued and nothing being routed for this long goes to sleep (env
       * KLEA_SESSION_IDLE_CLOSE_MS): its workflow completes with everything it holds, and its next message,
       * setting or command wakes it as it was.
       */
      idle_close_ms: z.number().int().positive().default(3_600_000),
    })
    .prefault({}),
  permissions: z
    .strictObject({
      /** How long a path allowed for the session holds; a lapsed grant is asked about again. */
      session_grant_ttl_ms: z.number().int().positive().default(86_400_000),
    })
    .prefault({}),
  task: z
    .strictObject({
      /**
       * History events after which a task hands its state to a fresh run of the same workflow (continue-as-new,
       * env KLEA_TASK_CONTINUE_AS_NEW_AFTER_EVENTS), between rounds of steps; it also does so whenever Temporal
       * suggests it. Keeps a long task far from Temporal's history limits (50,000 events / 50 MB).
       */
      continue_as_new_after_events: z.number().int().min(100).max(40_000).default(8_000),
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
      /**
       * Globs (relative to the project directory) of files that host tools run or load later (git hooks and config,
       * editor settings, `.envrc`): read-only to commands, and write_file / edit_file ask first.
       */
      protected_patterns: z.array(z.string().min(1)).default(DEFAULT_PROTECTED_PATTERNS),
      /** The largest file a tool may write, in MiB: write_file refuses more, a command's write past it fails (EFBIG). */
      max_file_mb: z.number().int().min(1).max(1_048_576).default(1024),
      /** Default per-call tool timeout. */
      call_timeout_ms: z.number().int().positive().default(60_000),
      /**
       * Where tool outputs too large for prompts are kept in full (content-addressed, `<sha256>.txt`); a relative
       * path is under Klea's data directory (KLEA_DATA_DIR, runtime/data-dir.ts).
       */
      results_dir: z.string().min(1).default('results'),
      /**
       * Checkpoints of the project (tools/checkpoints): what each step's writes, edits and commands changed, kept in
       * Klea's data directory so a task's changes can be undone.
       */
      checkpoints: z
        .strictObject({
          /** The most the store may hold, in MiB: past it the oldest tasks' checkpoints go first. */
          max_mb: z.number().int().min(1).max(1_048_576).default(1024),
        })
        .prefault({}),
      /** The command sandbox every run_command runs in. */
      sandbox: z
        .strictObject({
          /** `bwrap` (bubblewrap; commands are refused where it cannot run) or `none` (commands run unsandboxed). */
          mode: z.enum(['bwrap', 'none']).default('bwrap'),
          /** The network a command may reach by default (a session can change it): `off` is none at all. */
          network: NetworkSchema.default('off'),
          /**
           * With the network on, the only host names a command may reach (`name`, or `*.name` for its subdomains);
           * absent, any public address. Loopback, private and link-local addresses are refused either way.
           */
          network_allow: NetworkAllowSchema.optional(),
          /** The bubblewrap program (env KLEA_BWRAP). */
          bwrap_path: z.string().min(1).default('/usr/bin/bwrap'),
          /** Most processes one command may run at once. */
          max_processes: z.number().int().min(8).max(100_000).default(256),
          /**
           * Address-space cap per process of a command, in MiB; also what its scratch space (/tmp, /dev/shm and
           * HOME, all in memory) holds together.
           */
          memory_mb: z.number().int().min(64).max(1_048_576).default(4096),
          /**
           * Most entries (files and directories) looked through, per command, for the sensitive files to hide; a
           * project (or granted directory) with more is refused rather than run with a secret visible.
           */
          scan_limit: z.number().int().min(100).max(100_000_000).default(200_000),
          /**
           * Toolchain directories outside the system's that commands may read and run programs from (`~/.pyenv`,
           * `~/.nvm`, `~/.cargo`: the sandbox hides the home they are in): each bound read-only at its own path, and
           * the worker's PATH entries inside them put before the system's. Absolute, or `~/…`; never the home
           * itself or a folder above it, a credential folder (`~/.ssh`, `~/.config`, …) or the project.
           */
          tool_dirs: z
            .array(
              z
                .string()
                .min(1)
                .max(4096)
                .refine((d) => d.startsWith('/') || d === '~' || d.startsWith('~/'), {
                  message: 'must be an absolute path, or start with ~/',
                })
            )
            .max(32)
            .default([]),
        })
        .prefault({}),
    })
    .prefault({}),
  mcp: McpConfigSchema,
});

export type Config = z.infer<typeof ConfigSchema>;

/**
 * A small model answers with at most this many tokens unless `model.max_output_tokens` says otherwise: at
 * temperature 0 it may repeat one line until its context is full, which on a server with no limit of its own (llama.cpp's
 * and Ollama's default) takes minutes and runs past `model.timeout_ms`; cut at the limit, the answer is asked for
 * again, shorter (docs/models.md). 512 tokens take the 1.5B model about 45 s on two cores.
 */
export const SMALL_MAX_OUTPUT_TOKENS = 512;

/**
 * A small model's plan may run to this many tokens (`model.max_output_tokens` unset): a plan of several steps, each
 * with its instruction, is the longest answer a node validly gives, and its schema bounds each part. Cut at 512
 * tokens, plans that ended within 60 more (521, 522, 568, 571 tokens with the 0.5B and 1.5B models) were asked for
 * again, which took the 1.5B model another 25 s or more.
 */
export const SMALL_PLAN_OUTPUT_TOKENS = 768;

/**
 * The `max_tokens` a request of `node` carries, or undefined for none: `model.max_output_tokens` when set, else the
 * small profile's limits (`SMALL_PLAN_OUTPUT_TOKENS` for a plan, `SMALL_MAX_OUTPUT_TOKENS` for any other node).
 */
export function outputLimit(
  model: Pick<Config['model'], 'max_output_tokens' | 'profile'>,
  node?: NodeName
): number | undefined {
  if (model.max_output_tokens != null) return model.max_output_tokens;
  if (model.profile !== 'small') return undefined;
  return node === 'write_plan' ? SMALL_PLAN_OUTPUT_TOKENS : SMALL_MAX_OUTPUT_TOKENS;
}

/** True when a model endpoint is configured (a key, or a base URL for keyless local servers). */
export function isModelConfigured(config: Config): boolean {
  return Boolean(config.model.api_key || config.model.base_url);
}

export const MODEL_NOT_CONFIGURED_HINT =
  'set OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI endpoint), and KLEA_MODEL to choose the model';
