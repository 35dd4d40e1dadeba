/**
 * A traced run's workflow interceptors: Temporal's OpenTelemetry interceptors (`@temporalio/interceptors-opentelemetry`),
 * made neutral to replay. Loaded by shared/tracing-interceptors.ts, and only in a run whose start carried a trace
 * context, so that every traced run has its own copy of the OpenTelemetry API it configures (the modules all runs
 * share are frozen; shared/preload.ts).
 *
 * Why not the package's own classes as they are: each of their methods wraps the call in `async` functions, so
 * what it returns settles a few microtasks after the call itself does. That moves the commands that follow it
 * within a workflow task, and whether the wrapping happens at all depends on SDK flags. The flag for updates
 * (`OpenTelemetryInterceptorsInstrumentsAllMethods`) is first raised by the update validator, and an update the
 * validator rejects never reaches history: its workflow task is speculative and is dropped, flags and all, while
 * the worker's copy of the run keeps the flag on. The next accepted update is then wrapped (its completion lands
 * after, say, the `KleaStatus` search attribute it caused), but replay runs without the flag and completes it
 * first: "Nondeterminism error: Update machine does not handle this event: UpsertWorkflowSearchAttributes".
 *
 * So every method here starts its span, runs the next interceptor inside it, and returns exactly the promise the
 * next one returned: the span ends on a side branch of that promise. No flag is read and no microtask is added,
 * so a run replays the same with or without these interceptors, and histories recorded before them still replay.
 * Update validators, queries and Nexus operations (Klea starts none) are passed straight through. Span ids are
 * drawn from the workflow's seeded random, the same on every replay; Klea's workflows draw none themselves.
 */
import { context as otelContext, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import {
  ContinueAsNew,
  workflowInfo,
  type ActivityInput,
  type ContinueAsNewInput,
  type LocalActivityInput,
  type Next,
  type QueryInput,
  type SignalInput,
  type SignalWorkflowInput,
  type StartChildWorkflowExecutionInput,
  type StartNexusOperationInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import {
  extractContextFromHeaders,
  headersWithContext,
} from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import * as otel from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { useTraceContext } from './trace-context';

type Tracer = ReturnType<typeof trace.getTracer>;

function endSpan(span: Span, err: unknown, acceptable?: (err: unknown) => boolean): void {
  if (err === undefined || acceptable?.(err)) span.setStatus({ code: SpanStatusCode.OK });
  else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    if (err instanceof Error) span.recordException(err);
  }
  span.end();
}

/**
 * Runs `run` in a new span (a child of `parent`, else of the active context) and returns what `run` returned,
 * the same promise: the span ends on a side branch, so the caller sees no extra microtask.
 */
function inSpan<T>(
  tracer: Tracer,
  name: string,
  parent: Context | undefined,
  run: (span: Span) => Promise<T>,
  acceptable?: (err: unknown) => boolean
): Promise<T> {
  const base = parent ?? otelContext.active();
  const span = tracer.startSpan(name, undefined, base);
  let result: Promise<T>;
  try {
    result = otelContext.with(trace.setSpan(base, span), () => run(span));
  } catch (err) {
    endSpan(span, err, acceptable);
    throw err;
  }
  void result.then(
    () => endSpan(span, undefined),
    (err: unknown) => endSpan(span, err ?? new Error('rejected'), acceptable)
  );
  return result;
}

const isContinueAsNew = (err: unknown) => err instanceof ContinueAsNew;

/** The traced run's interceptors, built on Temporal's OpenTelemetry classes. */
export function tracingInterceptors(): Required<Pick<WorkflowInterceptors, 'inbound' | 'outbound' | 'internals'>> {
  useTraceContext(otelContext);
  class Inbound extends otel.OpenTelemetryInboundInterceptor {
    override execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
      return inSpan(
        this.tracer,
        `RunWorkflow:${workflowInfo().workflowType}`,
        extractContextFromHeaders(input.headers),
        () => next(input),
        isContinueAsNew
      );
    }

    override handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
      return inSpan(this.tracer, `HandleSignal:${input.signalName}`, extractContextFromHeaders(input.headers), () =>
        next(input)
      );
    }

    override handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) {
      return inSpan(this.tracer, `HandleUpdate:${input.name}`, extractContextFromHeaders(input.headers), (span) => {
        span.setAttribute('temporalUpdateId', input.updateId);
        return next(input);
      });
    }

    override validateUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>): void {
      next(input);
    }

    override handleQuery(input: QueryInput, next: Next<WorkflowInboundCallsInterceptor, 'handleQuery'>) {
      return next(input);
    }
  }

  class Outbound extends otel.OpenTelemetryOutboundInterceptor {
    override scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
      return inSpan(this.tracer, `StartActivity:${input.activityType}`, undefined, () =>
        next({ ...input, headers: headersWithContext(input.headers) })
      );
    }

    override scheduleLocalActivity(
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>
    ) {
      return inSpan(this.tracer, `StartActivity:${input.activityType}`, undefined, () =>
        next({ ...input, headers: headersWithContext(input.headers) })
      );
    }

    override startChildWorkflowExecution(
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>
    ) {
      return inSpan(this.tracer, `StartChildWorkflow:${input.workflowType}`, undefined, () =>
        next({ ...input, headers: headersWithContext(input.headers) })
      );
    }

    override continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
      return inSpan(
        this.tracer,
        `ContinueAsNew:${input.options.workflowType}`,
        undefined,
        () => next({ ...input, headers: headersWithContext(input.headers) }),
        isContinueAsNew
      );
    }

    override startNexusOperation(
      input: StartNexusOperationInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startNexusOperation'>
    ) {
      return next(input);
    }

    override signalWorkflow(
      input: SignalWorkflowInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>
    ) {
      return inSpan(this.tracer, `SignalWorkflow:${input.signalName}`, undefined, () =>
        next({ ...input, headers: headersWithContext(input.headers) })
      );
    }
  }

  return {
    inbound: [new Inbound()],
    outbound: [new Outbound()],
    internals: [new otel.OpenTelemetryInternalsInterceptor()],
  };
}
