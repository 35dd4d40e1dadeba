/**
 * Rewind (`POST /tasks/:id/rewind`): undo what a task changed from one of its steps on, and optionally run it
 * again from there. Shared by the API, the `rewindWorkflow`, its activities and the task workflow.
 */
import { z } from 'zod';
import { HomeSchema } from './home';
import { StepIdSchema } from './plan';

export const RewindRequestSchema = z.strictObject({
  toStep: StepIdSchema.describe('the step to go back to: the project is restored to what it was before it ran'),
  rerun: z
    .boolean()
    .default(false)
    .describe('run the task again from that step, with the plan as it stood (else the task ends `rewound`)'),
  force: z.boolean().default(false).describe('restore files the user changed since the task touched them too'),
});
export type RewindRequest = z.input<typeof RewindRequestSchema>;
export type ParsedRewindRequest = z.output<typeof RewindRequestSchema>;

/**
 * One round of steps as the task ran it: the steps started together, and where in which run of the task's workflow
 * it began (the history length then), which is where a re-run resets to.
 */
export const TaskRoundSchema = z.strictObject({
  steps: z.array(z.string()),
  runId: z.string(),
  historyLength: z.number().int(),
});
export type TaskRound = z.infer<typeof TaskRoundSchema>;

export const RewindFileSchema = z.object({
  path: z.string().describe('relative to the project'),
  action: z
    .enum(['restore', 'delete', 'recreate'])
    .describe('restore: put back its earlier content; delete: the task created it; recreate: the task deleted it'),
  step: z.string().describe('the step whose change is undone'),
});
export type RewindFile = z.infer<typeof RewindFileSchema>;

export const RewindConflictSchema = z.object({ path: z.string(), reason: z.string() });

/** What a rewind to a step would do, or did. */
export const RewindOutlineSchema = z.object({
  toStep: z.string(),
  /** Every step undone: the round `toStep` ran in, and every round after it. */
  steps: z.array(z.string()),
  files: z.array(RewindFileSchema),
  conflicts: z.array(RewindConflictSchema).describe('files the user changed since the task touched them'),
  sensitive: z.array(z.string()).describe('sensitive files the steps changed: never kept, so left as they are'),
  tooLarge: z
    .array(z.string())
    .describe('steps whose changes were too large to keep: their files are left as they are'),
});
export type RewindOutline = z.infer<typeof RewindOutlineSchema>;

export const RewindResultSchema = z.discriminatedUnion('status', [
  RewindOutlineSchema.extend({
    status: z.literal('rewound'),
    rerun: z.boolean(),
    /** The run of the task that goes on from the step (rerun) or ends `rewound`. */
    runId: z.string(),
    previousRunId: z.string(),
    /** The events of the run that goes on come after this seq (the first is the `rewound` event). */
    lastSeq: z.number().int(),
  }),
  RewindOutlineSchema.extend({ status: z.literal('preview') }),
  RewindOutlineSchema.extend({ status: z.literal('conflict') }),
  z.object({
    status: z.enum(['expired', 'busy', 'unknown_step', 'not_found']),
    message: z.string(),
  }),
]);
export type RewindResult = z.infer<typeof RewindResultSchema>;

/** The rewind workflow's input. */
export const RewindInputSchema = z.strictObject({
  taskId: z.string().regex(/^task-/),
  toStep: z.string(),
  rerun: z.boolean(),
  force: z.boolean(),
  /** Only say what the rewind would do. */
  preview: z.boolean().default(false),
  /** On a cluster: the task's home, where its checkpoints are and its files are restored (common/home.ts). */
  home: HomeSchema.optional(),
});
export type RewindInput = z.input<typeof RewindInputSchema>;

/**
 * The rewind's report to the run its reset made, which holds the round it went back to until this comes: what was
 * restored, and whether to go on from the step or end `rewound`.
 */
export const RewoundSignalSchema = z.strictObject({
  rewindId: z.string(),
  toStep: z.string(),
  rerun: z.boolean(),
  steps: z.array(z.string()),
  restored: z.array(RewindFileSchema),
  sensitive: z.array(z.string()),
  tooLarge: z.array(z.string()),
  /** The last event seq of the run that was reset: the new run's events go on after it, never repeating a seq. */
  lastSeq: z.number().int(),
  fromRunId: z.string(),
});
export type RewoundSignal = z.infer<typeof RewoundSignalSchema>;

/** The task statuses a rewind may start from: nothing of the task is running then. */
export const REWINDABLE_STATUSES = [
  'awaiting_review',
  'awaiting_clarification',
  'done',
  'failed',
  'cancelled',
  'rewound',
] as const;

/**
 * The steps a rewind to `toStep` undoes, and the round it goes back to: the first round `toStep` ran in, and all
 * after it (steps of one round run together, so they are undone together). Null when the step never ran.
 */
export function roundsFrom(rounds: readonly TaskRound[], toStep: string): { round: TaskRound; steps: string[] } | null {
  const at = rounds.findIndex((r) => r.steps.includes(toStep));
  if (at < 0) return null;
  const steps: string[] = [];
  for (const r of rounds.slice(at)) for (const s of r.steps) if (!steps.includes(s)) steps.push(s);
  return { round: rounds[at], steps };
}
