/** The task workflow's input, result and state (the `state` query), shared by workflows, API and clients. */
import { z } from 'zod';
import { ModeSchema, ReviewPolicySchema, ToolAccessSchema } from './config';
import { TaskStatusSchema } from './events';

export const TaskInputSchema = z.strictObject({
  taskId: z.string().min(1),
  sessionId: z.string().min(1),
  prompt: z.string().min(1),
  projectDir: z.string().min(1),
  mode: ModeSchema,
  toolAccess: ToolAccessSchema,
  review: ReviewPolicySchema.default('plan'),
});
export type TaskInput = z.input<typeof TaskInputSchema>;

export const TaskResultSchema = z.object({
  taskId: z.string(),
  status: TaskStatusSchema,
  answer: z.string().nullable(),
  verification: z.literal('unverified'),
  error: z.string().nullable(),
});
export type TaskResult = z.infer<typeof TaskResultSchema>;

export const TaskStateSchema = z.object({
  taskId: z.string(),
  sessionId: z.string(),
  status: TaskStatusSchema,
  prompt: z.string(),
  mode: ModeSchema,
  requestedMode: ModeSchema,
  toolAccess: ToolAccessSchema,
  answer: z.string().nullable(),
  error: z.string().nullable(),
  lastSeq: z.number().int(),
});
export type TaskState = z.infer<typeof TaskStateSchema>;
