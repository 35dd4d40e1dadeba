/**
 * The work of one round of `taskWorkflow` (workflow code: it schedules activities and waits on conditions).
 *
 * The ready steps run as a batch: steps that need no tool are done by the model from their dependencies' results
 * (`do_step`); one `pick_tools` call binds the tool calls of all the others; every path a call touches passes the
 * permission gate before dispatch; calls run concurrently except those touching the same file, which run in pick
 * order. Each step is settled as soon as its own calls finish, by triage and, where it cannot decide, the
 * `evaluate_step` node.
 */
import { condition, getExternalWorkflowHandle, isCancellation, workflowInfo } from '@temporalio/workflow';
import { grantCovers, type GuardedPath, type PathOp } from '../../common/path-guard';
import { repairsFor, type FirstPick } from '../../common/first-pick';
import type { PlanStep } from '../../common/plan';
import type { SessionGrant } from '../../common/task';
import { toolRetryPolicy, type PickedCall } from '../../common/tools';
import { grantSignal } from '../session/messages';
import { modelNodes, toolCalls } from '../shared/activities';
import {
  callKey,
  callLabel,
  callOutcome,
  deniedOutcome,
  FileOrder,
  forbiddenOutcome,
  readInsteadOf,
  repeatsCall,
  stepToolResult,
  type MadeCall,
} from './dispatch';
import { checkToRun, MAX_REPAIR_ROUNDS, missingEvidence, ownCheck, unchangedFiles } from './evidence';
import { RESULT_CHARS } from './plan-progress';
import { gate, type Decision, type GatedPath } from './permissions';
import { callSummary, cut } from './text';
import { failureMessage } from '../../common/failures';
import { applyVerdict, triage, type CallOutcome, type TriageDecision, type TriageInput } from './triage';
import type { TaskRun } from './task-run';
import { kleaObserve } from '../shared/observe';

export class StepRunner {
  constructor(private readonly task: TaskRun) {}

