/**
 * Reading a session's own earlier run: when a message wakes a sleeping session, the new run's input holds what
 * the client read of the run that went to sleep, but the grants in it are taken only from that run itself, read
 * here from Temporal by the worker.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Failure } from '../../common/failures';
import { SessionSleepSchema } from '../../common/session';
import type { HeldGrant } from '../../common/task';

export interface SleptRunGrants {
  grants: HeldGrant[];
  grantCounter: number;
}

/** The grants a session's run held when it went to sleep; none when that run is not a sleeping run of this session. */
export async function sleptSessionGrants(input: { workflowId: string; runId: string }): Promise<SleptRunGrants> {
  const handle = Context.current().client.workflow.getHandle(input.workflowId, input.runId, { followRuns: false });
  const desc = await handle.describe();
  if (desc.type !== 'sessionWorkflow' || desc.status.name !== 'COMPLETED')
    throw ApplicationFailure.nonRetryable(
      `run ${input.runId} of ${input.workflowId} is not a session that went to sleep (${desc.type}, ${desc.status.name})`,
      Failure.GrantsIgnored
    );
  const slept = SessionSleepSchema.safeParse(await handle.result());
  if (!slept.success)
    throw ApplicationFailure.nonRetryable(
      `run ${input.runId} did not return what a sleeping session does`,
      Failure.GrantsIgnored
    );
  return { grants: slept.data.carry.grants, grantCounter: slept.data.carry.grantCounter };
}
