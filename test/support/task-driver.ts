/** Helpers for driving task workflows in integration tests the way a client would. */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { KleaEvent } from '../../common/events';
import type { Plan, PlanStep } from '../../common/plan';
import type { TaskInput, TaskResult, TaskState } from '../../common/task';
import type { taskWorkflow } from '../../workflows';
import { eventsQuery, stateQuery } from '../../workflows/task/messages';
import type { TestEnv } from './harness';
import { uniqueId } from './harness';

/**
 * A pick_tools reply for a model that has nothing more to try: `no_suitable_tool` for the first step of the
 * request. Scripted with `fake.always('pick_tools', NOTHING_MORE)`, it answers the repair rounds of a step whose
 * calls failed (the attack tests' commands fail by design), which then ends not achieved.
 */
export const NOTHING_MORE = (req: { text: string }) => ({
  calls: [
    {
      name: 'no_suitable_tool',
      args: { step_id: /### Step (\S+?):/.exec(req.text)?.[1] ?? 's1', reason: 'nothing else to try' },
    },
  ],
});

/**
 * A pick_tools reply that answers each step with its own calls in turn (`byStep[stepId]`), whatever order the
 * steps are picked in, and with `NOTHING_MORE` once a step's calls are used up (its repair rounds).
 */
export function picksByStep(byStep: Record<string, Array<{ name: string; args: Record<string, unknown> }>>) {
  const left = new Map(Object.entries(byStep).map(([id, calls]) => [id, [...calls]]));
  return (req: { text: string }) => {
    const id = /### Step (\S+?):/.exec(req.text)?.[1] ?? '';
    const next = left.get(id)?.shift();
    return next ? { calls: [{ name: next.name, args: { step_id: id, ...next.args } }] } : NOTHING_MORE(req);
  };
}

/**
 * A chain of steps that each make one call, run one after another for their calls' sake (each depends on the one
 * before): the plan, the picks, and the Planner's reply to the new plan asked when a step's call fails by design (a
 * step not achieved that the next builds on leads to a new plan at once): the steps not picked yet, chained again.
 */
export function callChain(calls: Array<{ name: string; args: Record<string, unknown> }>, say = 'Make call') {
  const ids = calls.map((_, i) => `s${i + 1}`);
  const left = new Set(ids);
  const chain = (rest: string[]) =>
    plan(rest.map((id, i) => step(id, `${say} ${id.slice(1)}`, { depends_on: i ? [rest[i - 1]] : [] })));
  const picks = picksByStep(Object.fromEntries(calls.map((c, i) => [ids[i], [c]])));
  return {
    plan: chain(ids),
    picks: (req: { text: string }) => {
      left.delete(/### Step (\S+?):/.exec(req.text)?.[1] ?? '');
      return picks(req);
    },
    replan: () => ({ call: chain(ids.filter((id) => left.has(id))) }),
  };
}

/**
 * What each step of a chain gave: its result as the task's state holds it, or, for a step a new plan replaced, what
 * its `step_finished` event said.
 */
export async function chainOutputs(t: TaskDriver, count: number): Promise<string[]> {
  const state = await t.state();
  const finished = await t.eventsOf('step_finished');
  return Array.from({ length: count }, (_, i) => {
    const id = `s${i + 1}`;
    return state.steps.find((s) => s.id === id)?.result ?? finished.filter((e) => e.stepId === id).pop()?.summary ?? '';
  });
}

/** Everything a user or an operator could see of a task: its events, its state and its Temporal history. */
export async function everythingShown(t: TaskDriver): Promise<string> {
  const history = await t.handle.fetchHistory();
  const decoded = JSON.stringify(history, (_k, v: unknown) =>
    v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v
  );
  return [JSON.stringify(await t.events()), JSON.stringify(await t.state()), decoded].join('\n');
}

export function step(id: string, instruction: string, extra: Partial<PlanStep> = {}): PlanStep {
  return {
    id,
    title: extra.title ?? `Step ${id}`,
    instruction,
    depends_on: [],
    needs_tool: true,
    questions: [],
    ...extra,
  };
}

export function plan(steps: PlanStep[], review: Partial<Plan['review']> = {}, goal = 'Do what the user asked'): Plan {
  return { goal, steps, review: { before_work: false, after_step_ids: [], ...review } };
}

/** A fresh project directory (real path) with the given files, and an `outside` sibling for canaries. */
export function makeProject(files: Record<string, string> = {}): { root: string; dir: string; outside: string } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'klea-task-')));
  const dir = path.join(root, 'project');
  const outside = path.join(root, 'outside');
  mkdirSync(dir, { recursive: true });
  mkdirSync(outside, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  return { root, dir, outside };
}

