/**
 * The rewind routes of a task: `GET /tasks/:id/rewind?toStep=` (what a rewind would restore, changing nothing) and
 * `POST /tasks/:id/rewind` (restore the project to before a step, then run the task again from there or end it
 * `rewound`). Each runs a `rewindWorkflow` and answers with its result, or the error that says why not.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import {
  RewindPreviewQuerySchema,
  RewindRequestBodySchema,
  RewindResponseSchema,
  TaskParamsSchema,
} from '../../common/api';
import { homeRef } from '../../common/home';
import type { RewindInput, RewindResult } from '../../common/rewind';
import { ApiError, badRequest, conflict, gone, notFound } from '../errors';
import type { EventFeeds } from '../event-feed';
import { TEMPORAL_DOWN_OR_NO_WORKER } from '../openapi';
import { defineRoute, type RouteSpec } from '../route';
import { taskTarget } from '../targets';
import type { TemporalCalls } from '../temporal-calls';
import { stateQuery } from '../../workflows/task/messages';

/** How long a rewind call waits for the rewind to finish (it goes on durably if the call gives up). */
export const REWIND_WAIT_MS = 120_000;

export function rewindRoutes({
  calls,
  runUrl,
  feeds,
}: {
  calls: TemporalCalls;
  runUrl: (workflowId: string) => string;
  /** Woken when a rewind is done, so the task's streams follow at once (revived when the task runs again). */
  feeds: EventFeeds;
}): RouteSpec[] {
  /** Runs a rewind (or its preview) of a task and answers as the API does: 200, or the error that says why not. */
  async function rewind(taskId: string, input: Omit<RewindInput, 'taskId'>) {
    const target = taskTarget(taskId);
    // No such task answers 404, one past retention 410, before a rewind is started for it.
    await calls.describe(target);
    await calls.workers.requireWorker('rewind', target);
    // On a cluster the task's checkpoints and files are at its home: the rewind reads and restores them there.
    const { home } = await calls.query(target, stateQuery);
    const workflowId = `rewind-${taskId}-${randomUUID().slice(0, 8)}`;
    let result: RewindResult;
    try {
      result = await calls.execute(
        target,
        'rewindWorkflow',
        {
          workflowId,
          taskQueue: calls.taskQueue,
          args: [
            {
              taskId,
              ...input,
              ...(home ? { home: homeRef(home) } : {}),
            },
          ],
          staticSummary: `${input.preview ? 'preview of a rewind' : 'rewind'} of ${taskId} to before step ${input.toStep}`,
        },
        REWIND_WAIT_MS
      );
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      // The deepest cause is the one that says what went wrong (an activity's own error).
      let cause: Error | undefined = err;
      while (cause?.cause instanceof Error) cause = cause.cause;
      throw new ApiError(500, 'rewind_failed', `the rewind failed (${workflowId}): ${cause?.message ?? err.message}`);
    }
    switch (result.status) {
      case 'not_found':
        throw notFound(result.message);
      case 'expired':
        throw gone(result.message);
      case 'busy':
        throw conflict(result.message);
      case 'unknown_step':
        throw badRequest(`${input.preview ? 'query' : 'body'}.toStep: ${result.message}`, [
          { path: `${input.preview ? 'query' : 'body'}.toStep`, message: 'no such step has run' },
        ]);
      case 'conflict':
        throw conflict(
          `the rewind would overwrite ${result.conflicts.length} file(s) changed since the task touched them: ` +
            `${result.conflicts.map((c) => c.path).join(', ')}; nothing was changed (send force: true to restore them anyway)`,
          { conflicts: result.conflicts, files: result.files, steps: result.steps }
        );
      default:
        if (result.status === 'rewound') feeds.revive(target.workflowId);
        feeds.wake(target.workflowId);
        return { ...result, temporalUiUrl: runUrl(taskId) };
    }
  }

  return [
    defineRoute({
      method: 'get',
      path: '/tasks/:id/rewind',
      operationId: 'previewRewind',
      summary: 'What a rewind to a step would restore, file by file, and what conflicts with it (changes nothing)',
      tags: ['tasks'],
      params: TaskParamsSchema,
      query: RewindPreviewQuerySchema,
      responses: {
        200: { description: 'the files a rewind would restore, and the conflicts', schema: RewindResponseSchema },
        400: { description: 'toStep names no step that has run' },
        404: { description: 'no such task' },
        409: { description: 'a step of the task is running' },
        410: { description: "the task's checkpoints are no longer kept" },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params, query }) =>
        rewind(params.id, { toStep: query.toStep, rerun: false, force: false, preview: true }),
    }),
    defineRoute({
      method: 'post',
      path: '/tasks/:id/rewind',
      operationId: 'rewindTask',
      summary:
        'Restore the project to what it was before a step (every step from there on undone), then run the task ' +
        'again from that step (rerun) or end it `rewound`',
      tags: ['tasks'],
      params: TaskParamsSchema,
      body: RewindRequestBodySchema,
      responses: {
        200: { description: 'the files were restored and the task was reset', schema: RewindResponseSchema },
        400: { description: 'invalid request, or toStep names no step that has run' },
        404: { description: 'no such task' },
        409: {
          description:
            'files changed since the task touched them (details.conflicts lists them; nothing was changed; force: ' +
            'true restores them anyway), or a step of the task is running',
        },
        410: { description: "the task's checkpoints are no longer kept" },
        ...TEMPORAL_DOWN_OR_NO_WORKER,
      },
      handler: async ({ params, body }) => rewind(params.id, { ...body, preview: false }),
    }),
  ];
}
