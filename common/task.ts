/** The task workflow's input, result, state (the `state` query) and message payloads, shared by every layer. */
import { z } from 'zod';
import { ModeSchema, NetworkSchema, ReviewPolicySchema, ToolAccessSchema } from './settings';
import { GrantSchema, PathOpSchema, type Grant } from './path-guard';
import { CallUsageSchema } from './model-protocol';
import { PlanShape, PlanStepSchema } from './plan';
import { PlanDiffSchema } from './plan-diff';
import { TaskStatusSchema } from './status';
import { TaskRoundSchema } from './rewind';
import { FileChangeSchema } from './text-diff';
import { HomeSchema } from './home';

// The workflows know path-guard's grant by these names (a session's grants are ordinary grants).
export { GrantSchema };
export type SessionGrant = Grant;

/**
 * A grant as the session holds it: numbered (for `DELETE /sessions/:id/grants/:grantId`), with when it was made and
 * when it lapses (`permissions.session_grant_ttl_ms`). A task is handed the live ones as plain grants.
 */
export const HeldGrantSchema = z.strictObject({
  id: z.string().regex(/^g[1-9][0-9]*$/),
  path: z.string().min(1),
  op: PathOpSchema,
  grantedAt: z.string(),
  expiresAt: z.string(),
});
export type HeldGrant = z.infer<typeof HeldGrantSchema>;

/**
 * A grant as a running task holds it: the session's grants come with their id and expiry, so the task drops one the
 * moment it lapses or the session tells it of a revocation; a grant the task made itself carries the expiry the
 * task gave it. A grant with no expiry (given in the input of a task started without a session) holds for the task.
 */
export const TaskGrantSchema = z.strictObject({
  path: z.string().min(1),
  op: PathOpSchema,
  id: HeldGrantSchema.shape.id.optional(),
  expiresAt: z.string().optional(),
});
export type TaskGrant = z.infer<typeof TaskGrantSchema>;

/** `grantRevoked` signal (session → its running task): the grant the user revoked for the session. */
export const GrantRevokedSchema = z.strictObject({
  grantId: HeldGrantSchema.shape.id,
  path: z.string().min(1),
  op: PathOpSchema,
});
export type GrantRevoked = z.infer<typeof GrantRevokedSchema>;

export const TurnSchema = z.strictObject({ role: z.enum(['user', 'assistant']), text: z.string() });
export type Turn = z.infer<typeof TurnSchema>;

export const TaskInputSchema = z.strictObject({
  taskId: z.string().min(1),
  sessionId: z.string().min(1),
  prompt: z.string().min(1),
  projectDir: z.string().min(1),
  mode: ModeSchema,
  toolAccess: ToolAccessSchema,
  /** Whether its commands may reach the network (the session's setting). */
  network: NetworkSchema.default('off'),
  review: ReviewPolicySchema.default('plan'),
  /** Route the request first (a standalone task); a session routes before it starts a task. */
  route: z.boolean().default(true),
  /** Grants the session already holds (allow_session decisions), each with its id and expiry. */
  grants: z.array(TaskGrantSchema).default([]),
  /** How long a grant the task makes for the session holds (permissions.session_grant_ttl_ms). */
  grantTtlMs: z.number().int().positive().default(86_400_000),
  /** Memory the session hands the planner: running summary and recent turns. */
  summary: z.string().default(''),
  recentTurns: z.array(TurnSchema).default([]),
  /** Tokens the task may use before it pauses for the user (model.max_tokens_per_task); null: no budget. */
  maxTokens: z.number().int().positive().nullable().default(null),
  /** Tool calls one step may make in sequence before it is judged (limits.max_calls_per_step). */
  maxCallsPerStep: z.number().int().min(1).max(50).default(6),
  /** History events after which the task continues as new between rounds (task.continue_as_new_after_events). */
  continueAsNewAfterEvents: z.number().int().min(100).max(40_000).default(8_000),
  /** Set only by the task itself when it continues as new: everything the next run takes over. */
  carry: z.lazy(() => TaskCarrySchema).optional(),
  /** On a cluster: the worker host that holds the project (its session's home, common/home.ts). */
  home: HomeSchema.optional(),
});
export type TaskInput = z.input<typeof TaskInputSchema>;
export type ParsedTaskInput = z.output<typeof TaskInputSchema>;

export const ReviewDecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'revise']),
  feedback: z.string().max(20_000).optional(),
  planHash: z
    .string()
    .max(64)
    .optional()
    .describe('the plan the decision is about; a decision for another (stale) plan is refused and changes nothing'),
});
export type ReviewDecision = z.infer<typeof ReviewDecisionSchema>;

