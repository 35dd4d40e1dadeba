/**
 * The start of a task's first run (workflow code): the `context` event, the project check, the route (for a
 * standalone task), the plan and its review before work.
 */
import { Failure, failureCode } from '../../common/failures';
import type { TaskResult } from '../../common/task';
import { localProjectFacts, modelNodes, projectFacts } from '../shared/activities';
import type { ProjectContextInfo } from '../../common/sandbox-status';
import { checkProject, UNKNOWN_CONTEXT, type KnownContext } from '../shared/project-check';
import { SCIENTIFIC_MODE_EXPLANATION } from './modes';
import type { Planning } from './planning';
import type { TaskRun } from './task-run';

/**
 * The task's first run up to its work loop: the `context` event, the route (for a standalone task), the plan and
 * its review before work. A result when the task ends here (a declined mode, a chat reply, a refused project).
 */
export async function beginTask(task: TaskRun, planning: Planning): Promise<TaskResult | null> {
  const { input, log } = task;
  if (task.ignoredGrants)
    log.emit({
      type: 'error',
      code: Failure.GrantsIgnored,
      message: `the ${task.ignoredGrants} grant(s) in the task's input were ignored: only a session hands grants to its tasks`,
    });
  const declined = input.mode === 'scientific';
  const context = (known: KnownContext) =>
    log.emit({
      type: 'context',
      mode: input.mode,
      // A mode that cannot run is declined below, never swapped for another: requested and effective agree.
      requestedMode: input.mode,
      modeNote: declined ? SCIENTIFIC_MODE_EXPLANATION : null,
      toolAccess: input.toolAccess,
      network: input.network,
      sandbox: known.sandbox,
      sandboxNote: known.sandboxNote,
      projectDir: input.projectDir,
      projectContextFile: known.file,
    });
  // On one machine the project check is a local activity of the workflow's worker. On a cluster it runs where the
  // project is, made by the task's first activity there (the route or the plan), which tells the facts with its
  // result: a separate activity would cost every task a round trip through the cluster.
  let checkAtHome = Boolean(input.home) && !declined;
  const checked = (project: ProjectContextInfo | undefined) => {
    checkAtHome = false;
    context(project ?? UNKNOWN_CONTEXT);
  };
  if (!checkAtHome) {
    const project = await checkProject(
      input.projectDir,
      input.home ? task.home(projectFacts.projectContextInfo) : localProjectFacts.projectContextInfo
    );
    if (project.refused) return task.fail(Failure.ProjectNotAllowed, project.refused);
    context(project.context);
  }
  if (declined) {
    // Never a silently ungrounded answer: the request is declined with the reason.
    task.giveAnswer(SCIENTIFIC_MODE_EXPLANATION);
    return task.finish('done', 'scientific mode declined');
  }

  try {
    if (input.route) {
      task.setStatus('routing', 'deciding between a direct reply and a planned task');
      const route = await task.home(modelNodes.routeRequest).executeWithOptions({ summary: 'route request' }, [
        {
          text: input.prompt,
          projectDir: input.projectDir,
          summary: input.summary || undefined,
          recentTurns: input.recentTurns.length ? input.recentTurns : undefined,
          ...(checkAtHome ? { checkProject: true } : {}),
        },
      ]);
      if (checkAtHome) checked(route.project);
      const routed = task.meter.modelCall(route.usage);
      if (route.route === 'chat' && route.reply) {
        task.giveAnswer(route.reply, routed);
        return task.finish('done');
      }
    }

    await planning.plan(checkAtHome ? checked : undefined);
  } catch (err) {
    // The route or the plan failed before it told the project's facts: the task still says what it ran with (as
    // when its own check could not read them), unless the project was refused.
    if (checkAtHome && failureCode(err, '') !== Failure.ProjectNotAllowed) checked(undefined);
    throw err;
  }
  await planning.reviewBeforeWork();
  return null;
}
