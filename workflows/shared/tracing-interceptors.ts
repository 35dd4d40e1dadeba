/**
 * The workflow interceptors every Klea worker bundles (worker/bundle.ts). A run whose start carried a trace context
 * is traced by Temporal's OpenTelemetry interceptors, made neutral to replay (shared/traced-interceptors.ts, which
 * says why they are not the package's own classes as they are). Their spans leave through the worker's `exporter`
 * sink, which discards them when traces are off (worker/telemetry.ts).
 *
 * A run started without a trace context never loads the OpenTelemetry SDK. This module is shared by every run
 * (shared/preload.ts), so it imports nothing of OpenTelemetry: a traced run requires it when it starts, and so
 * evaluates its own copy, which it is free to configure (the shared modules are frozen).
 *
 * The internals interceptor also gives a task's run the notice that Temporal reset it (reset-notice.ts).
 */
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { resetWatcher } from './reset-notice';
import type * as Traced from './traced-interceptors';

/** Temporal's header that carries a trace context (`_tracer-data`), as its OpenTelemetry interceptors write it. */
const TRACE_HEADER = '_tracer-data';

/**
 * What the bundler calls for each run (`workflowInterceptorModules`). A run is traced when its start carried a
 * trace context (a traced API or a traced parent put it in the start's headers, which history keeps, so a replay
 * decides the same).
 */
export const interceptors = (): WorkflowInterceptors => {
  let traced: ReturnType<typeof Traced.tracingInterceptors> | null = null;
  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      if (input.headers[TRACE_HEADER]) {
        // Required here, in the run: a module first required by a run is that run's own copy.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        traced = (require('./traced-interceptors') as typeof Traced).tracingInterceptors();
      }
      return traced ? traced.inbound[0].execute!(input, next) : next(input);
    },
    handleSignal: (input, next) => (traced ? traced.inbound[0].handleSignal!(input, next) : next(input)),
    handleUpdate: (input, next) => (traced ? traced.inbound[0].handleUpdate!(input, next) : next(input)),
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => (traced ? traced.outbound[0].scheduleActivity!(input, next) : next(input)),
    scheduleLocalActivity: (input, next) =>
      traced ? traced.outbound[0].scheduleLocalActivity!(input, next) : next(input),
    startChildWorkflowExecution: (input, next) =>
      traced ? traced.outbound[0].startChildWorkflowExecution!(input, next) : next(input),
    continueAsNew: (input, next) => (traced ? traced.outbound[0].continueAsNew!(input, next) : next(input)),
    signalWorkflow: (input, next) => (traced ? traced.outbound[0].signalWorkflow!(input, next) : next(input)),
  };
  const withResetNotice = resetWatcher();
  const internals: WorkflowInternalsInterceptor = {
    // Not tracing: a task's run learns here that Temporal reset it (see reset-notice.ts).
    activate: (input, next) => next({ ...input, activation: withResetNotice(input.activation) }),
    dispose: (input, next) => (traced ? traced.internals[0].dispose!(input, next) : next(input)),
  };
  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
