/**
 * The event log of a task or session (ARCHITECTURE §8, contract): each event is `{seq, at, type, ...}` with a
 * strictly increasing `seq`. Events are appended by workflow code only, so activity retries never duplicate them.
 */
import { z } from 'zod';
import { ModeSchema, ToolAccessSchema } from './config';

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
  'error',
  'status',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

export const TASK_STATUSES = [
  'routing',
  'planning',
  'awaiting_review',
  'awaiting_clarification',
  'awaiting_permission',
  'running',
  'done',
  'failed',
  'cancelled',
] as const;
export const TaskStatusSchema = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;
export const isFinalStatus = (s: TaskStatus): boolean => s === 'done' || s === 'failed' || s === 'cancelled';

export const ContextEventSchema = z.object({
  type: z.literal('context'),
  mode: ModeSchema.describe('effective mode'),
  requestedMode: ModeSchema,
  modeNote: z
    .string()
    .nullable()
    .describe('why the effective mode differs from the requested one, or why it cannot run'),
  toolAccess: ToolAccessSchema,
  projectDir: z.string(),
  projectContextFile: z.string().nullable(),
});

export const AnswerEventSchema = z.object({
  type: z.literal('answer'),
  text: z.string(),
  /** Grounding is not enforced yet: every answer is labelled unverified. */
  verification: z.literal('unverified'),
  label: z.string(),
});

export const ErrorEventSchema = z.object({
  type: z.literal('error'),
  message: z.string(),
  code: z.string(),
  stepId: z.string().optional(),
});

export const StatusEventSchema = z.object({
  type: z.literal('status'),
  status: TaskStatusSchema,
  detail: z.string().optional(),
});

export const EventBodySchema = z.discriminatedUnion('type', [
  ContextEventSchema,
  AnswerEventSchema,
  ErrorEventSchema,
  StatusEventSchema,
]);
export type EventBody = z.infer<typeof EventBodySchema>;
export type KleaEvent = EventBody & { seq: number; at: string };

export const UNVERIFIED_LABEL = 'Unverified: this answer has not been checked against sources.';
