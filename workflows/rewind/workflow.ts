/**
 * `rewindWorkflow`, id `rewind-<taskId>-<n>`: one rewind of a task (`POST /tasks/:id/rewind`), durable from the
 * first file to the reset.
 *
 * 1. `prepareRewind` reads the task (it must not be running a step) and the step checkpoints: the steps undone
 *    (the round `toStep` ran in and every later one), the files to restore, and the conflicts (files the user
 *    changed since the task touched them). A preview ends here; so does a conflict, unless forced.
 * 2. `restoreFiles` puts every file back as it was before those steps, in reverse. Keyed by this workflow's id: a
 *    worker killed halfway leaves the activity to be retried elsewhere, which finishes the same restore and applies
 *    nothing twice.
 * 3. `resetTask` resets the task's workflow to the start of that round (Temporal's reset: a new run of the same id,
 *    the old run kept and linked, visible in the Temporal UI); the new run is told by the `rewound` signal and runs
 *    the round again (`rerun`) or ends `rewound`.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { RewindInputSchema, type RewindInput, type RewindResult } from '../../common/rewind';
import { atHome, type HostWatch } from '../shared/home';
import { parseInput } from '../shared/payloads';

/** A rewind waits for the task's host as long as it takes; its caller sees the rewind still running. */
const NO_WATCH: HostWatch = Object.freeze({ away: () => undefined, back: () => undefined });

const reading = proxyActivities<Pick<Activities, 'prepareRewind' | 'resetTask'>>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 10 },
});

/** The restore is retried until it is done: a half-restored tree is never left behind. */
const restoring = proxyActivities<Pick<Activities, 'restoreFiles'>>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

export async function rewindWorkflow(raw: RewindInput): Promise<RewindResult> {
  const input = parseInput(RewindInputSchema, 'invalid rewind input', raw);
  // The checkpoints and the files are at the task's home on a cluster: the rewind reads and restores them there.
  const prepared = await atHome(input.home, NO_WATCH, (at) =>
    reading.prepareRewind.executeWithOptions(at, [{ taskId: input.taskId, toStep: input.toStep }])
  );
  if (!prepared.ok) return prepared.result;
  const { outline, round, projectDir } = prepared.rewind;
  if (input.preview) return { status: 'preview', ...outline };
  if (outline.conflicts.length && !input.force) return { status: 'conflict', ...outline };

  const rewindId = workflowInfo().workflowId;
  const done = await atHome(input.home, NO_WATCH, (at) =>
    restoring.restoreFiles.executeWithOptions(at, [
      { taskId: input.taskId, projectDir, steps: outline.steps, rewindId },
    ])
  );
  const reset = await reading.resetTask({
    taskId: input.taskId,
    round,
    rewindId,
    signal: {
      rewindId,
      toStep: input.toStep,
      rerun: input.rerun,
      steps: outline.steps,
      restored: done.restored,
      sensitive: done.sensitive,
      tooLarge: outline.tooLarge,
      lastSeq: prepared.rewind.lastSeq,
      fromRunId: prepared.rewind.runId,
    },
  });
  return {
    status: 'rewound',
    ...outline,
    files: done.restored,
    sensitive: done.sensitive,
    rerun: input.rerun,
    runId: reset.runId,
    previousRunId: prepared.rewind.runId,
    lastSeq: prepared.rewind.lastSeq,
  };
}
