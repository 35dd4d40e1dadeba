/**
 * What a model's reply says besides its answer, for the model client (./model): its text, its token usage with how
 * much of the prompt the server took from its cache, and whether it was cut off at the output token limit.
 */
import type { AIMessage } from '@langchain/core/messages';
import { ZERO_USAGE, type ModelUsage } from '../../common/model-protocol';

export function usageOf(message: AIMessage): ModelUsage {
  const u = message.usage_metadata;
  if (!u) return ZERO_USAGE;
  return { inputTokens: u.input_tokens ?? 0, outputTokens: u.output_tokens ?? 0, ...promptCacheOf(message) };
}

/**
 * How much of the prompt the server evaluated and how much it took from its cache, where it says: llama.cpp's
 * server in `timings` (`prompt_n`, `cache_n`), OpenAI in the usage's cached tokens.
 */
function promptCacheOf(message: AIMessage): Pick<ModelUsage, 'promptEvaluated' | 'promptCached'> {
  const raw = message.additional_kwargs?.__raw_response as { timings?: Record<string, unknown> } | undefined;
  const t = raw?.timings;
  const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
  const evaluated = count(t?.prompt_n);
  const cached = count(t?.cache_n);
  if (evaluated !== undefined && cached !== undefined) return { promptEvaluated: evaluated, promptCached: cached };
  const openai = count(message.usage_metadata?.input_token_details?.cache_read);
  const input = message.usage_metadata?.input_tokens ?? 0;
  return openai !== undefined ? { promptEvaluated: Math.max(0, input - openai), promptCached: openai } : {};
}

export function contentOf(message: AIMessage): string {
  return typeof message.content === 'string'
    ? message.content
    : message.content.map((p) => ('text' in p ? p.text : '')).join('');
}

/** The endpoint stopped the answer at its output token limit. */
export const cutShort = (message: AIMessage) => message.response_metadata?.finish_reason === 'length';
export const CUT_SHORT = "the answer was cut off at the endpoint's output token limit before it was complete";
