/**
 * Everything a session holds (pure): settings, grants, memory, the queue and its tasks. It is restored from the
 * carry of the previous run, and `snapshot` gives both the `state` query's answer and the carry into the next run
 * from one reading, so the two cannot drift apart.
 */
import type { z } from 'zod';
import { homeRef } from '../../common/home';
import type { Mode, Network, ReviewPolicy, ToolAccess } from '../../common/config';
import { UNVERIFIED_LABEL, type EventBody, type KleaEvent } from '../../common/events';
import {
  COMMANDS,
  type QueuedMessage,
  type SessionCarry,
  type SessionInputSchema,
  type SessionSettings,
  type SessionSleep,
  type SessionState,
} from '../../common/session';
import { addCalls, ZERO_CALL_USAGE, type CallUsage, type MeteredUsage } from '../../common/model-protocol';
import type { SandboxStatus } from '../../common/sandbox-status';
import type { TaskInput, TaskResult, TaskRunLink } from '../../common/task';
import { EventLog } from '../shared/event-log';
import { SCIENTIFIC_MODE_EXPLANATION } from '../task/modes';
import { SessionMemory, totalChars } from './memory';
import { SessionGrants } from './grants';
import { MessageQueue } from './queue';

type ContextEvent = Extract<EventBody, { type: 'context' }>;

export type ParsedSessionInput = z.output<typeof SessionInputSchema>;

/** Events carried into the next run, so a reconnecting client finds no gap. */
export const CARRIED_EVENTS = 500;
/** Task ids carried into the next run (the newest). */
export const CARRIED_TASKS = 1000;
/** Earlier runs named in the carry (the newest; older ones are past any namespace's retention by then). */
export const CARRIED_RUN_LINKS = 1000;

export class Session {
  mode: Mode;
  toolAccess: ToolAccess;
  network: Network;
  readonly review: ReviewPolicy;
  /** Grants made for the session, each with its id and expiry (./grants.ts). */
  readonly grants: SessionGrants;
  /** Set once the run has gone to sleep: the `state` query of the closed run says so. */
  sleeping = false;
  readonly memory: SessionMemory;
  readonly queue: MessageQueue;
  /** Every task this session started, oldest first. */
  readonly tasks: string[];
  /** The project context file in use (AGENTS.md, CLAUDE.md), or null. */
  contextFile: string | null;
  /** Where the worker runs commands, as it said at the session's start (null: not known). */
  sandbox: { status: SandboxStatus; note: string | null } | null;
  /** The token ledger: every model call of the session and of its tasks. */
  usage: CallUsage;
  /** Runs of this session so far, this one included. */
  readonly runs: number;
  currentTaskId: string | null = null;
  /**
   * Results a task sent itself (`taskEnded`) from a run a rewind's reset made: Temporal does not report such a run's
   * end to the parent, so the session would otherwise wait for it forever.
   */
  readonly reportedEnds = new Map<string, TaskResult>();
  /** Running tasks a rewind is resetting: their run's termination is not their end. */
  readonly rewinding = new Set<string>();
  /** The session's event log, continued from the previous run's tail so clients see no gap in `seq`. */
  readonly log: EventLog;
  /** Messages taken in this run (memory children are named by it; the count also bounds the run). */
  processed = 0;
  /**
   * When the session was last active (ISO): a message or command taken, a task started or ended. Going to sleep and
   * waking keep it: the inbox orders sessions by it (`KleaLastActivity`).
   */
  lastActivityAt: string;

  /** The session's earlier runs, oldest first (the events each holds). */
  readonly earlierRuns: readonly TaskRunLink[];

