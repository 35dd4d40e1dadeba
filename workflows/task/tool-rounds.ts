/**
 * A tool step's rounds of calls (workflow code): while its last call leaves it open (`step_done: false`), the step
 * is picked again with what its calls returned, up to `maxCallsPerStep` calls. When the model says the step is
 * complete, its evidence judges (./evidence.ts; the step's check is run here, in the sandbox): what is missing is
 * shown to the model in up to `MAX_REPAIR_ROUNDS` more picks. A later pick that only repeats calls the step made
 * ends it there (a repeated failed change of a file becomes a read of it); one that finds no tool for the step says
 * so. What the rounds leave is settled by the step runner.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { GuardedPath } from '../../common/path-guard';
import { repairsFor } from '../../common/first-pick';
import { earlierTurnsOf, laterChecksOf, plannedFiles, soleChangeOf, type PlanStep } from '../../common/plan';
import type { PickedCall } from '../../common/tools';
import { modelNodes } from '../shared/activities';
import type { CallRunner, RunningCall } from './call-runner';
import { callKey, freshCalls, type FileOrder, type MadeCall } from './dispatch';
import { checkFails, checkToRun, MAX_REPAIR_ROUNDS, missingEvidence, ownCheck, unchangedFiles } from './evidence';
import { RESULT_CHARS } from './plan-progress';
import type { TaskRun } from './task-run';
import { cut } from './text';
import type { CallOutcome } from './triage';

/** How many of the files a call changed its step's next pick is told of (a file it deleted is not one to make). */
const CHANGED_SHOWN = 20;

/** How a tool step's rounds ended. */
export interface RoundsEnd {
  /** Every call the step made, its check included, in order. */
  made: MadeCall[];
  /** The outcomes of the last round of calls. */
  lastRound: CallOutcome[];
  /** Why a later pick found no tool for the step, if that is how it ended. */
  laterNoTool: string | null;
  /** What the evidence showed missing when last judged (null: nothing, or not judged). */
  missing: string | null;
  /** What the step's check printed, whole, when it ran when last judged and failed; else null. */
  failedCheck: string | null;
  /** What was repaired or cut short on the way, for the step's `repairs`. */
  repairs: string[];
}

/** An outcome that ends a step's rounds for triage to decide on: denied, refused, or failed to run at all. */
export const stops = (o: CallOutcome) => o.status === 'denied' || o.status === 'refused' || o.status === 'failed';

export class ToolRounds {
  constructor(
    private readonly task: TaskRun,
    private readonly calls: CallRunner
  ) {}

  /** The rounds of step `s`, from the first round's `running` calls (`picked`: the first pick's repairs for it). */
  async run(s: PlanStep, running: RunningCall[], files: FileOrder, picked: string[]): Promise<RoundsEnd> {
    const { input, meter } = this.task;
    const made: MadeCall[] = [];
    const repairs: string[] = [...picked];
    let lastRound: CallOutcome[] = [];
    let laterNoTool: string | null = null;
    /** What the evidence showed missing when last judged, and whether it was judged after the last call. */
    let missing: string | null = null;
    let judged = false;
    let failedCheck: string | null = null;
    let repairRounds = 0;
    const judgeBy = (check: CallOutcome | null) => {
      missing = missingEvidence(
        made.map((m) => m.outcome),
        s.expect,
        check
      );
      failedCheck = check && checkFails(check, s.expect) ? check.text : null;
      judged = true;
    };
    // A promise only when the check is to run: every promise workflow code makes costs a stack trace (sizing.md).
    const judge = (round: number): Promise<void> | undefined => {
      const check = this.check(s, made, round);
      if (check instanceof Promise) return check.then(judgeBy);
      judgeBy(check);
      return undefined;
    };
    let round = 1;
    for (;;) {
      const outcomes =
        running.length === 1 ? [await running[0]!.outcome] : await Promise.all(running.map((r) => r.outcome));
      running.forEach((r, i) => made.push({ call: r.call, outcome: outcomes[i] }));
      lastRound = outcomes;
      judged = false;
      // A denied path is the user's decision, a refusal is policy, and a call that crashed or timed out is tried
      // again as a new attempt: triage takes the step from there.
      if (outcomes.some(stops)) break;
      const open = running.at(-1)?.call.stepDone === false;
      if (made.length >= input.maxCallsPerStep) {
        if (open)
          repairs.push(`still open after ${made.length} calls: the step's budget (limits.max_calls_per_step) is spent`);
        break;
      }
      if (!open) {
        // The model says the step is complete: the evidence judges whether it is.
        const judging = judge(round);
        if (judging) await judging;
        if (!missing) break;
        if (repairRounds >= MAX_REPAIR_ROUNDS) {
          repairs.push(`${MAX_REPAIR_ROUNDS} repair round(s) did not make good what was missing`);
          break;
        }
        repairRounds++;
      }
      // The next calls. A pick that only repeats calls the step made is, while the evidence says the step is not
      // done, a repair round: the model is asked again with what is missing.
      let kept: Array<{ call: PickedCall; guarded: GuardedPath[] }> = [];
      for (;;) {
        round++;
        const next = await this.pick([s], made, missing ?? undefined);
        meter.modelCall(next.usage, s.id);
        kept = freshCalls(s.id, next, made, repairs).slice(0, input.maxCallsPerStep - made.length);
        if (kept.length) {
          repairs.push(...repairsFor(next.repairs, s.id));
          if (kept.length < next.calls.length)
            repairs.push(
              `${next.calls.length - kept.length} call(s) of round ${round} left out (repeats, or over the budget)`
            );
          break;
        }
        const none = next.noSuitable.find((n) => n.stepId === s.id);
        if (!next.calls.length && none && !missing) {
          laterNoTool = none.reason;
          break;
        }
        const judging = judged ? undefined : judge(round);
        if (judging) await judging;
        if (missing && repairRounds < MAX_REPAIR_ROUNDS) {
          repairRounds++;
          repairs.push(`round ${round} only repeated calls the step had made: asked again with what is missing`);
          continue;
        }
        if (next.calls.length) repairs.push('the next pick repeated a call the step had made: the step ends here');
        break;
      }
      if (!kept.length) break;
      running = this.calls.dispatch(
        { calls: kept.map((k) => k.call), guarded: kept.map((k) => k.guarded) },
        files,
        round
      );
    }
    // A step that ended another way (its budget, a pick that only repeated) is judged on what it did too.
    const judging = !judged && !lastRound.some(stops) && !laterNoTool ? judge(round) : undefined;
    if (judging) await judging;
    return { made, lastRound, laterNoTool, missing, failedCheck: missing !== null ? failedCheck : null, repairs };
  }

