/**
 * The event log of a task or session (docs/architecture.md §8, contract): each event is `{seq, at, type, ...}` with a
 * strictly increasing `seq`. Events are appended by workflow code only, so activity retries never duplicate them.
 */
import { z } from 'zod';
import { ModeSchema, NetworkSchema, ToolAccessSchema } from './settings';
import { CallUsageSchema } from './model-protocol';
import { MAX_PLAN_STEPS, PlanShape, PlanStepSchema } from './plan';
import { PlanDiffSchema } from './plan-diff';
import { SandboxStatusSchema } from './sandbox-status';
import {
  HeldGrantSchema,
  StepResultSummarySchema,
  PermissionDecisionSchema,
  PermissionRequestSchema,
  ReviewReasonSchema,
} from './task';
import { TaskStatusSchema } from './status';
import { FileChangeSchema } from './text-diff';
import { RewindFileSchema } from './rewind';

export const EVENT_TYPES = [
  'context',
  'plan',
  'review_requested',
  'questions',
  'permission_requested',
  'permission_decided',
  'step_started',
  'step_finished',
  'replanned',
  'answer',
  'memory',
  'grants',
  'error',
  'status',
  'rewound',
  'waiting_for_host',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

export { TASK_STATUSES, TaskStatusSchema, isFinalStatus, type TaskStatus } from './status';

export const ContextEventSchema = z.object({
  type: z.literal('context'),
  mode: ModeSchema.describe('effective mode'),
  requestedMode: ModeSchema,
  modeNote: z
    .string()
    .nullable()
    .describe('why the effective mode differs from the requested one, or why it cannot run'),
  toolAccess: ToolAccessSchema,
  network: NetworkSchema.optional().describe('whether sandboxed commands may reach the network'),
  sandbox: SandboxStatusSchema.optional().describe('where commands run, as the worker found it'),
  sandboxNote: z.string().nullable().optional().describe('for a sandbox that is off or unavailable: what that means'),
  projectDir: z.string(),
  projectContextFile: z.string().nullable(),
});

export const AnswerEventSchema = z.object({
  type: z.literal('answer'),
  /** On a session's log: the task the answer belongs to (absent for chat replies and command results). */
  taskId: z.string().optional(),
  /** On a session's log: the command this is the result of. */
  command: z.string().optional(),
  text: z.string(),
  /** The model calls that wrote this answer (the answer composer, a routing reply, /init). */
  usage: CallUsageSchema.optional(),
  /** Grounding is not enforced yet: every answer is labelled unverified. */
  verification: z.literal('unverified'),
  label: z.string(),
});

export const ErrorEventSchema = z.object({
  type: z.literal('error'),
  taskId: z.string().optional(),
  message: z.string(),
  code: z.string(),
  stepId: z.string().optional(),
});

export const StatusEventSchema = z.object({
  type: z.literal('status'),
  /** On a session's log: the task whose status changed. */
  taskId: z.string().optional(),
  status: TaskStatusSchema,
  detail: z.string().optional(),
});

export const PlanEventSchema = z.object({
  type: z.literal('plan'),
  plan: PlanShape,
  planHash: z.string(),
  version: z.number().int(),
  /** The Planner call that wrote this plan. */
  usage: CallUsageSchema.optional(),
  /** For a plan revised at the user's request: what changed against the plan the user reviewed. */
  diff: PlanDiffSchema.optional(),
  /** For a plan revised at the user's request: the feedback that led to it. */
  feedback: z.string().optional(),
  /** What Klea repaired in the Planner's output rather than asking again (absent: nothing). */
  repairs: z.array(z.string()).optional(),
});
export const ReviewRequestedEventSchema = z.object({
  type: z.literal('review_requested'),
  reason: ReviewReasonSchema,
  plan: PlanShape,
  planHash: z.string(),
  afterStepIds: z.array(z.string()),
  results: z.array(StepResultSummarySchema),
  /** For reason `budget`: what the task has spent, and the budget it crossed. */
  spent: CallUsageSchema.extend({ budget: z.number().int() }).optional(),
  /** For reason `revised`: what changed against the plan reviewed before, and the feedback that led to it. */
  diff: PlanDiffSchema.optional(),
  feedback: z.string().optional(),
});
export const QuestionsEventSchema = z.object({
  type: z.literal('questions'),
  stepId: z.string(),
  questions: z.array(z.string()),
});
export const PermissionRequestedEventSchema = PermissionRequestSchema.extend({
  type: z.literal('permission_requested'),
});
export const PermissionDecidedEventSchema = z.object({
  type: z.literal('permission_decided'),
  requestId: z.string(),
  decision: PermissionDecisionSchema.shape.decision,
  path: z.string(),
  automatic: z.boolean().describe('true when an earlier allow_session grant answered it'),
});
export const StepStartedEventSchema = z.object({
  type: z.literal('step_started'),
  stepId: z.string(),
  title: z.string(),
  attempt: z.number().int(),
});
export const StepFinishedEventSchema = z.object({
  type: z.literal('step_finished'),
  stepId: z.string(),
  status: z.enum(['done', 'failed', 'skipped', 'retry']),
  summary: z.string(),
  outcome: z.enum(['move_on', 'retry', 'replan']),
  reason: z.string(),
  calls: z.array(z.object({ tool: z.string(), status: z.string() })),
  /** What this attempt's writes and edits changed: one unified diff per call (absent when nothing changed). */
  changes: z.array(FileChangeSchema).optional(),
  /** The model calls made for this attempt of the step (a pick for several steps counts on the first). */
  usage: CallUsageSchema.optional(),
  /** What Klea repaired in the model's picks for this step rather than asking again (absent: nothing). */
  repairs: z.array(z.string()).optional(),
});
export const ReplannedEventSchema = z.object({
  type: z.literal('replanned'),
  reason: z.string(),
  /** The new plan; it has no step when the Planner only repeated finished ones (the work is done). */
  plan: PlanShape.extend({ steps: z.array(PlanStepSchema).max(MAX_PLAN_STEPS) }),
  planHash: z.string(),
  /** The Planner call that wrote the new plan. */
  usage: CallUsageSchema.optional(),
  version: z.number().int(),
  /** What Klea repaired in the Planner's output rather than asking again (absent: nothing). */
  repairs: z.array(z.string()).optional(),
});
export const MemoryEventSchema = z.object({
  type: z.literal('memory'),
  action: z.string(),
  detail: z.string(),
  foldedChars: z.number().int().optional(),
  /** The summariser's model call. */
  usage: CallUsageSchema.optional(),
});

/** The session's grants changed: one was made, revoked or lapsed; `grants` is what the session holds now. */
export const GrantsEventSchema = z.object({
  type: z.literal('grants'),
  action: z.enum(['granted', 'revoked', 'expired']),
  detail: z.string(),
  grants: z.array(HeldGrantSchema),
});

/** The task was rewound: what was restored, file by file, and whether it runs again from the step. */
export const RewoundEventSchema = z.object({
  type: z.literal('rewound'),
  rewindId: z.string().describe('the rewind workflow that did it'),
  toStep: z.string(),
  rerun: z.boolean(),
  steps: z.array(z.string()).describe('the steps undone'),
  restored: z.array(RewindFileSchema),
  sensitive: z.array(z.string()).describe('sensitive files the steps changed, left as they are'),
  tooLarge: z.array(z.string()).describe('steps too large to have been kept, whose files are left as they are'),
  fromRunId: z.string().describe('the run that was reset (kept, and linked in the Temporal UI)'),
});

/**
 * On a cluster: an activity for the project's home host was not taken within `worker.host_wait_ms` (the host is
 * gone or cut off). The task waits for it (and can be cancelled meanwhile); a `status` event says when it is back.
 */
export const WaitingForHostEventSchema = z.object({
  type: z.literal('waiting_for_host'),
  hostId: z.string().describe("the worker host that holds the task's project"),
  stepId: z.string().optional().describe('the step whose call waits, when a step waits'),
});

export const EventBodySchema = z.discriminatedUnion('type', [
  ContextEventSchema,
  PlanEventSchema,
  ReviewRequestedEventSchema,
  QuestionsEventSchema,
  PermissionRequestedEventSchema,
  PermissionDecidedEventSchema,
  StepStartedEventSchema,
  StepFinishedEventSchema,
  ReplannedEventSchema,
  AnswerEventSchema,
  MemoryEventSchema,
  GrantsEventSchema,
  ErrorEventSchema,
  StatusEventSchema,
  RewoundEventSchema,
  WaitingForHostEventSchema,
]);
export type EventBody = z.infer<typeof EventBodySchema>;
export type KleaEvent = EventBody & { seq: number; at: string };

export const UNVERIFIED_LABEL = 'Unverified: this answer has not been checked against sources.';
