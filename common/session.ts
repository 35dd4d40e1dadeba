/** The session workflow's input, state and message payloads (docs/architecture.md §3, §6). */
import { z } from 'zod';
import { ModeSchema, NetworkSchema, ReviewPolicySchema, ToolAccessSchema } from './settings';
import type { KleaEvent } from './events';
import { CallUsageSchema, type CallUsage, type ModelUsage } from './model-protocol';
import { SandboxStatusSchema } from './sandbox-status';
import { HeldGrantSchema, TaskRunLinkSchema, TurnSchema, type HeldGrant, type TaskRunLink, type Turn } from './task';
import { HomeSchema } from './home';

export type { Turn };

/** What `summarizeMemoryWorkflow` (and its `summarize_memory` node) folds: the running summary and older turns. */
export interface SummarizeInput {
  summary: string;
  turns: Turn[];
}

/** The new running summary, how many characters it folded in, and the summariser's model call. */
export interface SummarizeResult {
  summary: string;
  foldedChars: number;
  usage: ModelUsage;
}

export const MemorySettingsSchema = z.strictObject({
  summarisationThresholdChars: z.number().int().positive(),
  numHistoryChars: z.number().int().positive(),
});
export type MemorySettings = z.infer<typeof MemorySettingsSchema>;

export const QueuedMessageSchema = z.strictObject({
  seq: z.number().int(),
  kind: z.enum(['message', 'task', 'command']),
  text: z.string(),
  mode: ModeSchema.optional(),
  toolAccess: ToolAccessSchema.optional(),
  review: ReviewPolicySchema.optional(),
  /** Filled once routed: where the message goes. */
  route: z.enum(['chat', 'task', 'command']).optional(),
  reply: z.string().optional(),
  /** The routing call that wrote `reply` (for the answer event's usage). */
  replyUsage: CallUsageSchema.optional(),
  taskId: z.string().optional(),
});
export type QueuedMessage = z.infer<typeof QueuedMessageSchema>;

/** What a session carries across continue-as-new: everything. */
export const SessionCarrySchema = z.strictObject({
  mode: ModeSchema,
  toolAccess: ToolAccessSchema,
  network: NetworkSchema,
  review: ReviewPolicySchema,
  /** The grants held, each with its id and expiry. */
  grants: z.array(HeldGrantSchema),
  /** The number of the last grant made (grant ids are `g<n>`). */
  grantCounter: z.number().int(),
  summary: z.string(),
  turns: z.array(TurnSchema),
  summarisedChars: z.number().int(),
  queue: z.array(QueuedMessageSchema),
  taskCounter: z.number().int(),
  messageSeq: z.number().int(),
  tasks: z.array(z.string()),
  lastSeq: z.number().int(),
  recentEvents: z.array(z.looseObject({ seq: z.number().int(), type: z.string() })),
  contextFile: z.string().nullable(),
  sandbox: z.object({ status: SandboxStatusSchema, note: z.string().nullable() }).optional(),
  usage: CallUsageSchema.optional(),
  runs: z.number().int(),
  /** When the session was last active (KleaLastActivity). */
  lastActivityAt: z.string(),
  /**
   * The session's earlier runs (continued as new, or gone to sleep), oldest first, each with the seqs its events
   * hold: a reader further behind than the carried events reads the rest there.
   */
  earlierRuns: z.array(TaskRunLinkSchema),
});
export type SessionCarry = z.infer<typeof SessionCarrySchema>;

export const SessionInputSchema = z.strictObject({
  sessionId: z.string().min(1),
  projectDir: z.string().min(1),
  mode: ModeSchema.default('general'),
  toolAccess: ToolAccessSchema.default('full'),
  network: NetworkSchema.default('off'),
  review: ReviewPolicySchema.default('plan'),
  memory: MemorySettingsSchema.default({ summarisationThresholdChars: 40_000, numHistoryChars: 20_000 }),
  /** How long routing a message may take, retries included, before it is answered with the error. */
  routeTimeoutMs: z.number().int().positive().default(60_000),
  /** Each task's token budget (model.max_tokens_per_task); null: none. */
  maxTokensPerTask: z.number().int().positive().nullable().default(null),
  /** Tool calls a step of each task may make in sequence (limits.max_calls_per_step). */
  maxCallsPerStep: z.number().int().min(1).max(50).default(6),
  /** History events after which each task continues as new (task.continue_as_new_after_events). */
  taskContinueAsNewAfterEvents: z.number().int().min(100).max(40_000).default(8_000),
  /** Continue-as-new after this many processed messages even if Temporal has not suggested it yet. */
  continueAsNewAfter: z.number().int().positive().default(200),
  /** An idle session (no task, nothing queued or being routed) completes after this long (session.idle_close_ms). */
  idleCloseMs: z.number().int().positive().default(3_600_000),
  /** How long a grant made for the session holds (permissions.session_grant_ttl_ms). */
  grantTtlMs: z.number().int().positive().default(86_400_000),
  carry: SessionCarrySchema.optional(),
  /**
   * This run wakes the session whose run `wakeFrom` went to sleep; `carry` is that run's result. Its grants are
   * not taken from the input but read again from that run by the worker (see `sessionWorkflow`).
   */
  wakeFrom: z.string().min(1).optional(),
  /** On a cluster: the worker host that holds the project, chosen when the session starts (common/home.ts). */
  home: HomeSchema.optional(),
});
export type SessionInput = z.input<typeof SessionInputSchema>;