  /**
   * @param startedAt when this run started: a new session's first activity (a carry brings its own).
   * @param runId this run's id, which the next run names among its earlier runs.
   */
  constructor(
    readonly input: ParsedSessionInput,
    startedAt: Date = new Date(),
    private readonly runId = ''
  ) {
    const carry = input.carry;
    this.earlierRuns = carry?.earlierRuns ?? [];
    this.lastActivityAt = carry?.lastActivityAt ?? startedAt.toISOString();
    this.log = new EventLog((carry?.recentEvents ?? []) as KleaEvent[], carry?.lastSeq ?? 0);
    this.mode = carry?.mode ?? input.mode;
    this.toolAccess = carry?.toolAccess ?? input.toolAccess;
    this.network = carry?.network ?? input.network;
    this.review = carry?.review ?? input.review;
    this.grants = new SessionGrants(input.grantTtlMs, carry);
    this.memory = new SessionMemory(input.memory, carry);
    this.queue = new MessageQueue(input.sessionId, carry);
    this.tasks = [...(carry?.tasks ?? [])];
    this.contextFile = carry?.contextFile ?? null;
    this.sandbox = carry?.sandbox ?? null;
    this.usage = carry?.usage ?? ZERO_CALL_USAGE;
    this.runs = (carry?.runs ?? 0) + 1;
  }

  /** A task is running or messages wait: a new message is queued behind them. */
  get busy(): boolean {
    return this.queue.length > 0 || this.currentTaskId !== null;
  }

  /** Something happened in the session at `now` (a message or command taken, a task started or ended). */
  touch(now: Date): void {
    this.lastActivityAt = now.toISOString();
  }

  /** Adds one model call (routing, a summary, /init) or a finished task's totals to the ledger. */
  charge(used: MeteredUsage): CallUsage {
    this.usage = addCalls(this.usage, used);
    return { ...used, modelCalls: used.modelCalls ?? 1 };
  }

  /** Takes the settings given (a `settings` signal); true when any of them changed. */
  applySettings(s: SessionSettings): boolean {
    let changed = false;
    if (s.mode && s.mode !== this.mode) {
      this.mode = s.mode;
      changed = true;
    }
    if (s.toolAccess && s.toolAccess !== this.toolAccess) {
      this.toolAccess = s.toolAccess;
      changed = true;
    }
    if (s.network && s.network !== this.network) {
      this.network = s.network;
      changed = true;
    }
    return changed;
  }

  /** What the session returns when it goes to sleep: everything it carries. */
  sleep(now: Date): SessionSleep {
    this.sleeping = true;
    return {
      sessionId: this.input.sessionId,
      status: 'sleeping',
      projectDir: this.input.projectDir,
      sleptAt: now.toISOString(),
      carry: this.snapshot().carry,
      // Its home stays with it: the session wakes on the host that holds its project.
      ...(this.input.home ? { home: this.input.home } : {}),
    };
  }

  /** What a task child gets: its request and settings, the session's grants and memory, and nothing more. */
  taskInput(item: QueuedMessage & { taskId: string }, now: Date): TaskInput {
    return {
      taskId: item.taskId,
      sessionId: this.input.sessionId,
      prompt: item.text,
      projectDir: this.input.projectDir,
      mode: item.mode ?? this.mode,
      toolAccess: item.toolAccess ?? this.toolAccess,
      network: this.network,
      review: item.review ?? this.review,
      route: false,
      // Security: a lapsed grant is never handed on, even before the session drops it.
      grants: this.grants.live(now),
      grantTtlMs: this.input.grantTtlMs,
      summary: this.memory.summary,
      recentTurns: this.memory.recent(),
      maxTokens: this.input.maxTokensPerTask,
      maxCallsPerStep: this.input.maxCallsPerStep,
      continueAsNewAfterEvents: this.input.taskContinueAsNewAfterEvents,
      // The task works where the session's project is.
      ...(this.input.home ? { home: this.input.home } : {}),
    };
  }

