/**
 * Tools as Klea sees them: descriptors of MCP tools, the access-level policy and the retry policy that follows
 * a tool's annotations. Pure: used by activities (listing, dispatch) and workflows (what to offer, how to retry).
 */
import type { ToolAccess } from './config';

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolDescriptor {
  server: string;
  name: string;
  /** The function name offered to the model: `<server>__<tool>`. */
  qualifiedName: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
  /** Only an explicit `readOnlyHint: true` makes a tool read-only; a missing hint means it writes. */
  readOnly: boolean;
  /** Read-only tools are idempotent; others only with an explicit `idempotentHint: true`. */
  idempotent: boolean;
}

/** A tool call the picker bound for a step: the tool, its arguments, and the annotations that set its retry policy. */
export interface PickedCall {
  stepId: string;
  server: string;
  tool: string;
  qualifiedName: string;
  args: Record<string, unknown>;
  readOnly: boolean;
  idempotent: boolean;
  /**
   * False when the picker left the step open after this call: it wants to see the call's result and call again.
   * Absent (or true): the step is complete after the calls of this pick (docs/architecture.md §7).
   */
  stepDone?: boolean;
}

const FN_CHARS = /[^A-Za-z0-9_-]/g;

export const qualifiedToolName = (server: string, tool: string) =>
  `${server}__${tool}`.replace(FN_CHARS, '_').slice(0, 64);

export function describeTool(
  server: string,
  tool: { name: string; description?: string; inputSchema: unknown; annotations?: ToolAnnotations }
): ToolDescriptor {
  const annotations = tool.annotations ?? {};
  const readOnly = annotations.readOnlyHint === true;
  return {
    server,
    name: tool.name,
    qualifiedName: qualifiedToolName(server, tool.name),
    description: tool.description ?? '',
    inputSchema: (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
    annotations,
    readOnly,
    idempotent: readOnly || annotations.idempotentHint === true,
  };
}

/**
 * The tools as the model may be offered them: a tool whose function name is, in any letter case, the name of one
 * listed before it (the bundled server's tools come first) is left out, so no server's tool can stand in for a
 * built-in one, or for another server's. Returns what was left out, and by which tool.
 */
export function withoutShadowed(all: readonly ToolDescriptor[]): {
  tools: ToolDescriptor[];
  shadowed: Array<{ server: string; tool: string; by: string }>;
} {
  const seen = new Map<string, ToolDescriptor>();
  const tools: ToolDescriptor[] = [];
  const shadowed: Array<{ server: string; tool: string; by: string }> = [];
  for (const t of all) {
    const key = t.qualifiedName.toLowerCase();
    const first = seen.get(key);
    if (first) shadowed.push({ server: t.server, tool: t.name, by: first.qualifiedName });
    else {
      seen.set(key, t);
      tools.push(t);
    }
  }
  return { tools, shadowed };
}

/** What the model may be offered under an access level. */
export function offeredTools(all: readonly ToolDescriptor[], access: ToolAccess): ToolDescriptor[] {
  return access === 'read_only' ? all.filter((t) => t.readOnly) : [...all];
}

/** Why a call must be refused at dispatch under the access level, or null when it may run. */
export function accessRefusal(tool: ToolDescriptor | undefined, access: ToolAccess, requested: string): string | null {
  if (!tool) return `no tool named ${requested} is available`;
  // Security: the model may name a tool it was not offered; the level is enforced here, not only in the offer.
  if (access === 'read_only' && !tool.readOnly) {
    return `refused by policy: tool access is read_only and ${tool.server}__${tool.name} is not a read-only tool`;
  }
  return null;
}

export interface ToolRetryPolicy {
  maximumAttempts: number;
  initialInterval: string;
  backoffCoefficient: number;
}

/**
 * Read-only or idempotent tools are retried on transport failure; anything else is attempted once, and its
 * failure goes to triage (a second attempt could repeat a side effect).
 */
export function toolRetryPolicy(
  tool: Pick<ToolDescriptor, 'idempotent'> & { server?: string; name?: string; tool?: string }
): ToolRetryPolicy {
  return tool.idempotent || replaySafe(tool)
    ? { maximumAttempts: 4, initialInterval: '1s', backoffCoefficient: 2 }
    : { maximumAttempts: 1, initialInterval: '1s', backoffCoefficient: 2 };
}

/**
 * The workspace server records the result of a write or an edit under the call's idempotency key, so retrying
 * one after a crash returns the recorded result instead of editing twice. A command is not retried: it may have
 * been killed half-way, and running it again is the model's call to make.
 */
export function replaySafe(tool: { server?: string; name?: string; tool?: string }): boolean {
  const name = tool.tool ?? tool.name;
  return tool.server === 'workspace' && (name === 'write_file' || name === 'edit_file');
}

export type ToolCallStatus = 'ok' | 'error' | 'refused';

export interface ToolCallResult {
  status: ToolCallStatus;
  /** The text a model reads (cut at a cap, with a marker). */
  text: string;
  structured?: Record<string, unknown>;
  truncated: boolean;
  /** Bytes of the full text before cutting. */
  bytes: number;
  /** When cut: where the full output is kept (`sha256:<hex>`, a file in `tools.results_dir`). */
  ref?: string;
  /** For a workspace command: the project files it created, changed or deleted (paths relative to the project). */
  changed?: string[];
}