  /**
   * Every promise a workflow creates costs its run a captured stack trace (Temporal's stack-trace query), so the
   * common shapes (one line of work, one step, one call) are awaited as they are, without an async wrapper or
   * `Promise.all`.
   *
   * @param picked the tool steps' picks, when the Planner's activity made them with the plan (for these steps).
   */
  runBatch(batch: PlanStep[], picked: FirstPick | null = null): Promise<unknown> {
    this.task.setStatus('running', `steps ${batch.map((s) => s.id).join(', ')}`);
    const toolSteps = batch.filter((s) => s.needs_tool);
    const work = [
      ...batch.filter((s) => !s.needs_tool).map((s) => this.runTextStep(s)),
      ...(toolSteps.length ? [this.runToolSteps(toolSteps, picked)] : []),
    ];
    return work.length === 1 ? work[0] : Promise.all(work);
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

  private async runToolSteps(batch: PlanStep[], firstPick: FirstPick | null): Promise<void> {
    for (const s of batch) this.start(s);
    const picked = firstPick ?? (await this.pick(batch));
    // One pick for several steps is counted on the first of them.
    this.task.meter.modelCall(picked.usage, batch[0].id);
    const files = new FileOrder();
    const first = this.dispatch(picked, files, 1);
    // Each step goes on as soon as its own calls finish: a decision pending for one call holds up no other step.
    const finish = (s: PlanStep) =>
      this.finishToolStep(
        s,
        first.filter((r) => r.call.stepId === s.id),
        picked.noSuitable,
        files,
        repairsFor(picked.repairs, s.id)
      );
    await (batch.length === 1 ? finish(batch[0]) : Promise.all(batch.map(finish)));
  }

  /**
   * Dispatches a pick's calls, each after the earlier calls on its files and through the permission gate.
   *
   * Security: the pick activity checked every call's paths on the worker (`guarded[i]` for `calls[i]`: where each
   * resolves, symlinks included, and whether it is inside the project or sensitive); the gate decides on those.
   */
  private dispatch(
    picked: { calls: PickedCall[]; guarded: GuardedPath[][] },
    files: FileOrder,
    round: number
  ): RunningCall[] {
    const info = workflowInfo();
    return picked.calls.map((call, i) => {
      const key = callKey(info, call.stepId, this.task.progress.attempts(call.stepId), i, round);
      const guarded = picked.guarded[i];
      const outcome = files.enqueue(
        guarded.map((p) => p.real),
        (waitFor) => this.runCall(call, guarded, waitFor, key)
      );
      return { call, outcome };
    });
  }

  /**
   * A tool step's calls until it is complete: while its last call leaves it open (`step_done: false`), the step is
   * picked again with what its calls returned, up to `maxCallsPerStep` calls. When the model says the step is
   * complete, its evidence judges (./evidence.ts; the step's check is run here, in the sandbox): what is missing is
   * shown to the model in up to `MAX_REPAIR_ROUNDS` more picks, and a step still missing it is not achieved. A
   * later pick that only repeats calls the step made ends it there (a repeated failed change of a file becomes a
   * read of it); one that finds no tool for the step goes to triage as such.
   */
  private async finishToolStep(
    s: PlanStep,
    running: RunningCall[],
    noSuitable: ReadonlyArray<{ stepId: string; reason: string }>,
    files: FileOrder,
    picked: string[]
  ): Promise<void> {
    const { input, meter } = this.task;
    const made: MadeCall[] = [];
    const repairs: string[] = [...picked];
    let lastRound: CallOutcome[] = [];
    let laterNoTool: string | null = null;
    /** What the evidence showed missing when last judged, and whether it was judged after the last call. */
    let missing: string | null = null;
    let judged = false;
    let repairRounds = 0;
    const judge = async (round: number) => {
      missing = missingEvidence(
        made.map((m) => m.outcome),
        s.expect,
        await this.check(s, made, round)
      );
      judged = true;
    };
    let round = 1;
    for (;;) {
      const outcomes =
        running.length === 1 ? [await running[0].outcome] : await Promise.all(running.map((r) => r.outcome));
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
        await judge(round);
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
        kept = this.freshCalls(s, next, made, repairs).slice(0, input.maxCallsPerStep - made.length);
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
        if (!judged) await judge(round);
        if (missing && repairRounds < MAX_REPAIR_ROUNDS) {
          repairRounds++;
          repairs.push(`round ${round} only repeated calls the step had made: asked again with what is missing`);
          continue;
        }
        if (next.calls.length) repairs.push('the next pick repeated a call the step had made: the step ends here');
        break;
      }
      if (!kept.length) break;
      running = this.dispatch({ calls: kept.map((k) => k.call), guarded: kept.map((k) => k.guarded) }, files, round);
    }
    // A step that ended another way (its budget, a pick that only repeated) is judged on what it did too.
    if (!judged && !lastRound.some(stops) && !laterNoTool) await judge(round);
    const result = stepToolResult(s.id, made, noSuitable);
    // What the attempt did, to tell a retry that only repeats it (a model at temperature 0 answers the same way).
    const madeCalls = JSON.stringify(made.map(({ call }) => [call.qualifiedName, call.args]));
    const d = await this.decide(s, laterNoTool ?? result.noTool, lastRound, madeCalls, missing);
    this.settle(
      s,
      d,
      made.map((m) => m.outcome),
      result.text,
      [...result.repairs, ...repairs],
      madeCalls
    );
  }

  /**
   * The calls of a later pick for step `s` that it has not made already. A failed call is never sent again
   * unchanged: a repeated failed change of a file reads the file instead, and the step goes on with it in view.
   */
  private freshCalls(
    s: PlanStep,
    next: { calls: PickedCall[]; guarded: GuardedPath[][] },
    made: readonly MadeCall[],
    repairs: string[]
  ): Array<{ call: PickedCall; guarded: GuardedPath[] }> {
    const fresh: Array<{ call: PickedCall; guarded: GuardedPath[] }> = [];
    for (const [i, call] of next.calls.entries()) {
      if (call.stepId !== s.id) continue;
      if (!repeatsCall(call, made)) {
        fresh.push({ call, guarded: next.guarded[i] });
        continue;
      }
      const read = readInsteadOf(call, made);
      if (!read) continue;
      repairs.push(`${callLabel(call)} repeated a failed call: the file was read instead`);
      fresh.push({
        call: { ...read, stepDone: false },
        guarded: next.guarded[i].map((g) => ({ ...g, op: 'read' as const })),
      });
    }
    return fresh;
  }

