/**
 * The work of one round of `taskWorkflow` (workflow code: it schedules activities and waits on conditions).
 *
 * The ready steps run as a batch: steps that need no tool are done by the model from their dependencies' results
 * (`do_step`); one `pick_tools` call binds the tool calls of all the others; every path a call touches passes the
 * permission gate before dispatch (./call-runner.ts); calls run concurrently except those touching the same file,
 * which run in pick order. A step left open is picked again (./tool-rounds.ts). Each step is settled as soon as its
 * own calls finish, by triage and, where it cannot decide, the `evaluate_step` node.
 */
import { isCancellation } from '@temporalio/workflow';
import { repairsFor, type FirstPick } from '../../common/first-pick';
import { failureMessage } from '../../common/failures';
import type { PlanStep } from '../../common/plan';
import { modelNodes } from '../shared/activities';
import { CallRunner, type RunningCall } from './call-runner';
import { FileOrder, stepToolResult } from './dispatch';
import { RESULT_CHARS } from './plan-progress';
import type { TaskRun } from './task-run';
import { cut } from './text';
import { ToolRounds } from './tool-rounds';
import { applyVerdict, failureKeys, triage, type CallOutcome, type TriageDecision, type TriageInput } from './triage';

export class StepRunner {
  private readonly calls: CallRunner;
  private readonly rounds: ToolRounds;
  /**
   * The failed checks that led to a new plan (`failureKeys`): the same failure after one ends its step (./triage.ts).
   * Not carried over a continue-as-new (nor are the failed attempts' calls): after one, a failure leads to at most the
   * new plans the task has left, as before.
   */
  private readonly replannedFailures = new Set<string>();

  constructor(private readonly task: TaskRun) {
    this.calls = new CallRunner(task);
    this.rounds = new ToolRounds(task, this.calls);
  }

  /**
   * Runs a batch of ready steps together.
   *
   * @param picked the tool steps' picks, when the Planner's activity made them with the plan (for these steps).
   */
  async runBatch(batch: PlanStep[], picked: FirstPick | null = null): Promise<void> {
    this.task.setStatus('running', `steps ${batch.map((s) => s.id).join(', ')}`);
    const toolSteps = batch.filter((s) => s.needs_tool);
    // Every promise workflow code makes costs a stack trace (sizing.md): a batch of tool steps only (the common one)
    // waits for its steps without another.
    if (toolSteps.length === batch.length) return this.runToolSteps(toolSteps, picked);
    await Promise.all([
      ...batch.filter((s) => !s.needs_tool).map((s) => this.runTextStep(s)),
      ...(toolSteps.length ? [this.runToolSteps(toolSteps, picked)] : []),
    ]);
  }

  private async runTextStep(s: PlanStep): Promise<void> {
    const { progress, questions, meter } = this.task;
    this.start(s);
    try {
      const r = await modelNodes.doStep.executeWithOptions({ summary: `step ${s.id} · think` }, [
        { goal: progress.goal!, step: questions.withAnswers(s), dependencyResults: progress.dependencyResults(s) },
      ]);
      meter.modelCall(r.usage, s.id);
      this.settle(s, { outcome: 'move_on', ok: true, reason: 'done' }, [], r.text);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const calls: CallOutcome[] = [{ tool: 'do_step', status: 'failed', text: failureMessage(err) }];
      this.settle(s, await this.decide(s, null, calls), calls, '');
    }
  }

  private async runToolSteps(steps: PlanStep[], firstPick: FirstPick | null): Promise<void> {
    for (const s of steps) this.start(s);
    // Before their first calls the steps may still stop to ask the user (the Planner's first pick asked already),
    // unless one has its answers: a step asks once.
    const mayAsk = steps.every((s) => !this.task.questions.isAnswered(s.id));
    const pick = firstPick ?? (await this.rounds.pick(steps, [], undefined, mayAsk));
    // One pick for several steps is counted on the first of them.
    this.task.meter.modelCall(pick.usage, steps[0].id);
    const asking = 'questions' in pick ? this.askFirst(steps, pick.questions) : [];
    const batch = steps.filter((s) => !asking.includes(s.id));
    if (!batch.length) return;
    const kept = pick.calls.map((c) => !asking.includes(c.stepId));
    const picked = asking.length
      ? { ...pick, calls: pick.calls.filter((_, i) => kept[i]), guarded: pick.guarded.filter((_, i) => kept[i]) }
      : pick;
    const files = new FileOrder();
    const first = this.calls.dispatch(picked, files, 1);
    // Each step goes on as soon as its own calls finish: a decision pending for one call holds up no other step.
    const finish = (s: PlanStep) =>
      this.finishToolStep(
        s,
        first.filter((r) => r.call.stepId === s.id),
        picked.noSuitable,
        files,
        repairsFor(picked.repairs, s.id)
      );
    if (batch.length === 1) return finish(batch[0]!);
    await Promise.all(batch.map(finish));
  }

