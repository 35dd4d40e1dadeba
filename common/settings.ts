/**
 * The settings a session and its tasks carry (mode, tool access, network, review policy). Kept apart from the
 * whole configuration schema (./config.ts re-exports them) because workflow code needs these alone, and every new
 * workflow run evaluates the modules it imports.
 */
import { z } from 'zod';

export const ModeSchema = z.enum(['general', 'scientific']);
export type Mode = z.infer<typeof ModeSchema>;
export const ToolAccessSchema = z.enum(['full', 'read_only']);
export type ToolAccess = z.infer<typeof ToolAccessSchema>;
/** Whether a sandboxed command may reach the network (a session setting; `tools.sandbox.network` is the default). */
export const NetworkSchema = z.enum(['off', 'on']);
export type Network = z.infer<typeof NetworkSchema>;
export const ReviewPolicySchema = z.enum(['plan', 'always']);
export type ReviewPolicy = z.infer<typeof ReviewPolicySchema>;
