/** What a task has used so far (pure): model tokens and calls (in all, and per step), and tool calls. */
import { addCalls, ZERO_CALL_USAGE, type CallUsage, type MeteredUsage } from '../../common/model-protocol';
import type { TaskCarry, TaskState } from '../../common/task';

export class UsageMeter {
  private usage: CallUsage = ZERO_CALL_USAGE;
  private toolCalls = 0;
  /** Per step, since its last `step_finished`. */
  private readonly steps = new Map<string, CallUsage>();

  /**
   * @param onCall told after every model call (the workflow publishes the totals as search attributes).
   * @param carried what an earlier run of the task had used (continue-as-new).
   */
  constructor(
    private readonly onCall: () => void = () => undefined,
    carried?: TaskCarry['usage']
  ) {
    if (!carried) return;
    this.usage = carried.models;
    this.toolCalls = carried.toolCalls;
    for (const [id, u] of Object.entries(carried.steps)) this.steps.set(id, u);
  }

  carry(): TaskCarry['usage'] {
    return { models: this.usage, toolCalls: this.toolCalls, steps: Object.fromEntries(this.steps) };
  }

  /** One model call, with the usage the server reported for it; `stepId` names the step it was made for. */
  modelCall(u: MeteredUsage, stepId?: string): CallUsage {
    this.usage = addCalls(this.usage, u);
    if (stepId) this.steps.set(stepId, addCalls(this.steps.get(stepId) ?? ZERO_CALL_USAGE, u));
    this.onCall();
    return addCalls(ZERO_CALL_USAGE, u);
  }

  /** The step's model calls since it last finished (for its `step_finished` event), and starts it afresh. */
  takeStep(stepId: string): CallUsage {
    const u = this.steps.get(stepId) ?? ZERO_CALL_USAGE;
    this.steps.delete(stepId);
    return u;
  }

  /** One tool call dispatched (a call the user denied never is). */
  toolCall(): void {
    this.toolCalls++;
  }

  /** Input plus output tokens so far (what a budget counts). */
  get tokens(): number {
    return this.usage.inputTokens + this.usage.outputTokens;
  }

  get models(): CallUsage {
    return this.usage;
  }

  totals(): TaskState['usage'] {
    return { ...this.usage, toolCalls: this.toolCalls };
  }
}
