/**
 * The worker's side of traces and metrics: activity interceptors, and the sinks workflows report through.
 *
 * - Traces (with `tracing`): Temporal's OpenTelemetry activity interceptor makes each activity a span continuing
 *   the workflow's trace; workflow spans leave through the `exporter` sink into the same span processor. Without
 *   tracing the `exporter` sink discards what the (always bundled) workflow interceptors produce.
 * - Metrics: tool calls are counted around the `callTool` activity (outcome, duration, sandbox refusals), task
 *   endings and permission decisions by the `kleaObserve` sink (workflows/shared/observe.ts). Model calls are
 *   counted where each request is made (activities/llm/model-observe.ts).
 */
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  InjectedSink,
  InjectedSinks,
  Next,
} from '@temporalio/worker';
import { createTraceState, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { CallToolInput } from '../activities/mcp/tools';
import type { ToolCallResult } from '../common/tools';
import { workerMetrics } from '../runtime/metrics';
import type { Tracing } from '../runtime/tracing';
import type { KleaObserveSinks } from '../workflows/shared/observe';

/** What a refused `run_command` says when the sandbox cannot run (tools/workspace/command-sandbox.ts). */
const SANDBOX_REFUSAL = 'run_command refused:';

/** Tool calls: counted and timed, and described on the activity's span (names only, never the arguments). */
class ToolCallObserver implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    if (this.ctx.info.activityType !== 'callTool') return next(input);
    const call = input.args[0] as Partial<CallToolInput> | undefined;
    const server = String(call?.server ?? 'unknown');
    const tool = String(call?.tool ?? 'unknown');
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'klea.tool.server': server, 'klea.tool.name': tool });
    const m = workerMetrics();
    const stop = m.toolCallSeconds.startTimer({ server, tool });
    let outcome = 'failed';
    try {
      const result = (await next(input)) as ToolCallResult;
      outcome = result.status;
      if (tool === 'run_command' && result.status === 'error' && result.text.includes(SANDBOX_REFUSAL))
        m.sandboxRefusals.inc();
      return result;
    } finally {
      stop();
      m.toolCalls.inc({ server, tool, outcome });
      span?.setAttribute('klea.tool.outcome', outcome);
    }
  }
}

export function activityInterceptors(tracing: Tracing | undefined): ActivityInterceptorsFactory[] {
  const factories: ActivityInterceptorsFactory[] = [];
  // First is outermost: the OpenTelemetry span is active while the observer runs.
  if (tracing)
    factories.push((ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }));
  factories.push((ctx) => ({ inbound: new ToolCallObserver(ctx) }));
  return factories;
}

/**
 * Workflow spans, out of the sandbox and into the process's span processor. Like the package's own
 * makeWorkflowExporter, but it names the run (id, type, task queue, namespace) instead of copying the whole
 * workflow info onto every span (search attributes, memo, the SDK's internals).
 */
function workflowSpanExporter(tracing: Tracing): InjectedSink<OpenTelemetryWorkflowExporter> {
  return {
    export: {
      fn: (info, spans) => {
        for (const { spanContext, attributes, ...rest } of spans) {
          const context = {
            ...spanContext,
            traceState: spanContext.traceState ? createTraceState(spanContext.traceState) : undefined,
          };
          const span: ReadableSpan = {
            ...rest,
            attributes: {
              ...attributes,
              temporalWorkflowId: info.workflowId,
              run_id: info.runId,
              temporalWorkflowType: info.workflowType,
              temporalTaskQueue: info.taskQueue,
              temporalNamespace: info.namespace,
            },
            spanContext: () => context,
            resource: tracing.resource,
          };
          tracing.spanProcessor.onEnd(span);
        }
      },
      callDuringReplay: false,
    },
  };
}

export function workerSinks(tracing: Tracing | undefined): InjectedSinks<KleaObserveSinks> & Record<string, unknown> {
  return {
    exporter: tracing ? workflowSpanExporter(tracing) : { export: { fn: () => undefined, callDuringReplay: false } },
    kleaObserve: {
      taskFinished: { fn: (_info, status) => workerMetrics().tasksFinished.inc({ status }), callDuringReplay: false },
      permissionDecided: {
        fn: (_info, decision) => workerMetrics().permissionDecisions.inc({ decision }),
        callDuringReplay: false,
      },
    },
  };
}
