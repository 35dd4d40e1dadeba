/**
 * Planning and plan review of `taskWorkflow` (workflow code: it schedules `write_plan` and waits on the review gate).
 *
 * The Planner writes the plan, and writes it again to replan or to revise it; each plan is adopted and told as an
 * event (`plan` or `replanned`). A plan is reviewed before work when the Planner or the review policy asks, after
 * the steps it names (`checkpoint`), and when the task has used its token budget (`budget`); each review goes on
 * until the user approves, every revision being presented again with what changed and the feedback.
 */
import { condition, isCancellation } from '@temporalio/workflow';
import { Failure, failureCode, failureMessage } from '../../common/failures';
import { pickedFor, type FirstPick, type FirstPickAsk } from '../../common/first-pick';
import type { Plan, PlanStep } from '../../common/plan';
import { planDiff, type PlanDiff } from '../../common/plan-diff';
import type { CallUsage } from '../../common/model-protocol';
import type { ProjectContextInfo } from '../../common/sandbox-status';
import type { ReviewDecision, StepResultView } from '../../common/task';
import { modelNodes } from '../shared/activities';
import { repeatsFailedPlan } from './plan-graph';
import type { ReviewReason } from './review-gate';
import type { TaskRun } from './task-run';

/** A plan revised at the user's request: what changed against the reviewed plan, and the feedback. */
export interface Revision {
  diff: PlanDiff;
  feedback: string;
}

/** What a plan is asked for with, besides the request. */
interface WriteAsk {
  /** Why the plan is written again (a replan's reason, the user's revision). */
  feedback?: string;
  finished?: StepResultView[];
  firstPick?: FirstPickAsk;
  feedbackFrom?: 'replan';
  /** The check whose failure asked for a new plan. */
  failedCheck?: string;
  /** The task's project check, made by the Planner's activity first (`Planning.plan`). */
  checkProject?: boolean;
}

/** A plan as the Planner wrote it, with the usage of the call that wrote it. */
export interface WrittenPlan {
  plan: Plan;
  usage: CallUsage;
  /** What was repaired in the Planner's output rather than asked again (common/plan.ts `repairPlan`). */
  repairs?: string[];
}

export class Planning {
  /** Tokens the task may use before it pauses for the user; approving a pause raises it by the same again. */
  private budget: number | null;
  /** The first round's tool picks, when the Planner's activity made them with the plan (common/first-pick.ts). */
  private firstPick: FirstPick | null = null;

  constructor(private readonly task: TaskRun) {
    this.budget = task.carried ? task.carried.budget : task.input.maxTokens;
  }

  /** The token budget in force now (raised by each approved budget review), for the next run to keep. */
  get currentBudget(): number | null {
    return this.budget;
  }

  /** Whether first picks made with the plan wait for their round (the task does not continue as new then). */
  get holdsFirstPick(): boolean {
    return this.firstPick !== null;
  }

  /**
   * The Planner's first plan for the request, adopted. The Planner's activity also picks the first round's tools
   * when nothing has to happen before that round: those picks are kept for `takeFirstPick`. With `checked` (a task
   * at its home on a cluster that has not checked its project yet), the activity checks the project first and
   * `checked` is told its facts before the plan is.
   */
  async plan(checked?: (project: ProjectContextInfo | undefined) => void): Promise<void> {
    const { input, meter } = this.task;
    const firstPick: FirstPickAsk | undefined =
      input.review !== 'always'
        ? { budgetLeft: this.budget === null || input.maxTokens === null ? null : this.budget - meter.tokens }
        : undefined;
    const written = await this.write(firstPick ? 'plan · first tool picks if no review is due' : 'plan', {
      firstPick,
      checkProject: checked !== undefined,
    });
    checked?.(written.project);
    this.adopt(this.metered(written));
    this.firstPick = written.firstPick ?? null;
  }

  /**
   * The first picks for `batch` if they were made for exactly its tool steps, once; any other picks (or any, when
   * something came between the plan and its first round) are counted on the first step they were made for, whose
   * `step_finished` then carries them, and dropped.
   */
  takeFirstPick(batch: PlanStep[] = []): FirstPick | null {
    const picks = this.firstPick;
    this.firstPick = null;
    if (
      !picks ||
      pickedFor(
        picks,
        batch.filter((s) => s.needs_tool)
      )
    )
      return picks;
    this.task.meter.modelCall(picks.usage, picks.stepIds[0]);
    return null;
  }

  /**
   * A new plan after a step that could not be completed, told as `replanned` with the reason. False when the
   * Planner could not write a usable one: the work done stands, and the task goes on to its answer (which says
   * what was not achieved) rather than failing over its plan's bookkeeping. `failedCheck`: the check whose failure
   * asked for it, for the Planner's help (a new plan that changes nothing cannot make it pass).
   */
  async replan(reason: string, failedCheck?: string): Promise<boolean> {
    const { progress, log } = this.task;
    let written;
    try {
      written = await this.write('replan', {
        feedback: `A step could not be completed: ${reason}`,
        finished: progress.finishedViews(),
        feedbackFrom: 'replan',
        failedCheck,
      });
    } catch (err) {
      if (isCancellation(err) || failureCode(err, '') !== Failure.ModelOutputInvalid) throw err;
      log.emit({
        type: 'error',
        code: Failure.ModelOutputInvalid,
        message: `the Planner could not write a usable new plan (${failureMessage(err)}); the answer is composed from the steps that finished`,
      });
      return false;
    }
    const metered = this.metered(written);
    if (repeatsFailedPlan(metered.plan, progress.plan, (s) => progress.previousFailure(s.id) !== undefined)) {
      log.emit({
        type: 'error',
        code: Failure.PlanRepeated,
        message: `the Planner wrote again the plan whose step could not be completed (${reason}); it is not run again, and the answer is composed from the steps that finished`,
      });
      return false;
    }
    this.adopt(metered, reason);
    return true;
  }

