/**
 * The rewind's activities (`rewindWorkflow`): find what a rewind to a step would undo, restore the files from the
 * step checkpoints the workspace server kept, and reset the task's workflow to the start of that step's round.
 *
 * The checkpoints live in Klea's data dir (`tools/checkpoints/`); the task is read and reset through
 * Temporal with the worker's own client.
 */
import type { ProjectLeases } from './project/lease';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Config } from '../common/config';
import { Failure } from '../common/failures';
import {
  REWINDABLE_STATUSES,
  roundsFrom,
  type RewindOutline,
  type RewindResult,
  type RewoundSignal,
  type TaskRound,
} from '../common/rewind';
import type { Logger } from '../runtime/log';
import { applyRewind, planRewind } from '../tools/checkpoints';
import { taskRewindingSignal } from '../workflows/session/messages';
import { rewoundSignal, stateQuery } from '../workflows/task/messages';
import { checkpointPlace } from './mcp/servers';
import { requireAllowedProject } from './project/allowed';

/**
 * Crash tests only: "<n>:<marker dir>" stops the restore after its n-th file (it writes `rewind.held` there and
 * waits forever), so a test can kill the worker halfway through a restore.
 */
export const REWIND_HOLD_ENV = 'KLEA_REWIND_HOLD_AFTER_FILES';

export interface RewindDeps {
  config: Config;
  log: Logger;
  /** On a host of a group: a rewind plans and restores a group's project only where its lease is held. */
  leases?: ProjectLeases;
}

export interface PrepareRewindInput {
  taskId: string;
  toStep: string;
}

/** Everything the rewind needs once it is known to be possible. */
export interface PreparedRewind {
  projectDir: string;
  round: TaskRound;
  outline: RewindOutline;
  /** The task's latest run and the last event seq it holds. */
  runId: string;
  lastSeq: number;
}

export type PrepareRewindResult = { ok: true; rewind: PreparedRewind } | { ok: false; result: RewindResult };

export interface RestoreFilesInput {
  taskId: string;
  projectDir: string;
  steps: string[];
  rewindId: string;
}

export interface ResetTaskInput {
  taskId: string;
  round: TaskRound;
  rewindId: string;
  signal: RewoundSignal;
}