  /** The `context` event: the settings in force and the project context file in use. */
  contextEvent(): ContextEvent {
    return {
      type: 'context',
      mode: this.mode,
      // A mode that cannot run is declined by the task, never swapped for another: requested and effective agree.
      requestedMode: this.mode,
      modeNote: this.mode === 'scientific' ? SCIENTIFIC_MODE_EXPLANATION : null,
      toolAccess: this.toolAccess,
      network: this.network,
      ...(this.sandbox ? { sandbox: this.sandbox.status, sandboxNote: this.sandbox.note } : {}),
      projectDir: this.input.projectDir,
      projectContextFile: this.contextFile,
    };
  }

  /** The run's current details (markdown) for the Temporal UI. */
  details(): string {
    const { currentTaskId, queue, memory } = this;
    return [
      `**${this.sleeping ? 'sleeping' : currentTaskId ? `running ${currentTaskId}` : queue.length ? 'busy' : 'idle'}**`,
      `mode ${this.mode} · tools ${this.toolAccess} · ${this.tasks.length} task(s) · ${queue.length} queued`,
      `memory: ${totalChars(memory.turns)} chars verbatim, ${memory.summarisedChars} summarised`,
    ].join('\n\n');
  }

  /** The `state` query's answer and the carry into the next run, from one reading of the session. */
  snapshot(): { state: SessionState; carry: SessionCarry } {
    const { log } = this;
    const { summary, turns, summarisedChars, settings } = this.memory;
    const { queue, messageSeq, taskCounter } = this.queue.carry();
    return {
      state: {
        sessionId: this.input.sessionId,
        projectDir: this.input.projectDir,
        mode: this.mode,
        toolAccess: this.toolAccess,
        network: this.network,
        review: this.review,
        status: this.sleeping ? 'sleeping' : 'running',
        grants: this.grants.shown(new Date()),
        memory: { summary, turns, summarisedChars, settings },
        projectContextFile: this.contextFile,
        currentTaskId: this.currentTaskId,
        tasks: this.tasks,
        queue: this.queue.view(),
        commands: COMMANDS,
        usage: this.usage,
        lastSeq: log.lastSeq,
        earlierRuns: [...this.earlierRuns],
        ...(this.input.home ? { home: homeRef(this.input.home) } : {}),
      },
      carry: {
        mode: this.mode,
        toolAccess: this.toolAccess,
        network: this.network,
        review: this.review,
        grants: this.grants.held,
        grantCounter: this.grants.counter,
        summary,
        turns,
        summarisedChars,
        queue,
        taskCounter,
        messageSeq,
        tasks: this.tasks.slice(-CARRIED_TASKS),
        lastSeq: log.lastSeq,
        recentEvents: log.tail(CARRIED_EVENTS),
        contextFile: this.contextFile,
        ...(this.sandbox ? { sandbox: this.sandbox } : {}),
        usage: this.usage,
        runs: this.runs,
        lastActivityAt: this.lastActivityAt,
        earlierRuns: [...this.earlierRuns, { runId: this.runId, firstSeq: log.firstSeq, lastSeq: log.lastSeq }].slice(
          -CARRIED_RUN_LINKS
        ),
      },
    };
  }
}

/** An answer on the session's log: a chat reply, a command's result, or a task's answer (with its id). */
export function answerEvent(
  text: string,
  extra: { taskId?: string; command?: string; usage?: CallUsage } = {}
): EventBody {
  return { type: 'answer', ...extra, text, verification: 'unverified', label: UNVERIFIED_LABEL };
}

/** The task's answer as a turn of the conversation, or what became of the task when it has none. */
export function taskReply(result: TaskResult): string {
  const what = result.status === 'cancelled' ? 'was cancelled' : result.status === 'rewound' ? 'was rewound' : 'failed';
  return result.answer ?? `(the task ${what}${result.error ? `: ${result.error}` : ''})`;
}

/** The result of a task whose child workflow could not be started or did not return one. */
export function unstartedTask(taskId: string, error: string): TaskResult {
  return { taskId, status: 'failed', answer: null, verification: 'unverified', error, newGrants: [] };
}

/** A task's one-line summary in the Temporal UI: the first line of its request. */
export function firstLine(text: string): string {
  const line = text.trim().split('\n')[0];
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
