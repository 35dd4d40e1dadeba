/**
 * Tool calls from the pick to their outcome (workflow code): each call waits for the earlier calls on its files,
 * passes the permission gate (asking the user where no grant covers a path), and runs as the `callTool` activity at
 * the project's home. A denied or forbidden call is never scheduled; its outcome says why.
 */
import { condition, getExternalWorkflowHandle, isCancellation, workflowInfo } from '@temporalio/workflow';
import { failureMessage } from '../../common/failures';
import { grantCovers, type GuardedPath, type PathOp } from '../../common/path-guard';
import type { SessionGrant } from '../../common/task';
import { toolRetryPolicy, type PickedCall } from '../../common/tools';
import { grantSignal } from '../session/messages';
import { toolCalls } from '../shared/activities';
import { kleaObserve } from '../shared/observe';
import { callKey, callOutcome, deniedOutcome, type FileOrder, forbiddenOutcome } from './dispatch';
import { gate, type Decision, type GatedPath } from './permissions';
import type { TaskRun } from './task-run';
import { callSummary } from './text';
import type { CallOutcome } from './triage';

/** A call dispatched for a step, and its outcome to come. */
export interface RunningCall {
  call: PickedCall;
  outcome: Promise<CallOutcome>;
}

export class CallRunner {
  constructor(private readonly task: TaskRun) {}

  /**
   * Dispatches a pick's calls, each after the earlier calls on its files and through the permission gate.
   *
   * Security: the pick activity checked every call's paths on the worker (`guarded[i]` for `calls[i]`: where each
   * resolves, symlinks included, and whether it is inside the project or sensitive); the gate decides on those.
   */
  dispatch(picked: { calls: PickedCall[]; guarded: GuardedPath[][] }, files: FileOrder, round: number): RunningCall[] {
    const info = workflowInfo();
    return picked.calls.map((call, i) => {
      const key = callKey(info, call.stepId, this.task.progress.attempts(call.stepId), i, round);
      const guarded = picked.guarded[i];
      const outcome = files.enqueue(
        guarded.map((p) => p.real),
        (waitFor) => this.run(call, guarded, waitFor, key)
      );
      return { call, outcome };
    });
  }

  /** One tool call: ordered after earlier calls on the same files, through the gate, then dispatched. */
  async run(
    call: PickedCall,
    guarded: GuardedPath[],
    waitFor: Promise<unknown>[],
    idempotencyKey: string
  ): Promise<CallOutcome> {
    const { input, permissions, meter } = this.task;
    // A call with nothing to wait for that needs nobody asked is decided without an await, so the calls go on in the
    // order they were picked, ahead of anything else the activation does (the order of commands the recorded
    // histories hold: an await here reorders them).
    if (waitFor.length) await Promise.all(waitFor);
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
