/**
 * `sessionWorkflow` (contract), id `session-<sessionId>`: one chat session, long-lived.
 *
 * Holds the project directory, mode, tool access level, path grants, memory (recent turns verbatim plus a
 * running summary), the project context file in use, and the queue of messages (`Session`). Each plain message
 * goes to the `route_request` node as it arrives: chat is answered inline, a task becomes a `taskWorkflow` child
 * (`task-<sessionId>-<n>`) given only what it needs. One message is taken at a time; messages that arrive
 * meanwhile wait in order. Older memory is folded by the `summarizeMemoryWorkflow` child. Slash commands: /help,
 * /mode, /compact, /init.
 *
 * Messages: update `submit {text, mode?}` → `{kind, taskId?, reply?, queued?}`; update `startTask` (POST /tasks);
 * signal `settings {mode?, toolAccess?, network?}`; signal `grant` (from a child task); queries `state` and `events {after}`.
 *
 * Lifecycle: runs until terminated; continues-as-new when Temporal suggests it (or after `continueAsNewAfter`
 * messages), once idle and after its handlers have finished, carrying all of its state (`Session.snapshot`).
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { KleaEvent } from '../../common/events';
import { KleaMode, KleaSessionId } from '../../common/search-attributes';
import {
  SessionInputSchema,
  SettingsSchema,
  StartTaskRequestSchema,
  SubmitRequestSchema,
  type QueuedMessage,
  type SessionInput,
  type SubmitRequest,
  type SubmitResult,
} from '../../common/session';
import { GrantSchema } from '../../common/task';
import { modelNodes } from '../shared/activities';
import { EventLog } from '../shared/event-log';
import { rememberTrace } from '../shared/trace-context';
import { parseInput, parseOrThrow, parseSignal } from '../shared/payloads';
import { checkProject } from '../shared/project-check';
import { failureCode, failureMessage, isTimeout } from '../task/text';
import { helpText, isCommand, modeSetText, modeUsageText, parseCommand, unknownCommandText } from './commands';
import { MessageRunner } from './message-runner';
import { eventsQuery, grantSignal, settingsSignal, startTaskUpdate, stateQuery, submitUpdate } from './messages';
import { Session } from './session-state';

export async function sessionWorkflow(rawInput: SessionInput): Promise<void> {
  const parsed = parseInput(SessionInputSchema, 'invalid session input', rawInput);
  // Security: what a run carries over (grants included) counts only when this run continues an earlier one; a
  // session started with a made-up carry gets none of its grants.
  const forgedGrants =
    (parsed.carry?.grants.length ?? 0) > 0 &&
    !workflowInfo().continuedFromExecutionRunId &&
    patched('carried-grants-only-when-continued');
  const input = forgedGrants && parsed.carry ? { ...parsed, carry: { ...parsed.carry, grants: [] } } : parsed;
  const session = new Session(input);
  const { queue, memory } = session;
  const log = new EventLog((input.carry?.recentEvents ?? []) as KleaEvent[], input.carry?.lastSeq ?? 0);
  if (forgedGrants)
    log.emit({
      type: 'error',
      code: 'GrantsIgnored',
      message: 'the grants in the input were ignored: a session takes grants over only from its own earlier run',
    });
  /** Messages taken in this run (memory children are named by it; the count also bounds the run). */
  let processed = 0;

  const showDetails = () => {
    setCurrentDetails(session.details());
    // KleaStatus is left to tasks, so `KleaStatus="awaiting_review"` lists only tasks waiting for people.
    upsertSearchAttributes([{ key: KleaMode, value: session.mode }]);
  };
  const emitContext = () => log.emit(session.contextEvent());
  const runner = new MessageRunner({ input, session, log, processed: () => processed, showDetails });

  // ------------------------------------------------------------------ handlers
  setHandler(stateQuery, () => session.snapshot(log).state);
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0));

  setHandler(settingsSignal, (raw: unknown) => {
    // Signals come from the Temporal CLI too: a bad value is reported and never stored.
    const p = parseSignal(SettingsSchema, raw, 'settings');
    if (!p.ok) {
      log.emit({ type: 'error', code: 'InvalidSignal', message: `settings signal ignored: ${p.problem}` });
      return;
    }
    if (session.applySettings(p.value)) {
      emitContext();
      showDetails();
    }
  });

  setHandler(grantSignal, (raw: unknown) => {
    const p = parseSignal(GrantSchema, raw, 'grant');
    if (p.ok) session.addGrants([p.value]);
  });

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
      showDetails();
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
          { summary: 'route request', scheduleToCloseTimeout: input.routeTimeoutMs },
          [{ text, summary: memory.summary || undefined, recentTurns: memory.recent() }]
        );
        item.route = r.route === 'chat' && r.reply ? 'chat' : 'task';
        if (item.route === 'chat') {
          item.reply = r.reply!;
          item.replyUsage = session.charge(r.usage);
        } else session.charge(r.usage);
      } catch (err) {
        queue.remove(item);
        const timedOut = isTimeout(err);
        const why = timedOut
          ? `the model did not answer within ${input.routeTimeoutMs / 1000} s (model.route_timeout_ms)`
          : failureMessage(err);
        const message = `could not route the message: ${why}`;
        log.emit({ type: 'error', code: 'RouteFailed', message });
        // The model's own failure type (ModelUnavailable, ModelOutputInvalid, ...) tells the API what to answer.
        throw ApplicationFailure.nonRetryable(message, timedOut ? 'ModelUnavailable' : failureCode(err, 'RouteFailed'));
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

  // ------------------------------------------------------------------ main loop
  upsertSearchAttributes([{ key: KleaSessionId, value: input.sessionId }]);
  if (!input.carry) {
    const project = await checkProject(input.projectDir);
    if (project.refused) {
      log.emit({ type: 'error', code: 'ProjectNotAllowed', message: project.refused });
      throw ApplicationFailure.nonRetryable(project.refused, 'ProjectNotAllowed');
    }
    const ctx = project.context;
    session.contextFile = ctx.file;
    session.sandbox = ctx.sandbox ? { status: ctx.sandbox, note: ctx.sandboxNote ?? null } : null;
    emitContext();
  }
  showDetails();

  const rollOver = () => processed >= input.continueAsNewAfter || workflowInfo().continueAsNewSuggested;
  for (;;) {
    await condition(() => queue.ready() !== undefined || (rollOver() && queue.length === 0));
    const item = queue.ready();
    if (!item) {
      // Idle and due: hand everything to a fresh run once in-flight handlers are done.
      await condition(allHandlersFinished);
      if (queue.routing()) continue;
      await continueAsNew<typeof sessionWorkflow>({ ...input, carry: session.snapshot(log).carry });
      continue; // not reached: continue-as-new ends this run
    }
    await runner.take(item);
    queue.shift();
    processed++;
    const due = memory.due();
    if (due) await runner.summarise(due.older, due.recent, 'threshold');
    showDetails();
  }
}
