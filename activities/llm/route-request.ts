/** Node `route_request`: the narrow entry router. Chat is answered inline; anything that needs work is a task. */
import {
  RouteRequestOutputSchema,
  ZERO_USAGE,
  type MeteredUsage,
  type RouteRequestOutput,
} from '../../common/model-protocol';
import type { ModelClient } from './model';
import { turnsText, untrusted, withUntrustedRule } from './untrusted';

export interface RouteRequestInput {
  text: string;
  /** The session's project: a message that names one of its files is work, without asking the model. */
  projectDir?: string;
  /** Running summary of older conversation, if any. */
  summary?: string;
  /** Recent turns, oldest first, already cut to the memory budget. */
  recentTurns?: Array<{ role: 'user' | 'assistant'; text: string }>;
}

export interface RouteRequestResult extends RouteRequestOutput {
  usage: MeteredUsage;
}

export const ROUTE_REQUEST_SYSTEM = `You are the entry router of Klea, a research and coding agent.
Decide how the user's latest message is handled, then call the function route_request.
- route "chat": greetings, thanks, small talk, and questions you can answer well in a few sentences from general
  knowledge or the conversation so far, without reading files, running commands or using any tool. Put the
  complete reply in "reply".
- route "task": everything that needs investigation, files, code, commands, research, several steps, or care,
  and anything about the user's project. Set "reply" to null; a planner will take it from here.
When unsure, choose "task".`;

/** A file name in prose (`notes.txt`, `src/app.ts`) or a dot-file (`.env`, `.gitignore`), in any language. */
const FILE_LIKE =
  /(?<![\w./-])(?:\.?\.\/)?(?:[\w-]+\/)*(?:[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}|[\w-]\.[A-Za-z][A-Za-z0-9]{1,7}|\.[A-Za-z][\w-]{1,30})(?![\w/-]|\.\w)/;
/** Code or a command in backticks. */
const CODE_SPAN = /`[^`\n]+`/;

/**
 * Whether a message is work whatever its language: it names a file of the project (`projectFiles`, as listed), any
 * file name or dot-file, or holds a command or code in backticks. Such a message is a task, decided without a model
 * call; anything else is left to the router.
 */
export function namesWork(text: string, projectFiles: readonly string[] = []): boolean {
  if (FILE_LIKE.test(text) || CODE_SPAN.test(text)) return true;
  return projectFiles.some((f) => {
    const base = f.slice(f.lastIndexOf('/') + 1);
    return (
      base.length >= 3 && new RegExp(`(?<![\\w.-])${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).test(text)
    );
  });
}

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

export async function routeRequest(
  model: ModelClient,
  input: RouteRequestInput,
  projectFiles: readonly string[] = []
): Promise<RouteRequestResult> {
  // Decided here: no model call to count.
  if (namesWork(input.text, projectFiles))
    return { route: 'task', reply: null, usage: { ...ZERO_USAGE, modelCalls: 0 } };
  const { value, usage } = await model.structured(
    routeRequestPrompt(input),
    RouteRequestOutputSchema,
    'Classify the latest user message as chat (answered now, with the reply) or task (planned and carried out).'
  );
  return { ...value, reply: value.route === 'chat' ? value.reply : null, usage };
}
