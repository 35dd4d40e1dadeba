/**
 * A task's model requests remembered by the worker, at temperature 0: a request sent again word for word within the
 * same task is answered with the reply it got, not sent.
 *
 * At temperature 0 the server answers the same request the same way, so sending it again only costs the time: with
 * a 0.5B model on 2 cores, a test-writing task asked for the same whole file 19 times of its 60 requests (a rewrite
 * refused twice is asked for again after every pick of the step that changes nothing), about a third of its five
 * minutes. A remembered reply carries no usage (no tokens were spent on it) and is no request in the worker's
 * metrics; the task's count of model calls still counts it, as the answer it is.
 *
 * What is remembered is scoped to the task's run (its workflow's id and run id: a task run again after a rewind
 * asks afresh), kept in this worker's memory only (a task that moves to another worker asks again), bounded, and
 * never an error: a failed request is sent again.
 */
import { createHash } from 'node:crypto';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { activityContext } from '../activity-context';

/** How many replies a worker keeps, over all its tasks (the oldest go first). */
export const MEMO_ENTRIES = 256;

export type Remember = (parts: readonly unknown[], run: () => Promise<AIMessage>) => Promise<AIMessage>;

/** A request's messages as the server gets them, for a key. Pure. */
export function messagesKey(messages: readonly BaseMessage[]): unknown[] {
  return messages.map((m) => [m.getType(), m.content]);
}

/** The reply as it is answered again: its answer and how it ended, with no usage (nothing was spent). Pure. */
export function rememberedReply(reply: AIMessage): AIMessage {
  return new AIMessage({
    content: reply.content,
    tool_calls: reply.tool_calls ?? [],
    invalid_tool_calls: reply.invalid_tool_calls ?? [],
    response_metadata: { finish_reason: reply.response_metadata?.finish_reason },
  });
}

/**
 * `remember(parts, run)`: the reply to the request `parts` describe (everything sent: node, messages, tools,
 * format), from `run` the first time in a task's run and from memory after. `scope` names the run (the workflow run
 * of the running activity by default); with none (outside an activity), or when not `enabled`, every request is sent.
 */
export function replyMemo(
  enabled: boolean,
  scope: () => string | undefined = () => {
    const run = activityContext()?.info.workflowExecution;
    return run ? `${run.workflowId}/${run.runId}` : undefined;
  },
  entries = MEMO_ENTRIES
): Remember {
  const replies = new Map<string, AIMessage>();
  return async (parts, run) => {
    const task = enabled ? scope() : undefined;
    if (task === undefined) return run();
    const key = createHash('sha256')
      .update(JSON.stringify([task, ...parts]))
      .digest('hex');
    const known = replies.get(key);
    if (known) return rememberedReply(known);
    const reply = await run();
    replies.set(key, reply);
    if (replies.size > entries) replies.delete(replies.keys().next().value as string);
    return reply;
  };
}
