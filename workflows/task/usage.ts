/** What a task has used so far (pure): model tokens and calls, and tool calls. */
import { addUsage, ZERO_USAGE, type ModelUsage } from '../../common/model-protocol';
import type { TaskState } from '../../common/task';

export class UsageMeter {
  private usage: ModelUsage = ZERO_USAGE;
  private modelCalls = 0;
  private toolCalls = 0;

  /** One model call, with the usage the server reported for it. */
  modelCall(u: ModelUsage): void {
    this.usage = addUsage(this.usage, u);
    this.modelCalls++;
  }

  /** One tool call dispatched (a call the user denied never is). */
  toolCall(): void {
    this.toolCalls++;
  }

  totals(): TaskState['usage'] {
    return { ...this.usage, modelCalls: this.modelCalls, toolCalls: this.toolCalls };
  }
}
