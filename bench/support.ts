/**
 * Shared set-up for benchmarks: a real dev server, a Klea worker on the prebuilt bundle, and the fake model, with the
 * scripts the benchmarks give that model and the way they start a task.
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { taskStartAttributes } from '../common/search-attributes';
import type { TaskInput } from '../common/task';
import type { taskWorkflow } from '../workflows';
import type { BenchResult } from './history';
import type { FakeModel, FakeReply } from '../test/support/fake-model';
import { startStack, type Stack } from '../test/support/stack';

export type BenchEnv = Stack;
/**
 * Benchmarks work in fresh directories under the system's temporary directory, so that is the project root the
 * worker allows (`project.allowed_roots` defaults to the project directory).
 */
export const startBenchEnv = (taskQueue = 'bench'): Promise<BenchEnv> =>
  startStack({ taskQueue, projectDir: realpathSync(os.tmpdir()) });

export async function historyBytes(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return temporal.api.history.v1.History.encode(history).finish().length;
}

/** Step ids offered in a pick_tools request (the enum of the step_id parameter). */
function offeredStepIds(toolSchemas: Array<{ parameters?: Record<string, unknown> }>): string[] {
  const props = (toolSchemas[0]?.parameters as { properties?: { step_id?: { enum?: string[] } } })?.properties;
  return props?.step_id?.enum ?? [];
}

/** A step of a scripted plan: a tool step, depending on nothing, unless it says otherwise. */
export interface ScriptedStep {
  id: string;
  title: string;
  instruction: string;
  depends_on?: string[];
  needs_tool?: boolean;
}

/** The Planner's answer: `steps` as one plan, which asks for a review before any work when `reviewFirst`. */
export function planReply(goal: string, steps: ScriptedStep[], reviewFirst = false): FakeReply {
  return {
    call: {
      goal,
      steps: steps.map((s) => ({
        id: s.id,
        title: s.title,
        instruction: s.instruction,
        depends_on: s.depends_on ?? [],
        needs_tool: s.needs_tool ?? true,
        questions: [],
      })),
      review: { before_work: reviewFirst, after_step_ids: [] },
    },
  };
}

/**
 * Scripts one task of tool steps: its plan, a pick that makes the call `call(stepId)` for every step it is offered
 * (a workspace tool, by its name on the server), and the answer.
 */
export function scriptToolSteps(
  fake: FakeModel,
  task: {
    goal: string;
    steps: ScriptedStep[];
    call(stepId: string): { name: string; args: Record<string, unknown> };
    answer: string;
  }
): void {
  fake.on('write_plan', planReply(task.goal, task.steps));
  fake.always('pick_tools', (req) => ({
    calls: offeredStepIds(req.toolSchemas).map((id) => {
      const { name, args } = task.call(id);
      return { name: `workspace__${name}`, args: { step_id: id, ...args } };
    }),
  }));
  fake.always('compose_answer', { content: task.answer });
}

/** Scripts tasks that park: each plans one step that needs no tool and asks for a review before it. */
export function scriptParkedTasks(fake: FakeModel, goal: string): void {
  fake.always('write_plan', planReply(goal, [{ id: 's1', title: 'x', instruction: 'x', needs_tool: false }], true));
}

/**
 * Starts a task the way a session starts its tasks (with their first search attributes), on `taskQueue`: in the
 * general mode, with full tool access, not routed (it is a task).
 */
export function startKleaTask(
  client: Client,
  taskQueue: string,
  task: Pick<TaskInput, 'taskId' | 'sessionId' | 'prompt' | 'projectDir' | 'home'>
): Promise<WorkflowHandle<typeof taskWorkflow>> {
  const input: TaskInput = { ...task, mode: 'general', toolAccess: 'full', route: false };
  return client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
    taskQueue,
    workflowId: input.taskId,
    args: [input],
    typedSearchAttributes: taskStartAttributes(input.sessionId, input.mode),
  });
}

/** Whether a row met its target, as computed from its ratio; a row that reports (its goal says why) meets none. */
export const met = (r: BenchResult): string => (r.goal.startsWith('report') ? 'no target' : r.ok ? 'yes' : 'no');

/** One row as `npm run bench` prints it. */
export const rowLine = (r: BenchResult): string =>
  `${met(r).padEnd(4)} ${r.name}: ${r.figures.map(([k, v]) => `${k} ${v}`).join(', ')} → ${r.ratio.toFixed(2)} (goal ${r.goal})`;

/** Runs one benchmark alone on a fresh stack (`node dist/bench/<name>.js`) and prints its rows. */
export function runAlone(bench: (env: BenchEnv) => Promise<BenchResult | BenchResult[]>): void {
  void (async () => {
    const env = await startBenchEnv();
    try {
      const out = await bench(env);
      for (const r of Array.isArray(out) ? out : [out]) console.log(rowLine(r));
    } finally {
      await env.close();
    }
  })();
}
