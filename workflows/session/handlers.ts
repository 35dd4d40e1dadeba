/**
 * The session's message handlers (workflow code): queries `state` and `events`; signals `settings` and `grant`
 * (from a child task); updates `submit` (a message or a slash command), `startTask` (POST /tasks) and `revokeGrant`
 * (which tells the running task too). Each reads or
 * changes the `Session`; the main loop takes the queued messages in order.
 */
import {
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  setHandler,
} from '@temporalio/workflow';
import {
  RevokeGrantRequestSchema,
  SettingsSchema,
  StartTaskRequestSchema,
  SubmitRequestSchema,
  type QueuedMessage,
  type SubmitRequest,
  type SubmitResult,
} from '../../common/session';
import { GrantSchema, TaskResultSchema, type HeldGrant } from '../../common/task';
import { grantRevokedSignal } from '../task/messages';
import { modelNodes } from '../shared/activities';
import { homeQueue, notTaken } from '../shared/home';
import { homeName } from '../../common/home';
import { parseOrThrow, parseSignal } from '../shared/payloads';
import { rememberTrace } from '../shared/trace-context';
import { Failure, failureCode, failureMessage, isTimeout } from '../../common/failures';
import { helpText, isCommand, modeSetText, modeUsageText, parseCommand, unknownCommandText } from './commands';
import { showSessionDetails } from './details';
import {
  eventsQuery,
  grantSignal,
  revokeGrantUpdate,
  settingsSignal,
  startTaskUpdate,
  stateQuery,
  submitUpdate,
  taskEndedSignal,
  taskRewindingSignal,
} from './messages';
import { answerEvent, type Session } from './session-state';

