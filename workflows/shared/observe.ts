/**
 * What workflows tell the worker's metrics (runtime/metrics.ts), through a Temporal sink: a call leaves no trace in
 * history and is not made again when a run is replayed, so each event is counted once, by the worker that ran it.
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface KleaObserveSinks extends Sinks {
  kleaObserve: {
    /** A task reached its final result (done, failed, or cancelled by the `cancel` signal). */
    taskFinished(status: string): void;
    /** A permission request was decided (allow_once, allow_session, deny), by the user or by an earlier grant. */
    permissionDecided(decision: string): void;
  };
}

export const { kleaObserve } = proxySinks<KleaObserveSinks>();
