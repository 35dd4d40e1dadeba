/** Bare Temporal workflows for comparison: the same number of activities, with no agent around them. */
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

/** Whether a bareParked run is waiting for its signal (what a Klea task's `state` query says at a review). */
export const parkedQuery = defineQuery<boolean>('parked');

export async function bareSteps(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await noop();
}

export async function bareParked(): Promise<void> {
  let go = false;
  setHandler(defineSignal('go'), () => {
    go = true;
  });
  setHandler(parkedQuery, () => !go);
  await condition(() => go);
}
