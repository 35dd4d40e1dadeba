/**
 * Every Temporal call the API makes goes through here. Each call has a deadline: without one the client retries an
 * unreachable server for about 20 s and waits for an update that no worker takes for ever. What a failed call
 * becomes for the API's client (404, 409, 503 ...) is decided in one place, `toApiError` (temporal-errors.ts).
 * This module holds the calls to one workflow (start, query, signal, update, describe, terminate); `workers`
 * (worker-presence.ts) asks which workers poll, and `runs` (run-listing.ts) lists runs from Temporal's visibility.
 */
import { randomUUID } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowUpdateStage,
  type Client,
  type QueryDefinition,
  type SignalDefinition,
  type UpdateDefinition,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type * as workflows from '../workflows';
import { RunListing } from './run-listing';
import { isClosed, toApiError, UPDATE_ATTEMPTS, updateNotApplied, type Call, type Target } from './temporal-errors';
import { WorkerPresence } from './worker-presence';

export type { Target } from './temporal-errors';

/**
 * The workflow entry points by the name they are registered under. A type-only import: the compiler checks a
 * workflow's name and input, and no workflow code is loaded into the API process (importing the functions, as
 * `client.workflow.start(taskWorkflow)` needs, would run the workflow modules and their activity proxies here).
 */
type Workflows = typeof workflows;
export type WorkflowName = keyof Workflows;

export interface TemporalCallsOptions {
  namespace: string;
  taskQueue: string;
  address: string;
  /** Deadline of one call (query, signal, describe, start). */
  callTimeoutMs?: number;
  /** How long an update may wait for a worker to accept it. */
  acceptTimeoutMs?: number;
}

export const DEFAULT_CALL_TIMEOUT_MS = 5_000;
export const DEFAULT_ACCEPT_TIMEOUT_MS = 10_000;

/** Pause between sends of an update whose workflow task failed (see `updateNotApplied`). */
const UPDATE_RETRY_DELAY_MS = 100;

/** What a call that found the workflow's run closed does instead of failing: given the run's description. */
export type WhenEnded<T> = (desc: WorkflowExecutionDescription) => Promise<T>;

/** How to start a workflow that an update or signal wakes (update-with-start, signal-with-start). */
export interface WakeStart {
  workflowType: WorkflowName;
  options: WorkflowStartOptions<Workflows[WorkflowName]>;
}

export class TemporalCalls {
  readonly taskQueue: string;
  readonly callTimeoutMs: number;
  readonly acceptTimeoutMs: number;
  readonly namespace: string;
  private readonly address: string;
  /** Which workers poll the task queues (worker-presence.ts). */
  readonly workers: WorkerPresence;
  /** Runs as Temporal's visibility lists them (run-listing.ts). */
  readonly runs: RunListing;

  constructor(
    readonly client: Client,
    opts: TemporalCallsOptions
  ) {
    this.namespace = opts.namespace;
    this.taskQueue = opts.taskQueue;
    this.address = opts.address;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.acceptTimeoutMs = opts.acceptTimeoutMs ?? DEFAULT_ACCEPT_TIMEOUT_MS;
    this.workers = new WorkerPresence(this);
    this.runs = new RunListing(this);
  }

  /** The workflow's latest run (so calls follow a task that continued as new), unless the target names a run. */
  private handle(target: Target): WorkflowHandle {
    return this.client.workflow.getHandle(target.workflowId, target.runId);
  }

