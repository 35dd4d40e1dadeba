/**
 * The `mcp:` section of `klea.yaml`: the bundled workspace server's settings, and further MCP servers in the shapes
 * other MCP clients write, so a Claude Code `.mcp.json`, a Cursor `mcp.json` or a VS Code `.vscode/mcp.json` pastes
 * under `mcp:` as it is. What a key does to the server Klea runs is honoured or refused by name; keys that only
 * drive an editor's own UI are accepted and ignored. Pure: the worker expands the `${...}` variables
 * (activities/mcp/servers.ts).
 */
import { z } from 'zod';
import { qualifiedToolName } from './tools';

/** A `${...}` reference in a server's settings, expanded by the worker when it starts or reaches the server. */
export type McpVariable =
  { kind: 'env'; name: string; fallback?: string } | { kind: 'workspaceFolder' } | { kind: 'userHome' };

export const MCP_VARIABLE = /\$\{([^}]*)\}/g;

/**
 * What `${body}` refers to, in the forms Claude Code (`${VAR}`, `${VAR:-default}`) and Cursor and VS Code
 * (`${env:VAR}`, `${workspaceFolder}`, `${userHome}`) write; or why Klea cannot expand it.
 */
export function parseMcpVariable(body: string): McpVariable | { unsupported: string } {
  if (body === 'workspaceFolder') return { kind: 'workspaceFolder' };
  if (body === 'userHome') return { kind: 'userHome' };
  const plain = /^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)$/.exec(body);
  if (plain) return { kind: 'env', name: plain[1] };
  const withDefault = /^([A-Za-z_][A-Za-z0-9_]*):-(.*)$/s.exec(body);
  if (withDefault) return { kind: 'env', name: withDefault[1], fallback: withDefault[2] };
  if (body.startsWith('input:')) {
    return {
      unsupported:
        `\${${body}} is a value VS Code prompts for, and a worker has nobody to ask: ` +
        'put it in an environment variable and write ${env:NAME}',
    };
  }
  return {
    unsupported:
      `\${${body}} is not a variable Klea expands ` +
      '(it knows ${NAME}, ${NAME:-default}, ${env:NAME}, ${workspaceFolder} and ${userHome})',
  };
}

function checkVariables(value: string, ctx: z.core.$RefinementCtx<string>): void {
  for (const m of value.matchAll(MCP_VARIABLE)) {
    const v = parseMcpVariable(m[1]);
    // Refused at load: no environment could make these expand later.
    if ('unsupported' in v) ctx.addIssue({ code: 'custom', message: v.unsupported, input: value });
  }
}

/** A setting that may hold `${...}` variables. */
const templated = (s: z.ZodString) => s.superRefine(checkVariables);

const httpUrl = z.url({ protocol: /^https?$/ });
/** Checked again after expansion when it holds variables (`${API_BASE:-https://api.example.com}/mcp`). */
const McpUrlSchema = z.string().superRefine((url, ctx) => {
  if (url.includes('${')) checkVariables(url, ctx);
  else if (!httpUrl.safeParse(url).success)
    ctx.addIssue({ code: 'custom', message: 'expected an http(s) URL', input: url });
});

const MCP_TYPES = ['stdio', 'http', 'streamable-http', 'sse'] as const;

/** Keys an editor writes for its own use: they change nothing about the server Klea runs. */
const editorOnlyKeys = {
  /** VS Code: watch-and-restart and debugger settings for developing a server. */
  dev: z.unknown().optional(),
  /** VS Code: the gallery a server was installed from, and its version there. */
  gallery: z.unknown().optional(),
  version: z.unknown().optional(),
  /** VS Code: sandbox rules, inert unless `sandboxEnabled` is true. */
  sandbox: z.unknown().optional(),
  // Security: a file that asks for a sandbox must not get an unconfined server instead.
  sandboxEnabled: z
    .literal(false, {
      error:
        'Klea does not sandbox the MCP servers it starts, so it will not run this one unconfined: ' +
        'remove the key, or run the worker itself in a container',
    })
    .optional(),
};

const NO_OAUTH = 'Klea does not sign in to MCP servers with OAuth: send a token in headers ("Bearer ${env:TOKEN}")';
/** Ways of signing in that Klea has no part of: refused, so a server is not reached without its credentials. */
const signInKeys = {
  oauth: z.never({ error: NO_OAUTH }).optional(),
  auth: z.never({ error: NO_OAUTH }).optional(),
  headersHelper: z
    .never({ error: 'Klea does not run header helper commands: put the header values in headers, ${VAR} for secrets' })
    .optional(),
};

