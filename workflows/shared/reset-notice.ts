/**
 * How a task's run learns that Temporal reset it. A reset (a rewind's, or one from the Temporal UI) makes a new run
 * whose history is the old one up to the reset point. Temporal tells the run exactly there, by reseeding its
 * randomness (core's `updateRandomSeed`, in that activation and in every replay of it; the SDK applies it before the
 * activation's jobs reach the interceptors). The watcher sees the seed change and adds the task's `klea:reset`
 * signal to that activation's jobs, so the workflow learns of the reset as it learns of anything else:
 * deterministically, before the activation's other jobs.
 */
import { workflowInfo, type WorkflowInternalsInterceptor } from '@temporalio/workflow';
import { getActivator } from '@temporalio/workflow/lib/global-attributes';

/** The signal a task receives where its run was reset (never sent by a client; one that is only delays a round). */
export const RESET_NOTICE_SIGNAL = 'klea:reset';

type Activation = Parameters<NonNullable<WorkflowInternalsInterceptor['activate']>>[0]['activation'];

/**
 * One per run (the interceptors are made per run): passes each activation on, with the reset notice first when the
 * run's randomness was reseeded since the one before (task runs only).
 */
export function resetWatcher(): (activation: Activation) => Activation {
  let seed: string | undefined;
  return (activation) => {
    const now = getActivator().randomnessSeed.join(',');
    const reseeded = seed !== undefined && now !== seed;
    seed = now;
    if (!reseeded || workflowInfo().workflowType !== 'taskWorkflow') return activation;
    const jobs = activation.jobs ?? [];
    const notice = {
      variant: 'signalWorkflow',
      signalWorkflow: { signalName: RESET_NOTICE_SIGNAL, input: [], headers: {} },
    } as unknown as (typeof jobs)[number];
    // After the run's start, if this activation starts it (the start must stay first).
    const at = (jobs[0] as { variant?: string } | undefined)?.variant === 'initializeWorkflow' ? 1 : 0;
    return { ...activation, jobs: [...jobs.slice(0, at), notice, ...jobs.slice(at)] };
  };
}
