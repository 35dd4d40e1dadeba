/** Drives a session workflow the way the API does. */
import type { WorkflowHandle } from '@temporalio/client';
import type { KleaEvent } from '../../common/events';
import type { SessionInput, SessionState, SubmitResult } from '../../common/session';
import type { sessionWorkflow } from '../../workflows';
import { eventsQuery, stateQuery, submitUpdate } from '../../workflows/session/messages';
import type { TestEnv } from './harness';
import { uniqueId } from './harness';

export class SessionDriver {
  constructor(
    readonly env: TestEnv,
    readonly handle: WorkflowHandle<typeof sessionWorkflow>,
    readonly sessionId: string
  ) {}

  static async start(env: TestEnv, projectDir: string, extra: Partial<SessionInput> = {}): Promise<SessionDriver> {
    const sessionId = extra.sessionId ?? uniqueId('sess');
    const handle = await env.client.workflow.start<typeof sessionWorkflow>('sessionWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: `session-${sessionId}`,
      args: [{ sessionId, projectDir, ...extra }],
    });
    return new SessionDriver(env, handle, sessionId);
  }

  submit(text: string, mode?: 'general' | 'scientific'): Promise<SubmitResult> {
    return this.handle.executeUpdate(submitUpdate, { args: [{ text, ...(mode ? { mode } : {}) }] });
  }

  state(): Promise<SessionState> {
    return this.handle.query(stateQuery);
  }

  events(after = 0): Promise<KleaEvent[]> {
    return this.handle.query(eventsQuery, { after });
  }

  async waitFor(predicate: (e: KleaEvent) => boolean, what: string, timeoutMs = 30_000): Promise<KleaEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await this.events();
      const hit = events.find(predicate);
      if (hit) return hit;
      if (Date.now() > deadline)
        throw new Error(`no ${what} within ${timeoutMs} ms; events: ${events.map((e) => e.type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async waitIdle(timeoutMs = 30_000): Promise<SessionState> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.state();
      if (!s.currentTaskId && s.queue.length === 0) return s;
      if (Date.now() > deadline)
        throw new Error(`session still busy: ${JSON.stringify(s.queue)} current=${s.currentTaskId}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
