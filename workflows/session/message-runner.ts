/**
 * Taking one message off a session's queue (workflow code: it starts children and schedules activities). A chat
 * reply goes into memory and onto the log; a task runs as a `taskWorkflow` child until it ends; the queued
 * commands run: `/compact` folds memory with a `summarizeMemoryWorkflow` child, `/init` writes AGENTS.md.
 */
import { condition, executeChild, isCancellation, startChild, workflowInfo } from '@temporalio/workflow';
import { taskStartAttributes } from '../../common/search-attributes';
import { inTraceOf } from '../shared/trace-context';
import type { QueuedMessage, SubmitResult, Turn } from '../../common/session';
import type { TaskResult } from '../../common/task';
import { projectSetup } from '../shared/activities';
import { heldBy, homeQueue, notTaken } from '../shared/home';
import { homeName, hostTaskQueue } from '../../common/home';
import { Failure, failureMessage } from '../../common/failures';
import { taskWorkflow } from '../task/workflow';
import { summarizeMemoryWorkflow } from '../summarize/workflow';
import { INIT_READ_ONLY_TEXT, initWrittenText, parseCommand } from './commands';
import { foldDetail, totalChars } from './memory';
import { showSessionDetails } from './details';
import { answerEvent, firstLine, taskReply, unstartedTask, type Session } from './session-state';

export class MessageRunner {
  constructor(private readonly session: Session) {}

  /** Takes the message at the head of the queue: a command, a chat reply, or a task. */
  async take(item: QueuedMessage): Promise<void> {
    const { session } = this;
    const { log } = session;
    if (item.route === 'command') {
      session.queue.settle(item.seq, await this.runCommand(item));
      return;
    }
    if (item.route === 'chat') {
      session.memory.add({ role: 'user', text: item.text }, { role: 'assistant', text: item.reply! });
      log.emit(answerEvent(item.reply!, item.replyUsage ? { usage: item.replyUsage } : {}));
      return;
    }
    await this.runTask(item as QueuedMessage & { taskId: string });
  }

