/**
 * A task's model requests remembered by the worker, at temperature 0: a request sent again word for word within the
 * same task is answered with the reply it got, not sent.
 *
 * At temperature 0 a server such as llama.cpp's answers the same request the same way (in one run, 27 of 29 repeated
 * requests got the answer they had got before), so sending it again mostly costs the time; the first answer is kept
 * on purpose, where a hosted model may vary. With a 0.5B model on 2 cores, a test-writing task asked for the same
 * whole file 19 times of its 60 requests (a rewrite refused twice is asked for again after every pick of the step
 * that changes nothing), about a third of its five minutes. A remembered reply carries no usage (no tokens were spent
 * on it, and none count towards the task's token budget) and is no request in the worker's metrics; the task's count
 * of model calls still counts it, as the answer it is.
 *
 * What is remembered is scoped to the task's run (its workflow's id and run id: a task run again after a rewind asks
 * afresh), kept in this worker's memory only (a task that moves to another worker asks again), bounded, and never an
 * error or an empty answer: such a request is sent again. A session's own requests (routing, summaries) are scoped to
 * the session's run the same way.
 */
import { createHash } from 'node:crypto';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { activityContext } from '../activity-context';

/** How many replies a worker keeps, over all its tasks (the one unused the longest goes first). */
export const MEMO_ENTRIES = 256;

export type Remember = (parts: readonly unknown[], run: () => Promise<AIMessage>) => Promise<AIMessage>;

/** A request's messages as the server gets them, for a key. Pure. */
export function messagesKey(messages: readonly BaseMessage[]): unknown[] {
  return messages.map((m) => [m.getType(), m.content]);
}

/**
 * The reply as it is answered again: a copy of its answer (its calls' arguments too, so no caller changes another's)
 * and of how it ended, with no usage (nothing was spent). Pure.
 */
export function rememberedReply(reply: AIMessage): AIMessage {
  const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
  return new AIMessage({
    content: copy(reply.content),
    tool_calls: copy(reply.tool_calls ?? []),
    invalid_tool_calls: copy(reply.invalid_tool_calls ?? []),
    response_metadata: { finish_reason: reply.response_metadata?.finish_reason },
  });
}

/** How an answer may end to be remembered: whole, with its calls, or cut at the output limit (asked again so). */
const KEPT_ENDINGS = new Set([undefined, null, 'stop', 'tool_calls', 'length']);

/**
 * Whether a reply is one to answer again: it holds text or calls, and it ended as an answer does (not a server's
 * `content_filter` or `error`, which a new request may not meet). Pure.
 */
export function worthRemembering(reply: AIMessage): boolean {
  const text = typeof reply.content === 'string' ? reply.content.trim() : reply.content.length;
  const calls = (reply.tool_calls?.length ?? 0) + (reply.invalid_tool_calls?.length ?? 0);
  return (!!text || calls > 0) && KEPT_ENDINGS.has(reply.response_metadata?.finish_reason as string | undefined);
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
    if (known) {
      // Used again, it is the newest: the oldest unused reply goes first.
      replies.delete(key);
      replies.set(key, known);
      return rememberedReply(known);
    }
    const reply = await run();
    if (!worthRemembering(reply)) return reply;
    replies.set(key, rememberedReply(reply));
    if (replies.size > entries) replies.delete(replies.keys().next().value as string);
    return reply;
  };
}
