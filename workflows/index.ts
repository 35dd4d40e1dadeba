// Every export here becomes a workflow type: entry points only.
export { taskWorkflow } from './task/workflow';
export { sessionWorkflow } from './session/workflow';
export { summarizeMemoryWorkflow } from './summarize/workflow';
export { rewindWorkflow } from './rewind/workflow';
