/**
 * The baseline Klea's step cost is measured against: an agent written by hand on Temporal, with nothing around
 * its model and tool calls. A task is one plan (model), then rounds of ready steps, each round one pick (model,
 * native tool calls) and its tool calls run together (MCP), then one answer (model). No permission gate, no path
 * checks, no events, no search attributes, no triage. Bundled on its own (see ./hand-agent.ts).
 *
 * On a cluster (`hostQueue`) the activities that use the project's MCP server (the pick lists its tools, the calls
 * run them) go to the queue of the host that holds the project, as the worker-specific task queue pattern has it;
 * plan and answer stay on the agent's own queue.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { HandAgentActivities, HandAgentStep } from './hand-agent';

const options = { startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } } as const;
const { plan, answer } = proxyActivities<HandAgentActivities>(options);

export interface HandAgentInput {
  projectDir: string;
  request: string;
  /** The task queue of the host that holds the project (a cluster); absent: the agent's own queue. */
  hostQueue?: string;
}

export async function handAgentTask(input: HandAgentInput): Promise<string> {
  const { pick, callTool } = proxyActivities<HandAgentActivities>(
    input.hostQueue ? { ...options, taskQueue: input.hostQueue } : options
  );
  const steps = await plan({ request: input.request });
  const results = new Map<string, string>();
  while (results.size < steps.length) {
    const ready = steps.filter((s) => !results.has(s.id) && s.dependsOn.every((d) => results.has(d)));
    if (!ready.length) throw new Error('the plan is stuck');
    const calls = await pick({
      request: input.request,
      projectDir: input.projectDir,
      steps: ready.map((s: HandAgentStep) => ({ ...s, previous: s.dependsOn.map((d) => results.get(d) ?? '') })),
    });
    const outputs = await Promise.all(
      calls.map((c) => callTool({ projectDir: input.projectDir, name: c.name, args: c.args }))
    );
    for (const s of ready)
      results.set(s.id, outputs.filter((_, i) => calls[i].stepId === s.id).join('\n') || 'no tool was called');
  }
  return answer({ request: input.request, results: [...results.values()] });
}
