/**
 * `summarizeMemoryWorkflow` (contract): folds older conversation turns into the running summary with the
 * `summarize_memory` node. A child of the session workflow, so each summarisation is its own run in the UI.
 *
 * Messages: none. Lifecycle: one model call, then it returns the new summary and how many characters it folded;
 * when the call fails for good the run fails, and the session keeps its memory as it was.
 */
import type { SummarizeInput, SummarizeResult } from '../../common/session';
import { totalChars } from '../session/memory';
import { modelNodes } from '../shared/activities';

export async function summarizeMemoryWorkflow(input: SummarizeInput): Promise<SummarizeResult> {
  const foldedChars = totalChars(input.turns);
  const res = await modelNodes.summarizeMemory.executeWithOptions(
    { summary: `summarise ${input.turns.length} turns` },
    [input]
  );
  return { summary: res.text, foldedChars, usage: res.usage };
}
