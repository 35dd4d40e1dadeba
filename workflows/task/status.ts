/**
 * What a task shows of itself (pure): the `state` query's answer, the run's current details in the Temporal UI,
 * and where a task stands once a decision it waited for has arrived.
 */
import { isFinalStatus, type TaskStatus } from '../../common/events';
import type { NotAchieved, ParsedTaskInput, PendingInterrupt, SessionGrant, TaskState } from '../../common/task';
import type { PlanProgress } from './plan-progress';

/** What the task holds beside its input and its plan's progress. */
export interface TaskRecord {
  status: TaskStatus;
  answer: string | null;
  error: string | null;
  pending: PendingInterrupt[];
  newGrants: SessionGrant[];
  usage: TaskState['usage'];
  lastSeq: number;
  runs: TaskState['runs'];
  rounds: TaskState['rounds'];
}

/** The `state` query's answer. */
export function taskState(input: ParsedTaskInput, progress: PlanProgress, t: TaskRecord): TaskState {
  return {
    taskId: input.taskId,
    sessionId: input.sessionId,
    status: t.status,
    prompt: input.prompt,
    projectDir: input.projectDir,
    mode: input.mode,
    // A mode that cannot run is declined, never swapped for another: the requested mode is the effective one.
    requestedMode: input.mode,
    toolAccess: input.toolAccess,
    goal: progress.goal,
    plan: progress.plan,
    planHash: progress.hash,
    planVersion: progress.version,
    steps: progress.states(),
    pending: t.pending,
    answer: t.answer,
    verification: 'unverified',
    error: t.error,
    newGrants: t.newGrants,
    usage: t.usage,
    lastSeq: t.lastSeq,
    runs: t.runs,
    rounds: t.rounds,
    // While the task runs, its unfinished steps are still to come.
    notAchieved: isFinalStatus(t.status) ? progress.notAchieved() : [],
  };
}

/**
 * The answer as the user reads it: the composed text and, when steps did not achieve their instruction, a list
 * of them with why, written here rather than left to the model, so a task whose steps failed never reads as a
 * success.
 */
/** Said under every answer of a read-only task, so a change the request asked for is never taken as made. */
export const READ_ONLY_ANSWER_NOTE = '_Read-only access: no file was changed and no command was run._';

/** A read-only task's answer, with what its access kept it from doing. */
export function answerWithAccess(text: string, toolAccess: string): string {
  return toolAccess === 'read_only' ? `${text.trimEnd()}\n\n${READ_ONLY_ANSWER_NOTE}` : text;
}

const shortfallLines = (notAchieved: readonly NotAchieved[]) =>
  notAchieved.map((n) => {
    const reason = n.reason.length > 300 ? `${n.reason.slice(0, 299)}…` : n.reason;
    return `- ${n.stepId} "${n.title}": ${reason.replace(/\s+/g, ' ')}`;
  });

/** The answer with the steps that did not achieve their instruction listed first, so none reads as done. */
export function answerWithShortfalls(text: string, notAchieved: readonly NotAchieved[], steps?: number): string {
  if (!notAchieved.length) return text;
  const of = steps ? ` (${notAchieved.length} of ${steps} steps)` : '';
  return `**Not achieved**${of}:\n${shortfallLines(notAchieved).join('\n')}\n\n${text.trim()}`;
}

/** The answer of a task none of whose steps achieved its instruction: each step, and what stopped it. */
export function nothingAchievedAnswer(request: string, notAchieved: readonly NotAchieved[]): string {
  const asked = request.length > 200 ? `${request.slice(0, 199)}…` : request;
  return [
    `Not done: "${asked.replace(/\s+/g, ' ')}". No step of the plan achieved its instruction:`,
    ...shortfallLines(notAchieved),
  ].join('\n');
}

export interface StatusView {
  status: TaskStatus;
  detail?: string;
  goal: string | null;
  pending: readonly PendingInterrupt[];
  /** The plan's version and how many steps are known, once there is a plan. */
  plan: { version: number; steps: number } | null;
  /** Which run of the task this is, and the run it continued from (continue-as-new). */
  run?: { number: number; previous: string | null };
}

/** Everything the task waits for, in words: `review of plan ab12, 2 permission decision(s)`. */
export function waitingFor(pending: readonly PendingInterrupt[]): string {
  return pending
    .map((p) =>
      p.kind === 'review'
        ? `review of plan ${p.planHash}`
        : p.kind === 'questions'
          ? `answers for step ${p.stepId}`
          : `${p.requests.length} permission decision(s)`
    )
    .join(', ');
}

/** The run's current details (markdown) for the Temporal UI. */
export function statusDetails(v: StatusView): string {
  const waiting = waitingFor(v.pending);
  return [
    `**${v.status}**${v.detail ? `: ${v.detail}` : ''}`,
    v.goal ? `goal: ${v.goal}` : '',
    waiting ? `waiting for: ${waiting}` : '',
    v.plan ? `plan v${v.plan.version}, ${v.plan.steps} steps` : '',
    v.run && v.run.number > 1 ? `run ${v.run.number} of this task, continued from run ${v.run.previous}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/**
 * After a decision arrives: the next thing still waited for, back to running once the last permission is
 * decided, or null when the status stays as it is (a finished task stays finished).
 */
export function statusAfterDecision(status: TaskStatus, pending: readonly PendingInterrupt[]): TaskStatus | null {
  if (isFinalStatus(status)) return null;
  if (pending.some((p) => p.kind === 'permission')) return 'awaiting_permission';
  if (pending.some((p) => p.kind === 'review')) return 'awaiting_review';
  if (status === 'awaiting_permission') return 'running';
  return null;
}
