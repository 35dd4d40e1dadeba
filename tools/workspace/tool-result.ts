/** The shape of every workspace tool's answer, and the error a tool throws to answer with a refusal. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A refusal or a mistake in the arguments: its message goes back to the model as an `isError` result. */
export class ToolError extends Error {}

export const text = (t: string, structured?: Record<string, unknown>, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(structured ? { structuredContent: structured } : {}),
  ...(isError ? { isError: true } : {}),
});
