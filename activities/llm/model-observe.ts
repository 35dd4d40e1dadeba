/**
 * Each model request the model client (./model) makes, observed: as a span of its own (node, model, tokens as the
 * model reported them), in the worker's metrics, and in the token totals of the activity's span.
 */
import { SpanKind, trace, type Span } from '@opentelemetry/api';
import type { AIMessage } from '@langchain/core/messages';
import type { NodeName } from '../../common/model-protocol';
import { workerMetrics } from '../../runtime/metrics';
import { inSpan } from '../../runtime/tracing';
import { usageOf } from './model-reply';

/** `observed(node, run)`: one request of `run`, observed, for the client of the model named `modelName`. */
export function observeModelCalls(modelName: string) {
  /** Tokens per activity span, for the totals the activity's span shows (weak: spans come and go). */
  const activityTokens = new WeakMap<Span, { node: NodeName; inputTokens: number; outputTokens: number }>();

  /**
   * One model request as a span (node, model, tokens as the model reported them) and in the worker's metrics
   * (klea_model_calls_total and klea_model_tokens_total for answered requests, klea_model_errors_total for failed).
   * The activity's span gets the node, the model and the activity's token totals too (re-asks included).
   */
  function observed(node: NodeName, run: () => Promise<AIMessage>): Promise<AIMessage> {
    const labels = { node, model: modelName };
    const metrics = workerMetrics();
    const activity = trace.getActiveSpan();
    return inSpan(
      `chat ${modelName}`,
      { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': modelName, 'klea.node': node },
      async (span) => {
        let reply: AIMessage;
        try {
          reply = await run();
        } catch (err) {
          metrics.modelErrors.inc(labels);
          throw err;
        }
        const usage = usageOf(reply);
        metrics.modelCalls.inc(labels);
        metrics.modelTokens.inc({ ...labels, direction: 'input' }, usage.inputTokens);
        metrics.modelTokens.inc({ ...labels, direction: 'output' }, usage.outputTokens);
        span.setAttributes({
          'gen_ai.usage.input_tokens': usage.inputTokens,
          'gen_ai.usage.output_tokens': usage.outputTokens,
        });
        if (activity) addToActivitySpan(activity, node, usage);
        return reply;
      },
      SpanKind.CLIENT
    );
  }

  function addToActivitySpan(activity: Span, node: NodeName, usage: { inputTokens: number; outputTokens: number }) {
    // An activity that makes calls of several nodes (the Planner's, with the first tool picks) is named by its first.
    const sum = activityTokens.get(activity) ?? { node, inputTokens: 0, outputTokens: 0 };
    sum.inputTokens += usage.inputTokens;
    sum.outputTokens += usage.outputTokens;
    activityTokens.set(activity, sum);
    activity.setAttributes({
      'klea.node': sum.node,
      'gen_ai.request.model': modelName,
      'gen_ai.usage.input_tokens': sum.inputTokens,
      'gen_ai.usage.output_tokens': sum.outputTokens,
    });
  }

  return observed;
}