export function createRewindActivities(deps: RewindDeps) {
  /** The worker's own client (its connection and data converter, so the signal is encoded as every payload is). */
  const temporalClient = (): Client => Context.current().client;

  return {
    /** Reads the task and says what a rewind to `toStep` would undo, or why there can be none. */
    async prepareRewind(input: PrepareRewindInput): Promise<PrepareRewindResult> {
      const handle = temporalClient().workflow.getHandle(input.taskId);
      let state;
      let runId: string;
      try {
        const described = await handle.describe();
        runId = described.runId;
        state = await handle.query(stateQuery);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError)
          return { ok: false, result: { status: 'not_found', message: `no task ${input.taskId}` } };
        throw err;
      }
      if (!(REWINDABLE_STATUSES as readonly string[]).includes(state.status))
        return {
          ok: false,
          result: {
            status: 'busy',
            message: `task ${input.taskId} is ${state.status}: a rewind waits until nothing of it runs (it ends, or waits for a review or an answer); cancel it to rewind now`,
          },
        };
      const from = roundsFrom(state.rounds ?? [], input.toStep);
      if (!from) {
        const ran = (state.rounds ?? []).flatMap((r) => r.steps);
        return {
          ok: false,
          result: {
            status: 'unknown_step',
            message: `step ${input.toStep} has not run in task ${input.taskId}${ran.length ? ` (steps that ran: ${[...new Set(ran)].join(', ')})` : ' (no step has run)'}`,
          },
        };
      }
      requireAllowedProject(deps.config, state.projectDir);
      await deps.leases?.hold(state.projectDir);
      const plan = await planRewind(checkpointPlace(deps.config, state.projectDir), {
        task: input.taskId,
        steps: from.steps,
      });
      if (plan.expired && plan.known)
        return {
          ok: false,
          result: {
            status: 'expired',
            message: `the checkpoints of task ${input.taskId} are no longer kept (tools.checkpoints.max_mb: the oldest tasks' are pruned first); its files cannot be restored`,
          },
        };
      const outline: RewindOutline = {
        toStep: input.toStep,
        steps: from.steps,
        files: plan.files,
        conflicts: plan.conflicts,
        sensitive: plan.sensitive,
        tooLarge: plan.tooLarge,
      };
      return {
        ok: true,
        rewind: { projectDir: state.projectDir, round: from.round, outline, runId, lastSeq: state.lastSeq },
      };
    },

    /** Restores the files; a retry after a crash finishes the same restore (the store keys it by `rewindId`). */
    async restoreFiles(input: RestoreFilesInput) {
      requireAllowedProject(deps.config, input.projectDir);
      const hold = /^(\d+):(.+)$/.exec(process.env[REWIND_HOLD_ENV] ?? '');
      let files = 0;
      const restore = (lease?: { epoch: number }) =>
        applyRewind(
          checkpointPlace(deps.config, input.projectDir),
          { task: input.taskId, steps: input.steps, rewindId: input.rewindId },
          {
            afterFile: async () => {
              // A group's project given up meanwhile (its lease ran out unrenewed): not one more file is touched
              // here; the restore is finished where the lease is held (it resumes from its progress record).
              if (deps.leases && !deps.leases.holds(input.projectDir, lease?.epoch))
                throw new Error(`the lease on ${input.projectDir} was given up during the restore`);
              if (!hold || ++files !== Number(hold[1])) return;
              await writeFile(path.join(hold[2], 'rewind.held'), String(process.pid));
              await new Promise<never>(() => {});
            },
          }
        );
      const done = deps.leases ? await deps.leases.using(input.projectDir, restore) : await restore();
      deps.log.info('rewind restored files', { taskId: input.taskId, files: done.restored.length });
      return done;
    },

    /**
     * Resets the task's workflow to the start of the round (a new run of the same id; the run that was reset is kept
     * and linked), then tells the new run what was restored: it learns of the reset at once (shared/reset-notice.ts)
     * and holds the round until this `rewound` signal comes. Decisions sent to the run after that point are not
     * carried over: the re-run asks again. The reset's request id is the rewind's, so a retry of this activity
     * resets once; the new run takes the first `rewound` it is sent.
     */
    async resetTask(input: ResetTaskInput): Promise<{ runId: string }> {
      const c = temporalClient();
      const workflowId = input.taskId;
      const history = await c.workflow.getHandle(workflowId, input.round.runId).fetchHistory();
      const completed = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;
      const at = (history.events ?? []).find(
        (e) => e.eventType === completed && Number(e.eventId) > input.round.historyLength
      );
      if (!at)
        throw ApplicationFailure.nonRetryable(
          `no point to reset task ${workflowId} to in run ${input.round.runId} after event ${input.round.historyLength}`,
          Failure.RewindFailed
        );
      // A running task of a session: the reset terminates its run, which the session must not take for its end.
      const described = await c.workflow.getHandle(workflowId).describe();
      const parent = described.parentExecution?.workflowId;
      if (described.status.name === 'RUNNING' && parent)
        await c.workflow.getHandle(parent).signal(taskRewindingSignal, { taskId: workflowId });
      const res = await c.workflowService
        .resetWorkflowExecution({
          namespace: c.options.namespace,
          workflowExecution: { workflowId, runId: input.round.runId },
          reason: `klea rewind to before step ${input.signal.toStep}${input.signal.rerun ? ', run again' : ''} (${input.rewindId})`,
          workflowTaskFinishEventId: at.eventId,
          requestId: input.rewindId,
          resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
          resetReapplyExcludeTypes: [
            temporal.api.enums.v1.ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
            temporal.api.enums.v1.ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE,
          ],
        })
        .catch((err: Error & { details?: string; cause?: Error & { details?: string } }) => {
          const why = err.cause?.details || err.cause?.message || err.details || err.message;
          throw new Error(`Temporal refused the reset of ${workflowId}: ${why}`);
        });
      const runId = res.runId ?? '';
      await c.workflow.getHandle(workflowId, runId).signal(rewoundSignal, input.signal);
      return { runId };
    },
  };
}