  /**
   * Runs the step's check (its plan's `expect.check`) in the sandbox, through the permission gate like any command,
   * and adds it to the step's calls; null when the step has none, or its own last call was that very command.
   */
  private async check(s: PlanStep, made: MadeCall[], round: number): Promise<CallOutcome | null> {
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
    const outcome = await this.runCall(call, [], [], key);
    made.push({ call, outcome });
    return outcome;
  }

  /**
   * The tool calls of a batch's steps, bound by `pick_tools` (the activity checks their paths too); `made`, for a
   * step left open, is what its calls so far returned.
   */
  private pick(batch: PlanStep[], made: readonly MadeCall[] = [], notDone?: string) {
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
          goal: progress.goal!,
          steps: batch.map((s) => ({
            id: s.id,
            title: s.title,
            instruction: questions.withAnswers(s).instruction,
            dependencyResults: progress.dependencyResults(s),
            previousFailure: progress.previousFailure(s.id),
            ...(s.expect ? { expect: s.expect } : {}),
            ...(notDone
              ? {
                  notDone,
                  unchanged: unchangedFiles(
                    made.map((m) => m.outcome),
                    s.expect
                  ),
                }
              : {}),
            ...(made.length
              ? {
                  earlierCalls: made.map(({ call, outcome }) => ({
                    tool: call.qualifiedName,
                    args: call.args,
                    status: outcome.status,
                    text: cut(outcome.text, RESULT_CHARS),
                  })),
                }
              : {}),
          })),
        },
      ]
    );
  }

  /** One tool call: ordered after earlier calls on the same files, through the gate, then dispatched. */
  private async runCall(
    call: PickedCall,
    guarded: GuardedPath[],
    waitFor: Promise<unknown>[],
    idempotencyKey: string
  ): Promise<CallOutcome> {
    const { input, permissions, meter } = this.task;
    // Only calls on files an earlier call touches wait (each promise costs the run a captured stack trace).
    if (waitFor.length) await Promise.all(waitFor);
    // Most calls need nobody asked: those are decided without an await, and go on in the order they were picked (the
    // order of commands the recorded histories hold).
    const now = gate(guarded, this.covered([]));
    const cleared =
      now.kind === 'run'
        ? now.grants
        : now.kind === 'refuse'
          ? forbiddenOutcome(call, now.path)
          : await this.clearPaths(call, guarded);
    if (!Array.isArray(cleared)) return cleared;
    const grants = cleared;
    // A command may reach paths it does not name; the sandbox opens exactly what the session granted, no more, and
    // only the grants that hold as the command starts.
    if (call.server === 'workspace' && call.tool === 'run_command') {
      this.task.dropLapsedGrants();
      for (const g of permissions.granted(new Date()))
        if (!grants.some((x) => x.path === g.path && x.op === g.op)) grants.push(g);
    }
    meter.toolCall();
    // At the project's home on a cluster (the task waits there for a host that is gone).
    const callToolAtItsHome = this.task.home(toolCalls.callTool, call.stepId);
    try {
      const r = await callToolAtItsHome.executeWithOptions(
        { summary: callSummary(call), retry: toolRetryPolicy(call) },
        [
          {
            projectDir: input.projectDir,
            toolAccess: input.toolAccess,
            server: call.server,
            tool: call.tool,
            args: call.args,
            grants,
            idempotencyKey,
            // What the call changes is kept for the step, so a rewind can undo it.
            ...(call.server === 'workspace'
              ? { network: input.network, checkpoint: { task: input.taskId, step: call.stepId } }
              : {}),
          },
        ]
      );
      return callOutcome(call, r);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { tool: call.qualifiedName, status: 'failed', text: failureMessage(err) };
    }
  }

  /**
   * Passes a call's paths through the permission gate (`gate`), asking the user where no grant covers one: the grants
   * it runs with, or the outcome of a call that must not run (a forbidden path, a denied one).
   *
   * Security: a grant for the session counts only while it holds, by the workflow's clock at the check (replay
   * decides alike), and not once the session has said it was revoked. After each answer the gate looks at every path
   * again: a grant that covered one of them may have lapsed or been revoked while the task waited. What the user
   * decided for this call holds for this call. A denied call is never scheduled; the step gets a non-halting error.
   */
  private async clearPaths(call: PickedCall, guarded: GuardedPath[]): Promise<SessionGrant[] | CallOutcome> {
    const decided: SessionGrant[] = [];
    for (;;) {
      const g = gate(guarded, this.covered(decided));
      if (g.kind === 'run') return g.grants;
      if (g.kind === 'refuse') return forbiddenOutcome(call, g.path);
      if ((await this.askPermission(call, g.path)) === 'deny') return deniedOutcome(call, g.path);
      decided.push({ path: g.path.real, op: g.path.op });
    }
  }

  /** Whether a grant covers a path: one the user `decided` for this call, or the session's while it holds. */
  private covered(decided: readonly SessionGrant[]) {
    return (real: string, op: PathOp) => {
      this.task.dropLapsedGrants();
      return grantCovers(decided, real, op) || this.task.permissions.covers(real, op, new Date());
    };
  }

  private async askPermission(call: PickedCall, p: GatedPath): Promise<Decision> {
    const { log, permissions } = this.task;
    const request = permissions.request(call, p);
    log.emit({ type: 'permission_requested', ...request });
    this.task.setStatus('awaiting_permission', `${call.qualifiedName} wants to ${p.op} ${p.real}`);
    // A grant for the session made while this request waited answers it too (while it holds).
    await condition(() => permissions.isAnswered(request, new Date()));
    const { decision, automatic, grant } = permissions.close(request, new Date());
    if (grant) tellSession(grant);
    log.emit({ type: 'permission_decided', requestId: request.requestId, decision, path: p.real, automatic });
    kleaObserve.permissionDecided(decision);
    this.task.settleStatus();
    return decision;
  }

  /** Triage's decision, or (when triage cannot decide) the evaluator's: only then is there anything to wait for. */
  private decide(
    s: PlanStep,
    noTool: string | null,
    calls: CallOutcome[],
    madeCalls?: string,
    missing?: string | null
  ): TriageDecision | Promise<TriageDecision> {
    const tin = { ...this.task.progress.triageInput(s, noTool, calls, madeCalls), missing: missing ?? null };
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
    madeCalls?: string
  ): void {
    const finished = this.task.progress.settle(s, d, calls, text, madeCalls);
    if (finished)
      this.task.log.emit({
        ...finished,
        usage: this.task.meter.takeStep(s.id),
        ...(repairs.length ? { repairs } : {}),
      });
  }
}

/** An outcome that ends a step's rounds for triage to decide on: denied, refused, or failed to run at all. */
const stops = (o: CallOutcome) => o.status === 'denied' || o.status === 'refused' || o.status === 'failed';

/** A call dispatched for a step, and its outcome to come. */
interface RunningCall {
  call: PickedCall;
  outcome: Promise<CallOutcome>;
}

/**
 * The session records a grant when it is made, not when this task returns: a task that fails or is terminated
 * later must not lose the user's decision.
 */
function tellSession(grant: SessionGrant): void {
  const parent = workflowInfo().parent;
  if (!parent) return;
  // The session may have ended (it is cancelled with its tasks); then there is nobody to tell.
  void getExternalWorkflowHandle(parent.workflowId)
    .signal(grantSignal, grant)
    .catch(() => undefined);
}
