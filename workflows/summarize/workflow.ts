/**
 * `summarizeMemoryWorkflow` (contract): folds older conversation turns into the running summary with the
 * `summarize_memory` node. A child of the session workflow, so each summarisation is its own run in the UI.
 *
 * Messages: none. Lifecycle: one model call, then it returns the new summary and how many characters it folded;
 * when the call fails for good the run fails, and the session keeps its memory as it was.
 */
import { modelNodes } from '../shared/activities';
import type { ModelUsage } from '../../common/model-protocol';
import type { Turn } from '../../common/session';

export interface SummarizeInput {
  summary: string;
  turns: Turn[];
}

export interface SummarizeResult {
  summary: string;
  foldedChars: number;
  /** The summariser's model call (absent from summaries made before the token ledger). */
  usage?: ModelUsage;
}

export async function summarizeMemoryWorkflow(input: SummarizeInput): Promise<SummarizeResult> {
  const foldedChars = input.turns.reduce((n, t) => n + t.text.length, 0);
  const res = await modelNodes.summarizeMemory.executeWithOptions(
    { summary: `summarise ${input.turns.length} turns` },
    [input]
  );
  return { summary: res.text, foldedChars, usage: res.usage };
}
