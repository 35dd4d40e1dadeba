/**
 * The session's queue of messages (pure). Messages are taken in order, one at a time; each is routed as it arrives
 * (chat, task or command), and the head is taken only once it has been routed. Numbering of messages and tasks
 * continues across continue-as-new.
 */
import type { QueuedMessage, SessionCarry, SessionState, SubmitResult } from '../../common/session';

export class MessageQueue {
  private readonly items: QueuedMessage[];
  private messageSeq: number;
  private taskCounter: number;
  /** Results of commands taken, for the `submit` updates waiting on them (this run only: it ends idle). */
  private readonly outcomes = new Map<number, SubmitResult>();
  /** Tasks whose child workflow has been started, so a caller that was not queued can use the id at once. */
  private readonly startedTasks = new Set<string>();

  constructor(
    private readonly sessionId: string,
    carried?: Pick<SessionCarry, 'queue' | 'messageSeq' | 'taskCounter'>
  ) {
    this.items = [...(carried?.queue ?? [])];
    this.messageSeq = carried?.messageSeq ?? 0;
    this.taskCounter = carried?.taskCounter ?? 0;
  }

  get length(): number {
    return this.items.length;
  }

  /** The number of the next message (every submitted message has one, queued or not). */
  nextSeq(): number {
    return ++this.messageSeq;
  }

  /** The id of the next task: `task-<sessionId>-<n>`. */
  nextTaskId(): string {
    return `task-${this.sessionId}-${++this.taskCounter}`;
  }

  push(item: QueuedMessage): void {
    this.items.push(item);
  }

  includes(item: QueuedMessage): boolean {
    return this.items.includes(item);
  }

  /** A message that could not be routed leaves the queue. */
  remove(item: QueuedMessage): void {
    this.items.splice(this.items.indexOf(item), 1);
  }

  /** The next message to take, once it has been routed; undefined while there is none or it is being routed. */
  ready(): QueuedMessage | undefined {
    return this.items[0]?.route !== undefined ? this.items[0] : undefined;
  }

  /** Some message is still being routed (its handler is waiting for the model). */
  routing(): boolean {
    return this.items.some((q) => q.route === undefined);
  }

  /** The head has been taken care of. */
  shift(): void {
    this.items.shift();
  }

  /** A command has been taken; the update that submitted it answers with `result`. */
  settle(seq: number, result: SubmitResult): void {
    this.outcomes.set(seq, result);
  }

  outcome(seq: number): SubmitResult | undefined {
    return this.outcomes.get(seq);
  }

  /** A task's child workflow has been started (or could not be: its id is final either way). */
  started(taskId: string): void {
    this.startedTasks.add(taskId);
  }

  hasStarted(taskId: string): boolean {
    return this.startedTasks.has(taskId);
  }

  view(): SessionState['queue'] {
    return this.items.map(({ seq, kind, text, route, taskId }) => ({ seq, kind, text, route, taskId }));
  }

  carry(): Pick<SessionCarry, 'queue' | 'messageSeq' | 'taskCounter'> {
    return { queue: this.items, messageSeq: this.messageSeq, taskCounter: this.taskCounter };
  }
}