/** What a session that went to sleep returns: all it carries, so the next message can wake it as it was. */
export const SessionSleepSchema = z.strictObject({
  sessionId: z.string(),
  status: z.literal('sleeping'),
  projectDir: z.string(),
  sleptAt: z.string(),
  carry: SessionCarrySchema,
  /** The session's home on a cluster: it wakes with the same one. */
  home: HomeSchema.optional(),
});
export type SessionSleep = z.infer<typeof SessionSleepSchema>;

/** `revokeGrant` update: the grant to drop (its id from the session's state). */
export const RevokeGrantRequestSchema = z.strictObject({ grantId: HeldGrantSchema.shape.id });
export type RevokeGrantRequest = z.infer<typeof RevokeGrantRequestSchema>;

export const SubmitRequestSchema = z.strictObject({
  text: z.string().trim().min(1, 'must not be empty').max(100_000),
  mode: ModeSchema.optional(),
});
export type SubmitRequest = z.infer<typeof SubmitRequestSchema>;

export const SubmitResultSchema = z.object({
  kind: z.enum(['chat', 'task', 'command']),
  taskId: z.string().optional(),
  reply: z.string().optional(),
  queued: z.boolean().optional().describe('the session is busy: the reply or the task comes after what is ahead of it'),
});
export type SubmitResult = z.infer<typeof SubmitResultSchema>;

export const StartTaskRequestSchema = z.strictObject({
  prompt: z.string().trim().min(1, 'must not be empty').max(100_000),
  mode: ModeSchema.optional(),
  toolAccess: ToolAccessSchema.optional(),
  review: ReviewPolicySchema.optional(),
});
export type StartTaskRequest = z.infer<typeof StartTaskRequestSchema>;

export const SettingsSchema = z.strictObject({
  mode: ModeSchema.optional(),
  toolAccess: ToolAccessSchema.optional(),
  network: NetworkSchema.optional(),
});
export type SessionSettings = z.infer<typeof SettingsSchema>;

export interface CommandInfo {
  name: string;
  usage: string;
  description: string;
  /** `client`: the page runs it itself; `graph`: the session workflow runs it (it may use the model). */
  runs: 'client' | 'graph';
}

export const COMMANDS: readonly CommandInfo[] = [
  { name: '/help', usage: '/help', description: 'list the commands', runs: 'client' },
  {
    name: '/mode',
    usage: '/mode general|scientific',
    description: 'set the operating mode of this session',
    runs: 'graph',
  },
  {
    name: '/compact',
    usage: '/compact',
    description: 'fold older conversation into the running summary now',
    runs: 'graph',
  },
  {
    name: '/init',
    usage: '/init',
    description: 'look at the project and write AGENTS.md (project guidance)',
    runs: 'graph',
  },
];

export interface SessionState {
  sessionId: string;
  projectDir: string;
  mode: z.infer<typeof ModeSchema>;
  toolAccess: z.infer<typeof ToolAccessSchema>;
  network: z.infer<typeof NetworkSchema>;
  review: z.infer<typeof ReviewPolicySchema>;
  /** `sleeping`: the session's run completed while idle; its next message, setting or command wakes it. */
  status: 'running' | 'sleeping';
  grants: HeldGrant[];
  memory: { summary: string; turns: Turn[]; summarisedChars: number; settings: MemorySettings };
  projectContextFile: string | null;
  currentTaskId: string | null;
  tasks: string[];
  queue: Array<Pick<QueuedMessage, 'seq' | 'kind' | 'text' | 'route' | 'taskId'>>;
  commands: readonly CommandInfo[];
  /** Every model call of the session: routing, summaries, /init and its tasks' calls. */
  usage: CallUsage;
  lastSeq: number;
  /** The session's earlier runs, oldest first, with the seqs of the events each holds (the newest 1000). */
  earlierRuns: TaskRunLink[];
  /** On a cluster: the worker host that holds the session's project. */
  home?: { hostId: string } | { groupId: string } | null;
}

export type SessionEvent = KleaEvent;
