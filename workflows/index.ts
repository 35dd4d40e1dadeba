// Every export here becomes a workflow type: entry points only.
export { taskWorkflow } from './task/workflow';