const McpStdioServerSchema = z.strictObject({
  type: z.literal('stdio'),
  command: templated(
    z
      .string({
        error: (iss) =>
          iss.input === undefined
            ? 'missing: a server needs command (a program to start) or url (a remote server)'
            : undefined,
      })
      .min(1)
  ),
  args: z.array(templated(z.string())).default([]),
  env: z.record(z.string(), templated(z.string())).default({}),
  /** A dotenv file of more variables for the server (VS Code, Cursor); `env` wins over it. */
  envFile: templated(z.string().min(1)).optional(),
  cwd: templated(z.string().min(1)).optional(),
  /** Per-call timeout for this server's tools. */
  timeout_ms: z.number().int().positive().optional(),
  disabled: z.boolean().default(false),
  ...editorOnlyKeys,
});

const remoteServerKeys = {
  url: McpUrlSchema,
  headers: z.record(z.string(), templated(z.string())).default({}),
  timeout_ms: z.number().int().positive().optional(),
  disabled: z.boolean().default(false),
  ...editorOnlyKeys,
  ...signInKeys,
};

const McpHttpServerSchema = z.strictObject({ type: z.enum(['http', 'streamable-http']), ...remoteServerKeys });
const McpSseServerSchema = z.strictObject({ type: z.literal('sse'), ...remoteServerKeys });
/** A `url` without `type`, as Cursor writes it: streamable HTTP, or HTTP+SSE for a server that only speaks that. */
const McpUrlServerSchema = z.strictObject({ type: z.undefined().optional(), ...remoteServerKeys });

/** Every client lets a local server leave `type` out; a `url` without it stays untyped (see McpUrlServerSchema). */
function withStdioType(raw: unknown): unknown {
  if (raw && typeof raw === 'object' && !Array.isArray(raw) && !('type' in raw) && !('url' in raw)) {
    return { ...raw, type: 'stdio' };
  }
  return raw;
}

export const McpServerConfigSchema = z.preprocess(
  withStdioType,
  z.discriminatedUnion('type', [McpStdioServerSchema, McpHttpServerSchema, McpSseServerSchema, McpUrlServerSchema], {
    error: (iss) =>
      iss.code === 'invalid_union'
        ? `expected one of ${MCP_TYPES.map((t) => `"${t}"`).join(', ')} (or no type: command means stdio, url means streamable HTTP)`
        : undefined,
  })
);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

const RESERVED_SERVER_NAME = 'workspace';
/** Any name another client accepts (VS Code's gallery writes `io.github.github/github-mcp-server`). */
const McpServerNameSchema = z
  .string()
  .min(1)
  // Function names offered to the model are `<server>__<tool>`, cut at 64 characters: leave room for the tool.
  .max(48, 'at most 48 characters')
  .refine((n) => n.trim() === n && !/\p{Cc}/u.test(n), 'no leading or trailing spaces, no control characters')
  // Security: the model would take `Workspace__read_file` for the bundled server's read_file.
  .refine(
    (n) => qualifiedToolName(n, '').toLowerCase() !== qualifiedToolName(RESERVED_SERVER_NAME, ''),
    'that is (in any letter case) the bundled server, configured under mcp.workspace'
  )
  // The model sees `<server>__<tool>`: a name holding "__" would let one server's tools pass for another's.
  .refine(
    (n) => !qualifiedToolName(n, '').slice(0, -2).includes('__'),
    'no two underscores in a row (nor characters that become them): the model sees <server>__<tool>'
  );

const McpServersSchema = z.record(McpServerNameSchema, McpServerConfigSchema);

export const McpConfigSchema = z
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
        state_dir: z.string().min(1).default('workspace-state'),
      })
      .prefault({}),
    /** Further MCP servers, by name (the key Klea and VS Code use). */
    servers: McpServersSchema.default({}),
    /** The same, under the key Claude Code and Cursor use; merged with `servers`. */
    mcpServers: McpServersSchema.optional(),
    /** VS Code's prompt definitions: accepted so a pasted file loads; a `${input:...}` reference is refused. */
    inputs: z.array(z.unknown()).optional(),
  })
  .transform(({ mcpServers = {}, inputs: _inputs, ...mcp }, ctx) => {
    const servers = { ...mcp.servers };
    for (const [name, server] of Object.entries(mcpServers)) {
      if (name in servers) {
        ctx.addIssue({ code: 'custom', path: ['mcpServers', name], message: 'also defined under mcp.servers' });
      }
      servers[name] = server;
    }
    // Two names the model would see as one function prefix would make its calls ambiguous.
    const byPrefix = new Map<string, string>([[qualifiedToolName(RESERVED_SERVER_NAME, ''), RESERVED_SERVER_NAME]]);
    for (const name of Object.keys(servers)) {
      const prefix = qualifiedToolName(name, '').toLowerCase();
      const other = byPrefix.get(prefix);
      if (other !== undefined && other !== name) {
        const where = name in mcp.servers ? 'servers' : 'mcpServers';
        ctx.addIssue({
          code: 'custom',
          path: [where, name],
          message: `the model would see this server's tools under the same name as "${other}"'s (${prefix}...)`,
        });
      }
      byPrefix.set(prefix, name);
    }
    return { ...mcp, servers };
  })
  .prefault({});
