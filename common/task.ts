/** The task workflow's input, result, state (the `state` query) and message payloads, shared by every layer. */
import { z } from 'zod';
import { ModeSchema, ReviewPolicySchema, ToolAccessSchema } from './config';
import { type TaskStatusSchema } from './events';
import { GrantSchema, type Grant, type PathOp } from './path-guard';
import type { Plan } from './plan';

// The workflows know path-guard's grant by these names (a session's grants are ordinary grants).
export { GrantSchema };
export type SessionGrant = Grant;

export const TurnSchema = z.strictObject({ role: z.enum(['user', 'assistant']), text: z.string() });

export const TaskInputSchema = z.strictObject({
  taskId: z.string().min(1),
  sessionId: z.string().min(1),
  prompt: z.string().min(1),
  projectDir: z.string().min(1),
  mode: ModeSchema,
  toolAccess: ToolAccessSchema,
  review: ReviewPolicySchema.default('plan'),
  /** Route the request first (a standalone task); a session routes before it starts a task. */
  route: z.boolean().default(true),
  /** Grants the session already holds (allow_session decisions). */
  grants: z.array(GrantSchema).default([]),
  /** Memory the session hands the planner: running summary and recent turns. */
  summary: z.string().default(''),
  recentTurns: z.array(TurnSchema).default([]),
});
export type TaskInput = z.input<typeof TaskInputSchema>;
export type ParsedTaskInput = z.output<typeof TaskInputSchema>;

export const ReviewDecisionSchema = z.strictObject({
  decision: z.enum(['approve', 'revise']),
  feedback: z.string().max(20_000).optional(),
  /** The plan hash the decision is about; a decision for another (stale) plan changes nothing. */
  planHash: z.string().optional(),
});
export type ReviewDecision = z.infer<typeof ReviewDecisionSchema>;

export const ClarifySchema = z.strictObject({
  answers: z.record(z.string(), z.string()),
});
export type ClarifyAnswers = z.infer<typeof ClarifySchema>;

export const PermissionDecisionSchema = z.strictObject({
  requestId: z.string().min(1),
  decision: z.enum(['allow_once', 'allow_session', 'deny']),
});
export type PermissionDecision = z.infer<typeof PermissionDecisionSchema>;

export const CancelSchema = z.strictObject({ reason: z.string().max(2000).optional() });
export type CancelRequest = z.infer<typeof CancelSchema>;

export type StepStatus = 'pending' | 'awaiting_clarification' | 'running' | 'done' | 'failed' | 'skipped';

export interface StepState {
  id: string;
  title: string;
  status: StepStatus;
  attempts: number;
  /** A short summary of the result (the full text is cut for prompts and kept by reference). */
  result: string | null;
  ok: boolean | null;
}

export interface PermissionRequest {
  requestId: string;
  stepId: string;
  tool: string;
  path: string;
  requestedPath: string;
  op: PathOp;
  class: 'outside' | 'sensitive';
  reason: string;
}

export type PendingInterrupt =
  | {
      kind: 'review';
      reason: 'before_work' | 'checkpoint' | 'policy' | 'revised';
      planHash: string;
      plan: Plan;
      afterStepIds: string[];
    }
  | { kind: 'questions'; stepId: string; questions: string[] }
  | { kind: 'permission'; requests: PermissionRequest[] };

export interface TaskState {
  taskId: string;
  sessionId: string;
  status: z.infer<typeof TaskStatusSchema>;
  prompt: string;
  mode: z.infer<typeof ModeSchema>;
  requestedMode: z.infer<typeof ModeSchema>;
  toolAccess: z.infer<typeof ToolAccessSchema>;
  goal: string | null;
  plan: Plan | null;
  planHash: string | null;
  planVersion: number;
  steps: StepState[];
  /** Every decision the task is waiting for, with what a client needs to act on it. */
  pending: PendingInterrupt[];
  answer: string | null;
  verification: 'unverified';
  error: string | null;
  /** Grants made with allow_session during this task (the session keeps them). */
  newGrants: SessionGrant[];
  usage: { inputTokens: number; outputTokens: number; modelCalls: number; toolCalls: number };
  lastSeq: number;
}

export interface TaskResult {
  taskId: string;
  status: z.infer<typeof TaskStatusSchema>;
  answer: string | null;
  verification: 'unverified';
  error: string | null;
  newGrants: SessionGrant[];
}