  /** `fn` within a deadline of `ms` (a call of its own, or several), Temporal's failure as it is. */
  within<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    return this.client.withDeadline(Date.now() + ms, fn);
  }

  /** One call within its deadline, a failure as the API's error. */
  async run<T>(target: Target | undefined, call: Call, fn: () => Promise<T>, ms = this.callTimeoutMs) {
    try {
      return await this.within(ms, fn);
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  query<Ret, Args extends unknown[]>(target: Target, def: QueryDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
    return this.run(target, { kind: 'query', name: def.name }, () => this.handle(target).query(def, ...args));
  }

  /** Signals need no worker: Temporal keeps them until one runs the workflow. */
  signal<Args extends unknown[]>(target: Target, def: SignalDefinition<Args>, ...args: Args): Promise<void> {
    return this.run(target, { kind: 'signal', name: def.name }, () => this.handle(target).signal(def, ...args));
  }

  /** A signal, or, when the workflow's latest run has closed, what `whenEnded` does with its description. */
  async signalUnlessEnded<Arg>(target: Target, def: SignalDefinition<[Arg]>, arg: Arg, whenEnded: WhenEnded<void>) {
    try {
      return await this.within(this.callTimeoutMs, () => this.handle(target).signal(def, arg));
    } catch (err) {
      if (isClosed(err)) return whenEnded(await this.describe(target));
      throw await this.toApiError(err, target, { kind: 'signal', name: def.name });
    }
  }

  describe(target: Target): Promise<WorkflowExecutionDescription> {
    return this.run(target, { kind: 'describe' }, () => this.handle(target).describe());
  }

  async start<N extends WorkflowName>(
    target: Target,
    workflowType: N,
    options: WorkflowStartOptions<Workflows[N]>
  ): Promise<void> {
    await this.run(target, { kind: 'start', name: workflowType }, () =>
      this.client.workflow.start<Workflows[N]>(workflowType, options)
    );
  }

  /** Starts a workflow and waits for its result (a rewind), for at most `ms`; the workflow goes on regardless. */
  async execute<N extends WorkflowName>(
    target: Target,
    workflowType: N,
    options: WorkflowStartOptions<Workflows[N]>,
    ms: number
  ): Promise<Awaited<ReturnType<Workflows[N]>>> {
    return (await this.run(
      target,
      { kind: 'start', name: workflowType },
      () => this.client.workflow.execute<Workflows[N]>(workflowType, options),
      ms
    )) as Awaited<ReturnType<Workflows[N]>>;
  }

  /** What a closed run returned (a session that went to sleep: everything it carries). */
  result(target: Target, runId: string): Promise<unknown> {
    return this.run(target, { kind: 'describe' }, () =>
      this.client.workflow.getHandle(target.workflowId, runId, { followRuns: false }).result()
    );
  }

  private retention: { ms: number | undefined; at: number } | null = null;

  /** How long the namespace keeps closed runs (ms), asked at most once a minute; undefined when it cannot be asked. */
  async retentionMs(): Promise<number | undefined> {
    if (this.retention && Date.now() - this.retention.at < 60_000) return this.retention.ms;
    try {
      const res = await this.within(this.callTimeoutMs, () =>
        this.client.workflowService.describeNamespace({ namespace: this.namespace })
      );
      const ttl = res.config?.workflowExecutionRetentionTtl;
      const ms = ttl ? Number(ttl.seconds ?? 0) * 1000 + Math.floor((ttl.nanos ?? 0) / 1e6) : undefined;
      this.retention = { ms, at: Date.now() };
      return ms;
    } catch {
      return undefined;
    }
  }

  /**
   * An update that starts the workflow first when no run of it is open (update-with-start, one round trip): the
   * run `start` describes is started unless one is running, in which case that one takes the update. Two callers
   * doing this at once get one run, which takes both updates.
   */
  async updateWithStart<Ret, Arg>(
    target: Target,
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    opts: { noun: string; workerChecked?: boolean },
    start: WakeStart
  ): Promise<Ret> {
    if (!opts.workerChecked) await this.workers.requireWorker(opts.noun);
    const call: Call = { kind: 'update', name: def.name, noun: opts.noun };
    try {
      return await this.within(this.acceptTimeoutMs, async () => {
        const startWorkflowOperation = new WithStartWorkflowOperation<Workflows[WorkflowName]>(start.workflowType, {
          ...(start.options as WorkflowStartOptions<Workflows[WorkflowName]>),
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        });
        const accepted = await this.client.workflow.startUpdateWithStart(def, {
          args: [arg],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
          startWorkflowOperation,
        });
        return accepted;
      }).then((accepted) => accepted.result());
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  /** A signal that starts the workflow first when no run of it is open (signal-with-start). */
  async signalWithStart<Arg>(target: Target, def: SignalDefinition<[Arg]>, arg: Arg, start: WakeStart): Promise<void> {
    await this.run(target, { kind: 'signal', name: def.name }, () =>
      this.client.workflow.signalWithStart<Workflows[WorkflowName], [Arg]>(start.workflowType, {
        ...(start.options as unknown as WorkflowStartOptions<Workflows[WorkflowName]>),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        signal: def,
        signalArgs: [arg],
      })
    );
  }

  async terminate(target: Target, reason: string): Promise<void> {
    await this.run(target, { kind: 'terminate' }, () => this.handle(target).terminate(reason));
  }

  /**
   * An update that a worker must accept before it counts. Nothing is sent when no worker polls (a message
   * sent then would wait in Temporal and be acted on whenever a worker starts, long after the caller gave up),
   * and acceptance is bounded, so a worker that stopped moments ago (it still looks fresh) cannot hang the call.
   */
  async update<Ret, Arg>(
    target: Target,
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    opts: {
      noun: string;
      workerChecked?: boolean;
      /** When the workflow's latest run has closed: what to do instead (given its description) than answer 409. */
      whenEnded?: WhenEnded<Ret>;
    }
  ): Promise<Ret> {
    if (!opts.workerChecked) await this.workers.requireWorker(opts.noun, target);
    const call: Call = { kind: 'update', name: def.name, noun: opts.noun };
    const updateId = randomUUID();
    const send = () =>
      this.within(this.acceptTimeoutMs, () =>
        this.handle(target).startUpdate(def, { args: [arg], updateId, waitForStage: WorkflowUpdateStage.ACCEPTED })
      );
    let accepted: Awaited<ReturnType<typeof send>>;
    for (let attempt = 1; ; attempt++) {
      try {
        accepted = await send();
        break;
      } catch (err) {
        if (attempt < UPDATE_ATTEMPTS && updateNotApplied(err)) {
          await new Promise((r) => setTimeout(r, UPDATE_RETRY_DELAY_MS * attempt));
          continue;
        }
        if (opts.whenEnded && isClosed(err)) return opts.whenEnded(await this.describe(target));
        throw await this.toApiError(err, target, call);
      }
    }
    try {
      return await accepted.result();
    } catch (err) {
      throw await this.toApiError(err, target, call);
    }
  }

  /** A failed call as the API's error (temporal-errors.ts), asking Temporal what it needs to say why. */
  toApiError(err: unknown, target: Target | undefined, call: Call): Promise<unknown> {
    return toApiError(err, target, call, {
      address: this.address,
      namespace: this.namespace,
      taskQueue: this.taskQueue,
      callTimeoutMs: this.callTimeoutMs,
      acceptTimeoutMs: this.acceptTimeoutMs,
      describe: (t) => this.within(this.callTimeoutMs, () => this.handle(t).describe()),
      workerPresence: () => this.workers.workerPresence(),
      retentionMs: () => this.retentionMs(),
    });
  }
}
