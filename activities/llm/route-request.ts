/** Node `route_request`: the narrow entry router. Chat is answered inline; anything that needs work is a task. */
import { RouteRequestOutputSchema, type ModelUsage, type RouteRequestOutput } from '../../common/model-protocol';
import type { ModelClient } from './model';
import { turnsText, untrusted, withUntrustedRule } from './untrusted';

export interface RouteRequestInput {
  text: string;
  /** Running summary of older conversation, if any. */
  summary?: string;
  /** Recent turns, oldest first, already cut to the memory budget. */
  recentTurns?: Array<{ role: 'user' | 'assistant'; text: string }>;
}

export interface RouteRequestResult extends RouteRequestOutput {
  usage: ModelUsage;
}

export const ROUTE_REQUEST_SYSTEM = `You are the entry router of Klea, a research and coding agent.
Decide how the user's latest message is handled, then call the function route_request.
- route "chat": greetings, thanks, small talk, and questions you can answer well in a few sentences from general
  knowledge or the conversation so far, without reading files, running commands or using any tool. Put the
  complete reply in "reply".
- route "task": everything that needs investigation, files, code, commands, research, several steps, or care.
  Set "reply" to null; a planner will take it from here.
When unsure, choose "task".`;

export function routeRequestPrompt(input: RouteRequestInput) {
  const parts: string[] = [];
  if (input.summary)
    parts.push(`Summary of the earlier conversation:\n${untrusted('the running summary', input.summary)}`);
  if (input.recentTurns?.length) parts.push(`Recent conversation:\n${turnsText(input.recentTurns)}`);
  parts.push(`Latest user message:\n${input.text}`);
  return {
    node: 'route_request' as const,
    system: withUntrustedRule(ROUTE_REQUEST_SYSTEM),
    messages: [parts.join('\n\n')],
  };
}

export async function routeRequest(model: ModelClient, input: RouteRequestInput): Promise<RouteRequestResult> {
  const { value, usage } = await model.structured(
    routeRequestPrompt(input),
    RouteRequestOutputSchema,
    'Classify the latest user message as chat (answered now, with the reply) or task (planned and carried out).'
  );
  return { ...value, reply: value.route === 'chat' ? value.reply : null, usage };
}