  /**
   * The steps whose file needs a fact only the user knows (`questions`, from their first pick): each waits for the
   * user's answers, asked now, and is picked again once it has them; its calls are left out. One step's questions
   * are asked at a time, and a step asks once: a question while others are pending, or after its answers, is not
   * asked (the file is not written from it).
   */
  private askFirst(batch: PlanStep[], questions: ReadonlyArray<{ stepId: string; question: string }> = []): string[] {
    const gate = this.task.questions;
    const asked: string[] = [];
    for (const s of batch) {
      const qs = [...new Set(questions.filter((q) => q.stepId === s.id).map((q) => q.question))];
      if (!qs.length || gate.pending || gate.isAnswered(s.id)) continue;
      this.task.ask({ id: s.id, questions: qs });
      asked.push(s.id);
    }
    return asked;
  }

  /** A tool step from its first calls to its end: its rounds (./tool-rounds.ts), then triage's decision. */
  private async finishToolStep(
    s: PlanStep,
    running: RunningCall[],
    noSuitable: ReadonlyArray<{ stepId: string; reason: string }>,
    files: FileOrder,
    picked: string[]
  ): Promise<void> {
    const { made, lastRound, laterNoTool, missing, failedCheck, repairs } = await this.rounds.run(
      s,
      running,
      files,
      picked
    );
    const result = stepToolResult(s.id, made, noSuitable);
    // What the attempt did, to tell a retry that only repeats it (a model at temperature 0 answers the same way).
    const madeCalls = JSON.stringify(made.map(({ call }) => [call.qualifiedName, call.args]));
    // The failed check as what it printed, whole: the same failure after a new plan ends the step (./triage.ts).
    const failure = failedCheck !== null ? failureKeys(s.expect?.check ?? '', failedCheck) : null;
    const decided = this.decide(s, laterNoTool ?? result.noTool, lastRound, madeCalls, missing, failure);
    const d = decided instanceof Promise ? await decided : decided;
    if (d.outcome === 'replan' && failure !== null) failure.forEach((k) => this.replannedFailures.add(k));
    this.settle(
      s,
      d,
      made.map((m) => m.outcome),
      result.text,
      [...result.repairs, ...repairs],
      madeCalls,
      failure !== null ? s.expect?.check : undefined
    );
  }

  /**
   * Triage's decision, or (when triage cannot decide) the evaluator's: only then is there anything to wait for, and
   * only then a promise. `failure`: the step's failed check as its `failureKeys`, null when no check failed.
   */
  private decide(
    s: PlanStep,
    noTool: string | null,
    calls: CallOutcome[],
    madeCalls?: string,
    missing?: string | null,
    failure: string[] | null = null
  ): TriageDecision | Promise<TriageDecision> {
    const tin = {
      ...this.task.progress.triageInput(s, noTool, calls, madeCalls),
      ...(failure?.some((k) => this.replannedFailures.has(k)) ? { sameCheckFailure: true } : {}),
      missing: missing ?? null,
      ...(failure !== null ? { checkFailed: true } : {}),
    };
    const d = triage(tin);
    return d.outcome === 'evaluate' ? this.evaluate(s, calls, tin) : d;
  }

  private async evaluate(s: PlanStep, calls: CallOutcome[], tin: TriageInput): Promise<TriageDecision> {
    const { progress, questions, meter } = this.task;
    const ev = await modelNodes.evaluateStep.executeWithOptions({ summary: `step ${s.id} · evaluate` }, [
      {
        goal: progress.goal!,
        step: questions.withAnswers(s),
        calls: calls.map(({ tool, status, text }) => ({ tool, status, text: cut(text, RESULT_CHARS) })),
        attempt: tin.attempts,
      },
    ]);
    meter.modelCall(ev.usage, s.id);
    return applyVerdict(ev.verdict, ev.reason, tin);
  }

  private start(s: PlanStep): void {
    this.task.log.emit(this.task.progress.start(s));
  }

  private settle(
    s: PlanStep,
    d: TriageDecision,
    calls: CallOutcome[],
    text: string,
    repairs: string[] = [],
    madeCalls?: string,
    failedCheck?: string
  ): void {
    const finished = this.task.progress.settle(s, d, calls, text, madeCalls, failedCheck);
    if (finished)
      this.task.log.emit({
        ...finished,
        usage: this.task.meter.takeStep(s.id),
        ...(repairs.length ? { repairs } : {}),
      });
  }
}
