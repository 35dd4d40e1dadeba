/** A bare Temporal workflow for comparison: a run parked on a signal, with no agent around it. */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

/** Whether a bareParked run is waiting for its signal (what a Klea task's `state` query says at a review). */
export const parkedQuery = defineQuery<boolean>('parked');

export async function bareParked(): Promise<void> {
  let go = false;
  setHandler(defineSignal('go'), () => {
    go = true;
  });
  setHandler(parkedQuery, () => !go);
  await condition(() => go);
}