export class TaskDriver {
  constructor(
    readonly env: TestEnv,
    readonly handle: WorkflowHandle<typeof taskWorkflow>,
    readonly taskId: string
  ) {}

  static async start(
    env: TestEnv,
    prompt: string,
    projectDir: string,
    extra: Partial<TaskInput> = {}
  ): Promise<TaskDriver> {
    const sessionId = extra.sessionId ?? uniqueId('s');
    const taskId = extra.taskId ?? `task-${sessionId}-1`;
    const input: TaskInput = {
      taskId,
      sessionId,
      prompt,
      projectDir,
      mode: 'general',
      toolAccess: 'full',
      route: false,
      ...extra,
    };
    const handle = await env.client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: taskId,
      args: [input],
    });
    return new TaskDriver(env, handle, taskId);
  }

  /** A task started by a session: waits until its workflow exists (a queued task starts later). */
  static async attach(env: TestEnv, taskId: string, timeoutMs = 30_000): Promise<TaskDriver> {
    const handle = env.client.workflow.getHandle<typeof taskWorkflow>(taskId);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await handle.describe();
        return new TaskDriver(env, handle, taskId);
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  events(after = 0): Promise<KleaEvent[]> {
    return this.handle.query(eventsQuery, { after });
  }

  state(): Promise<TaskState> {
    return this.handle.query(stateQuery);
  }

  result(): Promise<TaskResult> {
    return this.handle.result();
  }

  /** Waits until an event of the type (and matching the predicate) is in the log; returns it. */
  async waitFor<T extends KleaEvent['type']>(
    type: T,
    predicate: (e: Extract<KleaEvent, { type: T }>) => boolean = () => true,
    timeoutMs = 30_000
  ): Promise<Extract<KleaEvent, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await this.events();
      const hit = events.find((e) => e.type === type && predicate(e as Extract<KleaEvent, { type: T }>));
      if (hit) return hit as Extract<KleaEvent, { type: T }>;
      const final = events.find((e) => e.type === 'status');
      if (final)
        throw new Error(
          `task ended (${JSON.stringify(final)}) before a "${type}" event; events: ${events.map((e) => e.type).join(', ')}`
        );
      if (Date.now() > deadline)
        throw new Error(`no "${type}" event within ${timeoutMs} ms; events: ${events.map((e) => e.type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The events of one type so far, in order. */
  async eventsOf<T extends KleaEvent['type']>(type: T): Promise<Array<Extract<KleaEvent, { type: T }>>> {
    return (await this.events()).filter((e): e is Extract<KleaEvent, { type: T }> => e.type === type);
  }

  async countOf(type: KleaEvent['type']): Promise<number> {
    return (await this.events()).filter((e) => e.type === type).length;
  }

  /** Activity types scheduled in the workflow's history, in order. */
  async scheduledActivities(): Promise<Array<{ type: string; input: string }>> {
    const history = await this.handle.fetchHistory();
    return (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => {
        const a = e.activityTaskScheduledEventAttributes!;
        const payload = a.input?.payloads?.[0]?.data;
        return { type: a.activityType?.name ?? '', input: payload ? Buffer.from(payload).toString('utf8') : '' };
      });
  }

  /** The local activities the run recorded (markers in history), by type, in order. */
  async localActivities(): Promise<string[]> {
    const history = await this.handle.fetchHistory();
    return (history.events ?? [])
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
      .map((e) => {
        const data = e.markerRecordedEventAttributes!.details?.data?.payloads?.[0]?.data;
        return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string }).activity_type : '';
      });
  }
}
