/**
 * Which structured-output method the model client (./model) uses now: `model.structured_output` as set, and under
 * `auto` the move from tool calling to json_schema (./structured-output), once and for the rest of the worker's life,
 * the first time the endpoint answers a forced function with prose or refuses the request's tools.
 */
import type { StructuredOutput } from '../../common/config';
import type { NodeName } from '../../common/model-protocol';
import type { Logger } from '../../runtime/log';
import type { StructuredOutputMethod } from './structured-output';

/** The structured-output method in force, and the one-way move of `auto` to json_schema. */
export class StructuredOutputChoice {
  private current: StructuredOutputMethod;

  constructor(
    private readonly setting: StructuredOutput,
    private readonly modelName: string,
    private readonly log: Logger
  ) {
    this.current = setting === 'json_schema' ? 'json_schema' : 'tool_calling';
  }

  get method(): StructuredOutputMethod {
    return this.current;
  }

  /** Whether a failure of tool calling is to be met with json_schema (under auto); the first one is logged. */
  fallBack(node: NodeName, reason: string): boolean {
    if (this.setting !== 'auto') return false;
    if (this.current === 'tool_calling') {
      this.current = 'json_schema';
      this.log.warn('model endpoint does not honour forced function calls: structured output uses json_schema now', {
        model: this.modelName,
        node,
        reason,
        until: 'the worker stops (set model.structured_output to choose the method)',
      });
    }
    return true;
  }

  /** What to tell the user when forced tool calling is what failed. */
  get hint(): string {
    return this.setting === 'tool_calling'
      ? ' (model.structured_output is tool_calling: an endpoint that ignores or refuses forced function calls ' +
          'works with json_schema or auto)'
      : '';
  }
}