export function setSessionHandlers(session: Session): void {
  const { input, queue, memory, log } = session;
  const emitContext = () => log.emit(session.contextEvent());

  setHandler(stateQuery, () => session.snapshot().state);
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0, args?.before));

  setHandler(settingsSignal, (raw: unknown) => {
    // Signals come from the Temporal CLI too: a bad value is reported and never stored.
    const p = parseSignal(SettingsSchema, raw, 'settings');
    if (!p.ok) {
      log.emit({ type: 'error', code: Failure.InvalidSignal, message: `settings signal ignored: ${p.problem}` });
      return;
    }
    if (session.applySettings(p.value)) {
      emitContext();
      showSessionDetails(session);
    }
  });

  setHandler(taskEndedSignal, (raw: unknown) => {
    const p = parseSignal(TaskResultSchema, raw, 'taskEnded');
    if (!p.ok) return;
    const result = p.value;
    // Only a task of this session's; the one it runs now is finished by the message runner, which waits for this.
    if (!session.tasks.includes(result.taskId)) return;
    if (result.taskId === session.currentTaskId) {
      session.reportedEnds.set(result.taskId, result);
      return;
    }
    // A task that had ended was rewound (or run again from a step): the session's stream says how it ends now.
    if (result.answer) log.emit(answerEvent(result.answer, { taskId: result.taskId }));
    log.emit({
      type: 'status',
      status: result.status,
      taskId: result.taskId,
      detail: `task ${result.taskId} ${result.status}`,
    });
  });
  setHandler(taskRewindingSignal, (raw: unknown) => {
    const taskId = (raw as { taskId?: unknown } | null)?.taskId;
    if (typeof taskId === 'string' && taskId === session.currentTaskId) session.rewinding.add(taskId);
  });
  setHandler(grantSignal, (raw: unknown) => {
    const p = parseSignal(GrantSchema, raw, 'grant');
    if (!p.ok) return;
    const added = session.grants.add([p.value], new Date());
    if (added.length) log.emit(session.grants.event('granted', added));
  });

  const noSuchGrant = (grantId: string) => {
    const held = session.grants.held.map((g) => g.id).join(', ') || 'none';
    return ApplicationFailure.nonRetryable(
      `session "${input.sessionId}" holds no grant "${grantId}" (it holds: ${held})`,
      Failure.GrantNotFound
    );
  };

  /**
   * Security: a task copies the session's grants when it starts, so the one running now is told of a revocation
   * before the update answers (the signal is in the task's history by then: it stops using the grant at its next
   * permission check). A task that has ended meanwhile uses no grant any more.
   */
  async function tellRunningTask(revoked: HeldGrant): Promise<void> {
    const taskId = session.currentTaskId;
    if (!taskId) return;
    await condition(() => queue.hasStarted(taskId) || session.currentTaskId !== taskId);
    if (session.currentTaskId !== taskId) return;
    try {
      await getExternalWorkflowHandle(taskId).signal(grantRevokedSignal, {
        grantId: revoked.id,
        path: revoked.path,
        op: revoked.op,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
    }
  }

  setHandler(
    revokeGrantUpdate,
    async (request) => {
      // A run that woke reads its grants from the run that slept before it knows which it holds.
      await condition(() => session.grants.known);
      const revoked = session.grants.revoke(request.grantId, session.currentTaskId !== null);
      if (!revoked) throw noSuchGrant(request.grantId);
      log.emit(session.grants.event('revoked', [revoked]));
      await tellRunningTask(revoked);
      return { revoked };
    },
    {
      validator: (request) => {
        const { grantId } = parseOrThrow(RevokeGrantRequestSchema, 'invalid grant', request, 'grant');
        // Refused before it reaches history when the grants are known: the API answers 404 naming those held.
        if (session.grants.known && !session.grants.held.some((g) => g.id === grantId)) throw noSuchGrant(grantId);
      },
    }
  );

  setHandler(
    submitUpdate,
    (request) => (isCommand(request.text.trim()) ? submitCommand(request) : submitMessage(request)),
    {
      validator: (request) => {
        parseOrThrow(SubmitRequestSchema, 'invalid message', request, 'message');
      },
    }
  );

  /** A slash command: /help, /mode and unknown ones are answered at once; the others wait their turn. */
  async function submitCommand(request: SubmitRequest): Promise<SubmitResult> {
    const text = request.text.trim();
    const seq = queue.nextSeq();
    const wasBusy = session.busy;
    const cmd = parseCommand(text);
    if (cmd.name === 'help') return { kind: 'command', reply: helpText() };
    if (cmd.name === 'unknown') return { kind: 'command', reply: unknownCommandText(cmd.raw) };
    if (cmd.name === 'mode') {
      if (!cmd.mode) return { kind: 'command', reply: modeUsageText(session.mode) };
      session.mode = cmd.mode;
      emitContext();
      showSessionDetails(session);
      return { kind: 'command', reply: modeSetText(session.mode) };
    }
    queue.push({ seq, kind: 'command', text, route: 'command' });
    if (wasBusy) return { kind: 'command', queued: true };
    await condition(() => queue.outcome(seq) !== undefined);
    return queue.outcome(seq)!;
  }

  /**
   * A plain message is routed as it arrives, inside this handler: the update's result says chat (with the reply)
   * or task (with the id), even while an earlier task runs. Routing from the loop would hold that answer back
   * until the message is taken; routing from a coroutine of its own would complete the update after commands
   * the session issues in the same workflow task, an order that running sessions' histories do not have.
   */
  async function submitMessage(request: SubmitRequest): Promise<SubmitResult> {
    const text = request.text.trim();
    const seq = queue.nextSeq();
    const wasBusy = session.busy;
    const item: QueuedMessage = { seq, kind: 'message', text, ...(request.mode ? { mode: request.mode } : {}) };
    rememberTrace(item);
    queue.push(item);
    if ((request.mode ?? session.mode) === 'scientific') {
      // Scientific requests go to a task, which declines them with the explanation: never an ungrounded chat reply.
      item.route = 'task';
    } else {
      try {
        // Bounded, retries included: the caller waits on this update, and is answered with the error at the limit.
        const r = await modelNodes.routeRequest.executeWithOptions(
          {
            summary: 'route request',
            scheduleToCloseTimeout: input.routeTimeoutMs,
            // On a cluster: a host that does not take the routing in time is gone (see the catch below).
            ...homeQueue(input.home, input.routeTimeoutMs),
          },
          [
            {
              text,
              projectDir: input.projectDir,
              summary: memory.summary || undefined,
              recentTurns: memory.recent(),
            },
          ]
        );
        item.route = r.route === 'chat' && r.reply ? 'chat' : 'task';
        if (item.route === 'chat') {
          item.reply = r.reply!;
          item.replyUsage = session.charge(r.usage);
        } else session.charge(r.usage);
      } catch (err) {
        if (input.home && notTaken(err)) {
          // The host that holds the project is gone: the message becomes a task, which waits for the host (it
          // says so, and can be cancelled) rather than the message failing on a model that was never asked.
          log.emit({ type: 'waiting_for_host', hostId: homeName(input.home) });
          item.route = 'task';
        } else {
          queue.remove(item);
          const timedOut = isTimeout(err);
          const why = timedOut
            ? `the model did not answer within ${input.routeTimeoutMs / 1000} s (model.route_timeout_ms)`
            : failureMessage(err);
          const message = `could not route the message: ${why}`;
          log.emit({ type: 'error', code: Failure.RouteFailed, message });
          // The model's own failure type (ModelUnavailable, ModelOutputInvalid, ...) tells the API what to answer.
          throw ApplicationFailure.nonRetryable(
            message,
            timedOut ? Failure.ModelUnavailable : failureCode(err, Failure.RouteFailed)
          );
        }
      }
    }
    if (item.route === 'task') item.taskId = queue.nextTaskId();
    if (item.route === 'task' && !wasBusy)
      await condition(() => queue.hasStarted(item.taskId!) || !queue.includes(item));
    return {
      kind: item.route,
      ...(item.taskId ? { taskId: item.taskId } : {}),
      ...(item.reply ? { reply: item.reply } : {}),
      ...(wasBusy ? { queued: true } : {}),
    };
  }

  setHandler(
    startTaskUpdate,
    async (request) => {
      const wasBusy = session.busy;
      const taskId = queue.nextTaskId();
      const item: QueuedMessage = {
        seq: queue.nextSeq(),
        kind: 'task',
        text: request.prompt.trim(),
        route: 'task',
        taskId,
        ...(request.mode ? { mode: request.mode } : {}),
        ...(request.toolAccess ? { toolAccess: request.toolAccess } : {}),
        ...(request.review ? { review: request.review } : {}),
      };
      rememberTrace(item);
      queue.push(item);
      if (!wasBusy) await condition(() => queue.hasStarted(taskId) || !queue.includes(item));
      return { taskId, queued: wasBusy };
    },
    {
      validator: (request) => {
        parseOrThrow(StartTaskRequestSchema, 'invalid task', request, 'task');
      },
    }
  );
}
