/** Task statuses (docs/architecture.md §8, contract): shared by the task state, its result and the `status` event. */
import { z } from 'zod';

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
  'rewound',
] as const;
export const TaskStatusSchema = z.enum(TASK_STATUSES);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;
export const isFinalStatus = (s: TaskStatus): boolean =>
  s === 'done' || s === 'failed' || s === 'cancelled' || s === 'rewound';
