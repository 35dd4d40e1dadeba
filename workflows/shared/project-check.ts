/**
 * The project check both workflows begin with (workflow code: it schedules `projectContextInfo`). The worker checks
 * the project directory itself, so a session or task started outside the API with a directory outside
 * `project.allowed_roots` ends before it runs a tool.
 */
import type { ProjectContextInfo } from '../../common/sandbox-status';
import { Failure, failureCode, failureMessage } from '../../common/failures';
import { type localProjectFacts, projectFacts } from './activities';

/** What is known of the project's context: everything, or (when the check failed otherwise) no file and no sandbox. */
export type KnownContext = ProjectContextInfo | { file: null; sandbox: undefined; sandboxNote: undefined };

/** The project's context file and where commands run, and why the worker refuses the directory (null: it does not). */
export interface ProjectCheck {
  refused: string | null;
  context: KnownContext;
}

/** Any other failure only means the context is not known: the run goes on without it. */
export const UNKNOWN_CONTEXT: KnownContext = Object.freeze({ file: null, sandbox: undefined, sandboxNote: undefined });

/** The activity that reads the project's context, however it is scheduled. */
export interface ContextReader {
  executeWithOptions(options: { summary: string }, args: [{ projectDir: string }]): Promise<ProjectContextInfo>;
}

/**
 * `read` is the activity that reads it: a regular one (sessions; at the project's home on a cluster), or a local one
 * (tasks on one machine, which start with it).
 */
export async function checkProject(
  projectDir: string,
  read: ContextReader | typeof localProjectFacts.projectContextInfo = projectFacts.projectContextInfo
): Promise<ProjectCheck> {
  try {
    const context = await read.executeWithOptions({ summary: 'project context' }, [{ projectDir }]);
    return { refused: null, context };
  } catch (err) {
    const refused = failureCode(err, '') === Failure.ProjectNotAllowed ? failureMessage(err) : null;
    return { refused, context: UNKNOWN_CONTEXT };
  }
}