  /** Reviews the current plan before work when the Planner asked for it or the review policy says so. */
  async reviewBeforeWork(): Promise<void> {
    const { progress, input } = this.task;
    const why = progress.plan?.review.before_work ? 'before_work' : input.review === 'always' ? 'policy' : null;
    if (!why) return;
    this.takeFirstPick();
    await this.reviewUntilApproved(why);
  }

  /** Reviews the results after the steps the plan asked to pause after, if any are due. */
  async reviewCheckpoints(): Promise<void> {
    const due = this.task.progress.dueCheckpoints();
    if (due.length) await this.reviewUntilApproved('checkpoint', due);
  }

  /**
   * A task that has used its token budget pauses before its next model call: a review of reason `budget` says what
   * was spent. Approving goes on with the budget raised by the same amount again; revising replans with the
   * feedback (and is reviewed); cancelling ends the task.
   */
  async keepToBudget(): Promise<void> {
    const { input, meter } = this.task;
    if (this.budget === null || input.maxTokens === null || meter.tokens < this.budget) return;
    this.takeFirstPick();
    await this.pauseForBudget(this.budget, input.maxTokens);
  }

  private async pauseForBudget(budget: number, step: number): Promise<void> {
    await this.reviewUntilApproved('budget');
    while (budget <= this.task.meter.tokens) budget += step;
    this.budget = budget;
  }

  /** Asks the Planner for a plan. */
  private write(summary: string, ask: WriteAsk = {}) {
    const { input, progress } = this.task;
    const { feedback, finished, firstPick, feedbackFrom, failedCheck } = ask;
    this.task.setStatus('planning', summary);
    return this.task.home(modelNodes.writePlan).executeWithOptions({ summary }, [
      {
        projectDir: input.projectDir,
        toolAccess: input.toolAccess,
        request: input.prompt,
        summary: input.summary || undefined,
        recentTurns: input.recentTurns.length ? input.recentTurns : undefined,
        previousPlan: progress.plan ?? undefined,
        feedback,
        ...(feedbackFrom ? { feedbackFrom } : {}),
        ...(failedCheck ? { failedCheck, changedFiles: progress.changedFiles() } : {}),
        finished: finished?.length ? finished : undefined,
        firstPick,
        ...(ask.checkProject ? { checkProject: true } : {}),
      },
    ]);
  }

  /** A plan the Planner wrote, its call counted. */
  private metered(res: Awaited<ReturnType<Planning['write']>>): WrittenPlan {
    return { plan: res.plan, usage: this.task.meter.modelCall(res.usage), repairs: res.repairs };
  }

  /**
   * Adopts a plan the Planner wrote and tells it (`plan`, or `replanned` with the reason); a revision the user
   * asked for carries what changed and the feedback.
   */
  private adopt(written: WrittenPlan, replanned?: string, revision?: Revision): void {
    const { progress, log } = this.task;
    progress.adopt(written.plan);
    const repairs = written.repairs?.length ? { repairs: written.repairs } : {};
    if (replanned !== undefined)
      log.emit({ type: 'replanned', reason: replanned, ...progress.current(), usage: written.usage, ...repairs });
    else log.emit({ type: 'plan', ...progress.current(), usage: written.usage, ...revision, ...repairs });
  }

  /** Reviews until the current plan is approved: every revision is presented again. */
  private async reviewUntilApproved(first: Exclude<ReviewReason, 'revised'>, afterStepIds: string[] = []) {
    const { progress } = this.task;
    let reason: ReviewReason = first;
    let revision: Revision | undefined;
    for (;;) {
      const d = await this.review(reason, reason === 'checkpoint' ? afterStepIds : [], revision);
      if (d.decision === 'approve') return;
      const feedback = d.feedback?.trim() || 'The user asked for a revision without saying what to change.';
      const reviewed = progress.current().plan;
      const written = this.metered(await this.write('revise plan', { feedback, finished: progress.finishedViews() }));
      revision = { diff: planDiff(reviewed, written.plan), feedback };
      this.adopt(written, undefined, revision);
      reason = 'revised';
    }
  }

  /** One review: the plan (and the results so far) presented, and the user's decision waited for. */
  private async review(reason: ReviewReason, afterStepIds: string[], revision?: Revision): Promise<ReviewDecision> {
    const { progress, reviews, meter, log } = this.task;
    const { plan, planHash } = progress.current();
    const spent = reason === 'budget' && this.budget !== null ? { ...meter.models, budget: this.budget } : undefined;
    reviews.request(reason, planHash, plan, afterStepIds, spent, revision);
    const results = progress.reviewResults();
    log.emit({
      type: 'review_requested',
      reason,
      plan,
      planHash,
      afterStepIds,
      results,
      ...(spent ? { spent } : {}),
      ...revision,
    });
    this.task.setStatus(
      'awaiting_review',
      spent
        ? `token budget: ${meter.tokens} tokens used of ${spent.budget}`
        : reason === 'checkpoint'
          ? `results after ${afterStepIds.join(', ')}`
          : 'the plan'
    );
    await condition(() => reviews.decided);
    return reviews.close();
  }
}
