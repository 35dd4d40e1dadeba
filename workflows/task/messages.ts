/** Messages of `taskWorkflow` (contract names). Payload types live in common/. */
import { defineQuery } from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import type { TaskState } from '../../common/task';

export const stateQuery = defineQuery<TaskState>('state');
export const eventsQuery = defineQuery<KleaEvent[], [{ after?: number }?]>('events');
