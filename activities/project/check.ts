/**
 * The worker's project check and the facts the task's `context` event reports (the project instruction file in use,
 * where this worker runs commands). A task on one machine checks with a local activity of its own; a task with a
 * home on a cluster has the check made by its first activity there (the route or the plan, `checkProject`), which
 * saves the task a round trip through the cluster: the directory is refused before any model call, as before, and
 * the facts come back with the activity's result.
 */
import type { Config } from '../../common/config';
import { sandboxNote, type ProjectContextInfo } from '../../common/sandbox-status';
import { sandboxReport } from '../../runtime/sandbox-probe';
import { requireAllowedProject } from './allowed';
import type { ProjectContextReader } from './context';

/** What an activity that may make the task's project check is asked. */
export interface ProjectCheckAsk {
  projectDir?: string;
  /** Check the project first and return its facts as `project` (a task's first activity at its home). */
  checkProject?: boolean;
}

export function createProjectCheck(config: Config, projectContext: ProjectContextReader) {
  /** Refuses a directory outside `project.allowed_roots`; otherwise its facts for the `context` event. */
  async function projectInfo(projectDir: string): Promise<ProjectContextInfo> {
    requireAllowedProject(config, projectDir);
    const [ctx, sandbox] = await Promise.all([projectContext.read(projectDir), sandboxReport(config.tools.sandbox)]);
    return { file: ctx.file, sandbox: sandbox.status, sandboxNote: sandboxNote(sandbox) };
  }

  /**
   * Runs `work` after the project check when the activity is asked for it: a refused directory fails the activity
   * for good before `work` starts; facts that could not be read are left out (the task goes on without them, as it
   * does when its own check fails for any other reason).
   */
  async function checkedFirst<T extends object>(
    ask: ProjectCheckAsk,
    work: () => Promise<T>
  ): Promise<T & { project?: ProjectContextInfo }> {
    if (!ask.checkProject || !ask.projectDir) return work();
    requireAllowedProject(config, ask.projectDir);
    const info = projectInfo(ask.projectDir).catch(() => undefined);
    const done = await work();
    const project = await info;
    return project ? { ...done, project } : done;
  }

  return { projectInfo, checkedFirst };
}