  /** Folds `older` into the running summary with a child workflow; on failure memory stays as it was. */
  async summarise(older: Turn[], recent: Turn[], why: 'threshold' | 'compact'): Promise<void> {
    const { session } = this;
    const { log } = session;
    const { memory } = session;
    try {
      const res = await executeChild(summarizeMemoryWorkflow, {
        workflowId: `${workflowInfo().workflowId}-memory-${session.runs}-${this.session.processed}-${why}`,
        args: [{ summary: memory.summary, turns: older }],
        staticSummary: `fold ${older.length} turns (${totalChars(older)} chars) into the summary`,
      });
      memory.fold(older, recent, res);
      const detail = foldDetail(why, older.length, res.foldedChars, totalChars(memory.turns));
      const usage = res.usage ? session.charge(res.usage) : undefined;
      log.emit({
        type: 'memory',
        action: 'summarised',
        detail,
        foldedChars: res.foldedChars,
        ...(usage ? { usage } : {}),
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.emit({
        type: 'memory',
        action: 'failed',
        detail: `summarisation failed, memory unchanged: ${failureMessage(err)}`,
      });
    }
    showSessionDetails(this.session);
  }

  private async runTask(item: QueuedMessage & { taskId: string }): Promise<void> {
    const { session } = this;
    const { input, log } = session;
    const { taskId } = item;
    const taskInput = session.taskInput(item, new Date());
    session.memory.add({ role: 'user', text: item.text });
    session.currentTaskId = taskId;
    session.tasks.push(taskId);
    showSessionDetails(this.session);
    log.emit({ type: 'status', status: 'running', taskId, detail: `task ${taskId} started` });
    let result: TaskResult;
    try {
      // In the trace of the request that asked for the task (shared/trace-context.ts).
      const child = await inTraceOf(item, () =>
        startChild(taskWorkflow, {
          workflowId: taskId,
          args: [taskInput],
          staticSummary: firstLine(item.text),
          staticDetails: `session ${input.sessionId} · mode ${taskInput.mode} · tools ${taskInput.toolAccess} · project ${input.projectDir}`,
          typedSearchAttributes: taskStartAttributes(input.sessionId, taskInput.mode),
        })
      );
      session.queue.started(taskId);
      // A rewind's reset makes a new run Temporal does not report to the parent: that run reports its end itself.
      let ended: { result: TaskResult } | { err: unknown } | undefined;
      void child.result().then(
        (r) => (ended = { result: r }),
        (err: unknown) => (ended = { err })
      );
      // A run a rewind terminated by its reset is not the task's end: the new run reports that.
      await condition(
        () =>
          session.reportedEnds.has(taskId) ||
          (ended !== undefined && !('err' in ended && session.rewinding.has(taskId)))
      );
      const reported = session.reportedEnds.get(taskId);
      session.reportedEnds.delete(taskId);
      session.rewinding.delete(taskId);
      if (reported) result = reported;
      else if (ended && 'result' in ended) result = ended.result;
      else throw (ended as { err: unknown }).err;
    } catch (err) {
      session.queue.started(taskId);
      if (isCancellation(err)) throw err;
      result = unstartedTask(taskId, failureMessage(err));
    }
    // The session usually has them already: the task tells it of each grant as it is made.
    const added = session.grants.takeFromTask(result.newGrants, new Date());
    if (added.length) log.emit(session.grants.event('granted', added));
    if (result.usage) session.charge(result.usage);
    session.memory.add({ role: 'assistant', text: taskReply(result) });
    if (result.answer) log.emit(answerEvent(result.answer, { taskId }));
    log.emit({
      type: 'status',
      status: result.status,
      taskId,
      detail: result.error ?? `task ${taskId} ${result.status}`,
    });
    session.currentTaskId = null;
    session.touch(new Date());
  }

  private async runCommand(item: QueuedMessage): Promise<SubmitResult> {
    const { session } = this;
    const { input, log } = session;
    const cmd = parseCommand(item.text);
    if (cmd.name === 'compact') {
      const { older, recent } = session.memory.compaction();
      if (!older.length) {
        const detail = '/compact: nothing to summarise yet';
        log.emit({ type: 'memory', action: 'nothing_to_summarise', detail, foldedChars: 0 });
      } else await this.summarise(older, recent, 'compact');
      return { kind: 'command' };
    }
    // /init
    if (session.toolAccess === 'read_only') {
      log.emit(answerEvent(INIT_READ_ONLY_TEXT, { command: '/init' }));
      return { kind: 'command', reply: INIT_READ_ONLY_TEXT };
    }
    try {
      const init = (at: ReturnType<typeof homeQueue>) =>
        projectSetup.initProject.executeWithOptions({ summary: 'init: write AGENTS.md', ...at }, [
          { projectDir: input.projectDir },
        ]);
      // A group's host that does not hold the project's lease names the one that does: the write goes there.
      const r = await init(homeQueue(input.home)).catch((err: unknown) => {
        const holder = heldBy(err);
        if (holder === null || !input.home) throw err;
        return init({ taskQueue: hostTaskQueue(holder), scheduleToStartTimeout: input.home.waitMs });
      });
      session.contextFile = 'AGENTS.md';
      const reply = initWrittenText(r.path, r.bytes);
      log.emit(answerEvent(reply, { command: '/init', usage: session.charge(r.usage) }));
      log.emit(session.contextEvent());
      return { kind: 'command', reply };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const gone = input.home && notTaken(err) ? input.home : null;
      if (gone) log.emit({ type: 'waiting_for_host', hostId: homeName(gone) });
      const message = gone
        ? `/init failed: host ${homeName(gone)}, which holds this project, did not take the work within ${gone.waitMs / 1000} s; send /init again once it is back`
        : `/init failed: ${failureMessage(err)}`;
      log.emit({ type: 'error', code: Failure.InitFailed, message });
      return { kind: 'command', reply: message };
    }
  }
}