export const ClarifySchema = z.strictObject({
  answers: z
    .record(z.string(), z.string().max(20_000))
    .refine((a) => Object.keys(a).length > 0, { message: 'give at least one answer' })
    .describe('one answer per pending question, keyed by the question'),
});
export type ClarifyAnswers = z.infer<typeof ClarifySchema>;

export const PermissionDecisionSchema = z.strictObject({
  requestId: z.string().min(1).max(300),
  decision: z.enum(['allow_once', 'allow_session', 'deny']),
});
export type PermissionDecision = z.infer<typeof PermissionDecisionSchema>;

export const CancelSchema = z.strictObject({ reason: z.string().max(2000).optional() });
export type CancelRequest = z.infer<typeof CancelSchema>;

export const STEP_STATUSES = ['pending', 'awaiting_clarification', 'running', 'done', 'failed', 'skipped'] as const;
export const StepStatusSchema = z.enum(STEP_STATUSES);
export type StepStatus = z.infer<typeof StepStatusSchema>;

export const StepStateSchema = z.object({
  id: z.string(),
  title: z.string(),
  status: StepStatusSchema,
  attempts: z.number().int(),
  result: z.string().nullable().describe('a short summary of the result (the full text is kept by reference)'),
  ok: z.boolean().nullable(),
});
export type StepState = z.infer<typeof StepStateSchema>;

/** One finished step as a review at a checkpoint shows it. */
export const StepResultSummarySchema = z.object({
  stepId: z.string(),
  title: z.string(),
  status: z.string(),
  result: z.string().nullable(),
});

/** A step's result as later prompts see it (the Planner on a replan, dependants, the answer composer). */
export interface StepResultView {
  id: string;
  title: string;
  status: string;
  result: string | null;
  /** What the step was to do (for the answer, which says whether it was done). */
  instruction?: string;
  /** Set when the step did not achieve its instruction: why. */
  notAchieved?: string;
}

export const PermissionRequestSchema = z.object({
  requestId: z.string(),
  stepId: z.string(),
  tool: z.string(),
  path: z.string(),
  requestedPath: z.string(),
  op: PathOpSchema,
  class: z.enum(['outside', 'sensitive']),
  reason: z.string(),
  call: z
    .object({ tool: z.string(), args: z.record(z.string(), z.unknown()) })
    .optional()
    .describe('the whole call the path is part of (for run_command, the full command line), so nobody approves blind'),
  change: FileChangeSchema.optional().describe(
    'for write_file or edit_file on an agent instruction file (AGENTS.md, CLAUDE.md): what it would change, as a unified diff'
  ),
});
export type PermissionRequest = z.infer<typeof PermissionRequestSchema>;

export const ReviewReasonSchema = z.enum(['before_work', 'checkpoint', 'policy', 'revised', 'budget']);

export const PendingInterruptSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('review'),
    reason: ReviewReasonSchema,
    planHash: z.string(),
    plan: PlanShape,
    afterStepIds: z.array(z.string()),
    /** For reason `budget`: what the task has spent, and the budget it crossed. */
    spent: z
      .object({
        inputTokens: z.number().int(),
        outputTokens: z.number().int(),
        modelCalls: z.number().int(),
        budget: z.number().int(),
      })
      .optional(),
    /** For reason `revised`: what changed against the plan reviewed before, and the feedback that led to it. */
    diff: PlanDiffSchema.optional(),
    feedback: z.string().optional(),
  }),
  z.object({ kind: z.literal('questions'), stepId: z.string(), questions: z.array(z.string()) }),
  z.object({ kind: z.literal('permission'), requests: z.array(PermissionRequestSchema) }),
]);
export type PendingInterrupt = z.infer<typeof PendingInterruptSchema>;

export const TaskUsageSchema = CallUsageSchema.extend({ toolCalls: z.number().int() });

/** A step that did not achieve its instruction: it failed, or it never ran. */
export const NotAchievedSchema = z.object({ stepId: z.string(), title: z.string(), reason: z.string() });
export type NotAchieved = z.infer<typeof NotAchievedSchema>;

/** An earlier run of a task that continued as new, and the events it holds (so a client can read them there). */
export const TaskRunLinkSchema = z.strictObject({
  runId: z.string(),
  /** The first and last `seq` of the events the run's `events` query answers. */
  firstSeq: z.number().int(),
  lastSeq: z.number().int(),
});
export type TaskRunLink = z.infer<typeof TaskRunLinkSchema>;

const UsageSchema = z.strictObject(CallUsageSchema.shape);