  /**
   * The tool calls of a batch's steps, bound by `pick_tools` (the activity checks their paths too); `made`, for a
   * step left open, is what its calls so far returned.
   */
  pick(batch: PlanStep[], made: readonly MadeCall[] = [], notDone?: string, mayAsk = false) {
    const { input, progress, questions } = this.task;
    return this.task.home(modelNodes.pickTools).executeWithOptions(
      {
        summary: `pick tools · ${batch.map((s) => `step ${s.id}`).join(', ')}${made.length ? ` · call ${made.length + 1}` : ''}`,
      },
      [
        {
          projectDir: input.projectDir,
          toolAccess: input.toolAccess,
          request: input.prompt,
          ...earlierTurnsOf(input.recentTurns),
          goal: progress.goal!,
          steps: batch.map((s) => ({
            id: s.id,
            title: s.title,
            instruction: questions.withAnswers(s).instruction,
            dependencyResults: progress.dependencyResults(s),
            ...(s.depends_on.length ? { builtOn: progress.dependencyInstructions(s) } : {}),
            ...laterChecksOf(progress.graph, s),
            // Not with the user's answers: they say what the request does not.
            ...(questions.withAnswers(s).instruction === s.instruction
              ? soleChangeOf(progress.graph, s, {
                  firstPlan: progress.current().version === 1,
                  summary: input.summary,
                  recentTurns: input.recentTurns,
                })
              : {}),
            previousFailure: progress.previousFailure(s.id),
            ...(s.expect ? { expect: s.expect } : {}),
            // In a repair round, the files the evidence says are unchanged; before the step's first call, every
            // file it is to change, as in the first pick made with the plan (activities/plan-activities.ts).
            ...(notDone
              ? {
                  notDone,
                  taskChanged: progress.changedFiles(),
                  unchanged: unchangedFiles(
                    made.map((m) => m.outcome),
                    s.expect
                  ),
                }
              : !made.length && plannedFiles(s).length
                ? { unchanged: plannedFiles(s) }
                : {}),
            ...(made.length
              ? {
                  earlierCalls: made.map(({ call, outcome }) => ({
                    tool: call.qualifiedName,
                    args: call.args,
                    status: outcome.status,
                    text: cut(outcome.text, RESULT_CHARS),
                    ...(outcome.changed?.length ? { changed: outcome.changed.slice(0, CHANGED_SHOWN) } : {}),
                  })),
                }
              : {}),
          })),
          ...(mayAsk ? { mayAsk } : {}),
        },
      ]
    );
  }

  /**
   * Runs the step's check (its plan's `expect.check`) in the sandbox, through the permission gate like any command,
   * and adds it to the step's calls; null when the step has none, or its own last call was that very command (no
   * promise then).
   */
  private check(s: PlanStep, made: MadeCall[], round: number): CallOutcome | null | Promise<CallOutcome> {
    const command = checkToRun(s.expect, this.task.input.toolAccess === 'read_only');
    if (!command) return null;
    const own = ownCheck(made, command);
    if (own) return own;
    const call: PickedCall = {
      stepId: s.id,
      server: 'workspace',
      tool: 'run_command',
      qualifiedName: 'workspace__run_command',
      args: { command },
      readOnly: false,
      idempotent: false,
    };
    const key = `${callKey(workflowInfo(), s.id, this.task.progress.attempts(s.id), made.length, round)}/check`;
    return this.calls.run(call, [], [], key).then((outcome) => {
      made.push({ call, outcome });
      return outcome;
    });
  }
}
