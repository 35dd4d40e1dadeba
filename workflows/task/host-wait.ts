/**
 * A task's activities at the project's home (workflow code): on a cluster, on the task queue of the host that holds
 * the project (shared/home.ts); while no worker of that host takes one, the task says it waits for the host
 * (`waiting_for_host`, once per wait; a `status` event when it is back). Without a home: the shared queue.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import { atHome, HomeRoute } from '../shared/home';
import type { TaskRun } from './task-run';

/** An activity handle as `proxyActivities` gives it, for the calls that take options. */
export interface ActivityWithOptions<A extends unknown[], R> {
  executeWithOptions(options: ActivityOptions, args: A): Promise<R>;
}

export class HostWait {
  /** The host the task waits for (an activity for its home was not taken in time); null otherwise. */
  hostId: string | null = null;
  /** Where the project's lease is held, for a group's project: every activity of the task goes there first. */
  private readonly route = new HomeRoute();

  constructor(private readonly task: TaskRun) {}

  /** Runs one activity that reads or changes the project at its home. */
  run<T>(schedule: Parameters<typeof atHome<T>>[2], stepId?: string): Promise<T> {
    const { task } = this;
    // Without a home, the activity's own promise, scheduled exactly as before.
    if (!task.input.home) return schedule({});
    return atHome(
      task.input.home,
      {
        away: (hostId) => {
          if (this.hostId === hostId) return;
          this.hostId = hostId;
          task.log.emit({ type: 'waiting_for_host', hostId, ...(stepId ? { stepId } : {}) });
          task.setStatus(task.status, `waiting for host ${hostId}`);
        },
        back: (hostId) => {
          if (this.hostId === null) return;
          this.hostId = null;
          task.log.emit({ type: 'status', status: task.status, detail: `host ${hostId} is back` });
          task.setStatus(task.status);
        },
      },
      schedule,
      this.route
    );
  }

  /** An activity sent to the project's home: `task.home(toolCalls.callTool).executeWithOptions(…)`. */
  home<A extends unknown[], R>(activity: ActivityWithOptions<A, R>, stepId?: string): ActivityWithOptions<A, R> {
    return {
      executeWithOptions: (options, args) =>
        this.run((at) => activity.executeWithOptions({ ...options, ...at }, args), stepId),
    };
  }
}