/**
 * What a task hands to the next run when it continues as new, between rounds of steps (no review, permission
 * request or batch is open then): the plan and each step's progress, the answers, grants and decisions, what it
 * has used, and the tail of its event log with the runs before it.
 */
export const TaskCarrySchema = z.strictObject({
  /** The earlier runs, oldest first (this one included when carried on). */
  runs: z.array(TaskRunLinkSchema),
  progress: z.strictObject({
    plan: PlanShape,
    version: z.number().int(),
    graph: z.array(PlanStepSchema),
    steps: z.array(StepStateSchema),
    failures: z.record(z.string(), z.string()),
    missed: z.record(z.string(), z.string()),
    checkpointed: z.array(z.string()),
    replansUsed: z.number().int(),
  }),
  questions: z.strictObject({
    open: z
      .strictObject({ kind: z.literal('questions'), stepId: z.string(), questions: z.array(z.string()) })
      .nullable(),
    answers: z.record(z.string(), z.record(z.string(), z.string())),
  }),
  lastReview: z.strictObject({ planHash: z.string(), decision: z.enum(['approve', 'revise']) }).nullable(),
  permissions: z.strictObject({
    grants: z.array(TaskGrantSchema),
    newGrants: z.array(GrantSchema),
    counter: z.number().int(),
    decided: z.record(z.string(), z.enum(['allow_once', 'allow_session', 'deny'])),
  }),
  usage: z.strictObject({
    models: UsageSchema,
    toolCalls: z.number().int(),
    steps: z.record(z.string(), UsageSchema),
  }),
  /** The token budget now in force (raised by each approved budget review); null: none. */
  budget: z.number().int().nullable(),
  lastSeq: z.number().int(),
  recentEvents: z.array(z.looseObject({ seq: z.number().int(), type: z.string() })),
  rounds: z.array(TaskRoundSchema),
});
export type TaskCarry = z.infer<typeof TaskCarrySchema>;

/** The `state` query's answer (and, with a Temporal UI link, `GET /tasks/:id`). */
export const TaskStateSchema = z.object({
  taskId: z.string(),
  sessionId: z.string(),
  status: TaskStatusSchema,
  prompt: z.string(),
  projectDir: z.string().describe('the project the task works in'),
  mode: ModeSchema,
  requestedMode: ModeSchema,
  toolAccess: ToolAccessSchema,
  goal: z.string().nullable(),
  plan: PlanShape.nullable(),
  planHash: z.string().nullable(),
  planVersion: z.number().int(),
  steps: z.array(StepStateSchema),
  pending: z.array(PendingInterruptSchema).describe('every decision the task waits for, with what a client needs'),
  answer: z.string().nullable(),
  verification: z.literal('unverified'),
  error: z.string().nullable(),
  newGrants: z.array(GrantSchema).describe('grants made with allow_session during this task (the session keeps them)'),
  usage: TaskUsageSchema,
  lastSeq: z.number().int(),
  notAchieved: z
    .array(NotAchievedSchema)
    .describe('once the task has ended: the steps that did not achieve their instruction, and why (empty: none)'),
  runs: z
    .strictObject({ current: z.number().int(), earlier: z.array(TaskRunLinkSchema) })
    .describe(
      'the runs of the task: a long task continues as new as its history grows; each earlier run (oldest first) ' +
        'holds the events from firstSeq to lastSeq'
    ),
  rounds: z
    .array(TaskRoundSchema)
    .describe('the rounds of steps run so far, oldest first: a rewind to a step undoes its round and every later one'),
  home: z
    .strictObject({ hostId: z.string().optional(), groupId: z.string().optional() })
    .nullable()
    .optional()
    .describe(
      "on a cluster: the worker host that holds the task's project, where its tool calls run, or the group of hosts " +
        'that share it (its calls run on the host that holds its lease)'
    ),
  waitingForHost: z
    .string()
    .nullable()
    .optional()
    .describe('the host the task waits for (gone or cut off) when it does; null otherwise'),
});
export type TaskState = z.infer<typeof TaskStateSchema>;

export const TaskResultSchema = z.object({
  taskId: z.string(),
  status: TaskStatusSchema,
  answer: z.string().nullable(),
  verification: z.literal('unverified'),
  error: z.string().nullable(),
  newGrants: z.array(GrantSchema),
  /** What the task used (absent when its run did not return a result: the session writes one, `unstartedTask`). */
  usage: TaskUsageSchema.optional(),
  /** The steps that did not achieve their instruction (absent: none). */
  notAchieved: z.array(NotAchievedSchema).optional(),
});
export type TaskResult = z.infer<typeof TaskResultSchema>;
