/**
 * A Klea worker process for tests that must act at an exact activity boundary: before each activity runs, it asks
 * the test (an HTTP gate at KLEA_TEST_GATE_URL, see activity-gate.ts) and waits for the answer. A test that wants
 * to kill the worker "after activity N" holds activity N+1 at the gate, so nothing can run past the boundary.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityExecuteInput, Next } from '@temporalio/worker';
import { exitOnError, runWorkerProcess } from '../../worker/run';

const gateUrl = process.env.KLEA_TEST_GATE_URL;
if (!gateUrl) exitOnError(new Error('KLEA_TEST_GATE_URL is not set'));

class GateInbound implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const { info } = this.ctx;
    const res = await fetch(gateUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        workflowId: info.workflowExecution?.workflowId,
        activityType: info.activityType,
        activityId: info.activityId,
        attempt: info.attempt,
        // Where it runs: the task queue that handed it over, and the worker host (a cluster's, else null).
        taskQueue: info.taskQueue,
        host: process.env.KLEA_HOST_ID ?? null,
      }),
    });
    if (!res.ok) throw new Error(`activity gate answered ${res.status}`);
    try {
      return await next(input);
    } catch (err) {
      // How it failed, for a test that must know an attempt is over (an answer it need not wait for).
      const failure = (err as { type?: unknown }).type ?? (err instanceof Error ? err.name : 'error');
      await fetch(gateUrl!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ phase: 'failed', activityId: info.activityId, attempt: info.attempt, failure }),
      }).catch(() => undefined);
      throw err;
    }
  }
}

runWorkerProcess({ interceptors: { activity: [(ctx) => ({ inbound: new GateInbound(ctx) })] } }).catch(exitOnError);
