/**
 * The worker's own check of a project directory, before anything runs there: whoever started the workflow (the
 * API checked already; the Temporal CLI did not), the directory must be the real path of a directory under
 * `project.allowed_roots`. Otherwise the activity fails for good with `ProjectNotAllowed`, and the workflow ends.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../common/config';
import { Failure } from '../../common/failures';
import { checkProjectDir } from '../../runtime/project-roots';

export function requireAllowedProject(config: Pick<Config, 'project'>, projectDir: string): void {
  const check = checkProjectDir(config, projectDir);
  if (check.ok && check.real === projectDir) return;
  const why = check.ok ? `is not a real path (it resolves to ${check.real})` : check.message;
  throw ApplicationFailure.nonRetryable(
    `project directory "${projectDir}" ${why}: this worker runs nothing there (project.allowed_roots)`,
    Failure.ProjectNotAllowed
  );
}
