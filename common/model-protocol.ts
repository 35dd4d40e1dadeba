/**
 * The model protocol (docs/architecture.md §7, contract): node names and the zod schemas of structured node outputs.
 * Every model request's system prompt starts with `# klea:<node>`; structured nodes force one function named
 * after the node whose arguments must satisfy the schema here.
 */
import { z } from 'zod';

export const NODE_NAMES = [
  'route_request',
  'write_plan',
  'pick_tools',
  'evaluate_step',
  'do_step',
  'compose_answer',
  'summarize_memory',
  'init_project',
  'write_file_content',
  'asks_changes',
  'wants_changes',
  'write_program',
] as const;
export type NodeName = (typeof NODE_NAMES)[number];

export const nodeHeader = (node: NodeName): string => `# klea:${node}`;

export const RouteRequestOutputSchema = z
  .strictObject({
    route: z.enum(['chat', 'task']).describe('"chat" when a short direct reply suffices; "task" when work is needed'),
    // Bounded like every model-written field (see common/plan.ts): a chat reply is a few sentences.
    reply: z.string().max(2000).nullable().describe('the reply for "chat"; null for "task"'),
  })
  .refine((v) => v.route === 'task' || (typeof v.reply === 'string' && v.reply.trim().length > 0), {
    message: 'reply must be a non-empty string when route is "chat"',
    path: ['reply'],
  });
export type RouteRequestOutput = z.infer<typeof RouteRequestOutputSchema>;

/**
 * Token usage as the server reports it (never estimated locally). Where the server says so, how much of the prompt
 * it evaluated and how much it took from its cache of an earlier prompt's unchanged beginning (llama.cpp's
 * `timings.prompt_n` and `timings.cache_n`; OpenAI's `prompt_tokens_details.cached_tokens`).
 */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  promptEvaluated?: number;
  promptCached?: number;
}

/** The optional counts of `a` and `b` summed, present when either has them. */
const cacheCounts = (a: Partial<ModelUsage>, b: Partial<ModelUsage>) => ({
  ...(a.promptEvaluated !== undefined || b.promptEvaluated !== undefined
    ? { promptEvaluated: (a.promptEvaluated ?? 0) + (b.promptEvaluated ?? 0) }
    : {}),
  ...(a.promptCached !== undefined || b.promptCached !== undefined
    ? { promptCached: (a.promptCached ?? 0) + (b.promptCached ?? 0) }
    : {}),
});

export const addUsage = (a: ModelUsage, b: ModelUsage): ModelUsage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  ...cacheCounts(a, b),
});
export const ZERO_USAGE: ModelUsage = { inputTokens: 0, outputTokens: 0 };

/** Tokens and model calls, as events, task and session state report them (the token ledger). */
export const CallUsageSchema = z.object({
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  modelCalls: z.number().int(),
  promptEvaluated: z
    .number()
    .int()
    .optional()
    .describe('prompt tokens the server evaluated (where it reports it: llama.cpp, OpenAI)'),
  promptCached: z
    .number()
    .int()
    .optional()
    .describe("prompt tokens the server took from its cache of an earlier prompt's unchanged beginning"),
});
export type CallUsage = z.infer<typeof CallUsageSchema>;
export const ZERO_CALL_USAGE: CallUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };

/** Usage of one model call, or of several when `modelCalls` says how many. */
export type MeteredUsage = ModelUsage & { modelCalls?: number };

/** `a` plus one model call's usage, or plus another ledger's totals. */
export const addCalls = (a: CallUsage, b: MeteredUsage): CallUsage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  modelCalls: a.modelCalls + (b.modelCalls ?? 1),
  ...cacheCounts(a, b),
});
