/**
 * `taskWorkflow` (contract), id `task-<sessionId>-<n>`: one user task, from the request to the answer. Started by
 * a session for each task it routes, or alone (`POST /tasks`).
 *
 * Path (its start in ./begin.ts): `context` event → (route, for a standalone task) → plan (`write_plan`) → review
 * when the plan or the review policy asks for it (revise goes back to the Planner and the revised plan is reviewed
 * again; `Planning`) → rounds of ready steps (`StepRunner`), each step's questions asked first, replans and
 * after-step reviews between rounds → answer (`compose_answer`, labelled unverified). The task's state is one
 * `TaskRun` (./task-run.ts).
 *
 * Messages (./handlers.ts): signals (and same-named updates) `review`, `clarify`, `permission`; signal `cancel`;
 * signal `rewound` (applied by a rewind's reset to the run it makes); queries `state` and `events {after}`. Every
 * pause is a `condition` on workflow state, so it survives worker and server restarts. Status is mirrored into the
 * `KleaStatus` search attribute and the run's current details.
 *
 * Rewind (workflows/rewind; ./rewind-rounds.ts): each round of steps records where it began. A rewind restores the
 * files, then resets the workflow to the start of the round it goes back to. The new run learns of the reset where
 * it happened (`klea:reset`, shared/reset-notice.ts) and holds the round until the rewind's `rewound` signal says
 * what was restored; then it runs the round again (new calls, new idempotency keys) or ends `rewound`.
 *
 * Lifecycle: the result says `done` (with the answer), `failed` (with the error), `cancelled` (by the `cancel`
 * signal) or `rewound`; the run itself completes in each, so a session reads why. Only invalid input fails the
 * run, and a cancellation of the run itself (not the signal) is rethrown.
 *
 * A long task continues as new between rounds of steps, when Temporal suggests it or its history has passed
 * `continueAsNewAfterEvents` (never inside a batch, a review or a permission pause, and after its message handlers
 * have finished), handing everything to the next run (`TaskRun.carry`): plan, progress, answers, grants,
 * decisions, usage and the tail of the event log, so `seq` goes on without a gap. The workflow id stays, so
 * clients, signals and the session's wait on its child follow the latest run; `state.runs` names the earlier runs.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import { taskEndedSignal } from '../session/messages';
import { Failure, failureCode, failureMessage } from '../../common/failures';
import { TaskInputSchema, type TaskInput, type TaskResult } from '../../common/task';
import { modelNodes } from '../shared/activities';
import { parseInput } from '../shared/payloads';
import { beginTask } from './begin';
import { setTaskHandlers } from './handlers';
import { allFinished, nextRound } from './plan-graph';
import { Planning } from './planning';
import { answerWithAccess, answerWithShortfalls, nothingAchievedAnswer } from './status';
import { StepRunner } from './step-runner';
import { TaskRun } from './task-run';

export async function taskWorkflow(rawInput: TaskInput): Promise<TaskResult> {
  const task = new TaskRun(parseInput(TaskInputSchema, 'invalid task input', rawInput));
  const work = new CancellationScope();
  setTaskHandlers(task, work);
  const result = await runToEnd(task, work);
  // Temporal tells a parent nothing of a run a reset made: the session would wait for this task forever.
  if (task.rewinds.wasReset) await reportEnd(result);
  return result;
}

async function runToEnd(task: TaskRun, work: CancellationScope): Promise<TaskResult> {
  try {
    return await work.run(() => runTask(task));
  } catch (err) {
    // Not a failure: this run hands the task to the next one.
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err) && task.rewinds.ends) return task.endRewound();
    if (isCancellation(err) && task.cancelReason !== null) return task.cancelled();
    if (isCancellation(err)) throw err;
    return task.fail(failureCode(err, Failure.TaskFailed), failureMessage(err));
  }
}

/** Tells the task's session how it ended (the session may have ended or gone to sleep: then nobody listens). */
async function reportEnd(result: TaskResult): Promise<void> {
  const parent = workflowInfo().parent;
  if (!parent) return;
  await getExternalWorkflowHandle(parent.workflowId)
    .signal(taskEndedSignal, result)
    .catch(() => undefined);
}

async function runTask(task: TaskRun): Promise<TaskResult> {
  const { input, progress, questions } = task;
  const planning = new Planning(task);
  const runner = new StepRunner(task);
  if (task.carried) {
    task.setStatus('running', `continued in run ${task.runNumber}`);
  } else {
    const ended = await beginTask(task, planning);
    if (ended) return ended;
  }

  for (;;) {
    // Between rounds nothing is open: the history may be handed to a fresh run here.
    if (!planning.holdsFirstPick && task.dueToContinue()) await continueTask(task, planning);
    await planning.keepToBudget();
    const current = progress.statuses();
    if (allFinished(progress.graph, current)) break;
    const { runnable, asking } = nextRound(progress.graph, current, (id) => questions.isAnswered(id));
    if (!questions.pending && asking.length) task.ask(asking[0]);
    if (runnable.length) {
      const point = task.rewinds.point();
      await task.rewinds.before();
      // A rewind without re-run went back to this round: it ends here, before any of the round starts.
      if (task.rewinds.ends) return task.endRewound();
      task.rewinds.start(
        runnable.map((s) => s.id),
        point
      );
      const firstPick = planning.takeFirstPick(runnable);
      // A re-run from a rewind asks the model again, even where the Planner picked with the plan.
      await runner.runBatch(runnable, task.rewinds.rerunning ? null : firstPick);
    } else if (questions.pending) {
      const waitingFor = questions.pending.stepId;
      task.setStatus('awaiting_clarification', `step ${waitingFor}`);
      await condition(() => questions.isAnswered(waitingFor));
    } else {
      return task.fail(Failure.PlanStuck, 'no step can run: the plan is stuck');
    }
    const answered = questions.takeAnswered();
    if (answered) progress.answered(answered);

    const replan = progress.takeReplan();
    if (replan) {
      // A Planner that cannot write a usable plan leaves the work done standing: the answer says what is missing.
      if (!(await planning.replan(replan.reason, replan.failedCheck))) break;
      questions.reset();
      await planning.reviewBeforeWork();
      continue;
    }
    await planning.reviewCheckpoints();
  }

  // A task none of whose steps achieved anything ends failed, saying plainly what stopped each step.
  const missed = progress.notAchieved();
  if (progress.graph.length && missed.length === progress.graph.length)
    return task.nothingAchieved(answerWithAccess(nothingAchievedAnswer(input.prompt, missed), input.toolAccess));
  task.setStatus('running', 'composing the answer');
  const composed = await task.home(modelNodes.composeAnswer).executeWithOptions({ summary: 'answer' }, [
    {
      projectDir: input.projectDir,
      request: input.prompt,
      goal: progress.goal!,
      results: progress.allResults(),
      toolAccess: input.toolAccess,
    },
  ]);
  task.giveAnswer(
    answerWithAccess(answerWithShortfalls(composed.text, missed, progress.graph.length), input.toolAccess),
    task.meter.modelCall(composed.usage)
  );
  return task.finish('done');
}

/**
 * Hands the task to a fresh run of its workflow, once the message handlers in flight have finished (a decision
 * that arrives meanwhile is applied first, and carried).
 */
async function continueTask(task: TaskRun, planning: Planning): Promise<never> {
  await condition(allHandlersFinished);
  return continueAsNew<typeof taskWorkflow>({ ...task.input, carry: task.carry(planning.currentBudget) });
}
