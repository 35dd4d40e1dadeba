/**
 * `sessionWorkflow` (contract), id `session-<sessionId>`: one chat session, long-lived.
 *
 * Holds the project directory, mode, tool access level, path grants, memory (recent turns verbatim plus a
 * running summary), the project context file in use, and the queue of messages. Each plain message goes to the
 * `route_request` node: chat is answered inline, a task becomes a `taskWorkflow` child (`task-<sessionId>-<n>`)
 * given only what it needs. One task runs at a time; messages that arrive meanwhile wait in order. Older
 * memory is folded by the `summarizeMemoryWorkflow` child. Slash commands: /help, /mode, /compact, /init.
 *
 * Messages: update `submit {text, mode?}` → `{kind, taskId?, reply?}`; update `startTask` (POST /tasks);
 * signal `settings {mode?, toolAccess?}`; queries `state` and `events {after}`.
 * Lifecycle: runs until terminated; continues-as-new when Temporal suggests it (or after `continueAsNewAfter`
 * messages), after its handlers have finished, carrying all of its state.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  isCancellation,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { UNVERIFIED_LABEL, type KleaEvent } from '../../common/events';
import { KleaMode, KleaSessionId, KleaStatus } from '../../common/search-attributes';
import {
  COMMANDS,
  SessionInputSchema,
  SettingsSchema,
  StartTaskRequestSchema,
  SubmitRequestSchema,
  type QueuedMessage,
  type SessionInput,
  type SessionState,
  type SubmitResult,
  type Turn,
} from '../../common/session';
import { GrantSchema, type SessionGrant, type TaskInput, type TaskResult } from '../../common/task';
import { modelNodes, projectFacts, projectSetup } from '../shared/activities';
import { EventLog } from '../shared/event-log';
import { parseInput, parseOrThrow, parseSignal } from '../shared/payloads';
import { SCIENTIFIC_MODE_EXPLANATION } from '../task/modes';
import { failureMessage } from '../task/text';
import { taskWorkflow } from '../task/workflow';
import { summarizeMemoryWorkflow } from '../summarize/workflow';
import { helpText, isCommand, parseCommand, unknownCommandText } from './commands';
import { compactSplit, needsSummary, splitWindow, totalChars } from './memory';
import { eventsQuery, grantSignal, settingsSignal, startTaskUpdate, stateQuery, submitUpdate } from './messages';

/** Events carried into the next run, so a reconnecting client finds no gap. */
const CARRIED_EVENTS = 500;

const firstLine = (text: string) => {
  const line = text.trim().split('\n')[0];
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
};

export async function sessionWorkflow(rawInput: SessionInput): Promise<void> {
  const input = parseInput(SessionInputSchema, 'invalid session input', rawInput);
  const carry = input.carry;
  const log = new EventLog((carry?.recentEvents ?? []) as KleaEvent[], carry?.lastSeq ?? 0);

  let mode = carry?.mode ?? input.mode;
  let toolAccess = carry?.toolAccess ?? input.toolAccess;
  const review = carry?.review ?? input.review;
  const grants: SessionGrant[] = [...(carry?.grants ?? [])];
  const addGrants = (more: readonly SessionGrant[]) => {
    for (const g of more) if (!grants.some((x) => x.path === g.path && x.op === g.op)) grants.push(g);
  };
  let summary = carry?.summary ?? '';
  let turns: Turn[] = [...(carry?.turns ?? [])];
  let summarisedChars = carry?.summarisedChars ?? 0;
  const queue: QueuedMessage[] = [...(carry?.queue ?? [])];
  let taskCounter = carry?.taskCounter ?? 0;
  let messageSeq = carry?.messageSeq ?? 0;
  const tasks: string[] = [...(carry?.tasks ?? [])];
  let contextFile = carry?.contextFile ?? null;
  const runs = (carry?.runs ?? 0) + 1;
  let processed = 0;
  let currentTaskId: string | null = null;
  const outcomes = new Map<number, SubmitResult>();
  /** Tasks whose child workflow has been started (so a caller that was not queued can use the id at once). */
  const started = new Set<string>();

  const recentTurns = () => splitWindow(turns, input.memory.numHistoryChars).recent;
  const busy = () => queue.length > 0 || currentTaskId !== null;

  const snapshot = (): SessionState => ({
    sessionId: input.sessionId,
    projectDir: input.projectDir,
    mode,
    toolAccess,
    review,
    grants,
    memory: { summary, turns, summarisedChars, settings: input.memory },
    projectContextFile: contextFile,
    currentTaskId,
    tasks,
    queue: queue.map(({ seq, kind, text, route, taskId }) => ({ seq, kind, text, route, taskId })),
    commands: COMMANDS,
    lastSeq: log.lastSeq,
  });

  const showDetails = () => {
    setCurrentDetails(
      [
        `**${currentTaskId ? `running ${currentTaskId}` : queue.length ? 'busy' : 'idle'}**`,
        `mode ${mode} · tools ${toolAccess} · ${tasks.length} task(s) · ${queue.length} queued`,
        `memory: ${totalChars(turns)} chars verbatim, ${summarisedChars} summarised`,
      ].join('\n\n')
    );
    // KleaStatus is left to tasks, so `KleaStatus="awaiting_review"` lists only tasks waiting for people.
    upsertSearchAttributes([{ key: KleaMode, value: mode }]);
  };

  /** An answer on the session's log: a chat reply, a command's result, or a task's answer (with its id). */
  const emitAnswer = (text: string, extra: { taskId?: string; command?: string } = {}) =>
    log.emit({ type: 'answer', ...extra, text, verification: 'unverified', label: UNVERIFIED_LABEL });

  const emitContext = (requested = mode) =>
    log.emit({
      type: 'context',
      mode,
      requestedMode: requested,
      modeNote: mode === 'scientific' ? SCIENTIFIC_MODE_EXPLANATION : null,
      toolAccess,
      projectDir: input.projectDir,
      projectContextFile: contextFile,
    });

  // ------------------------------------------------------------------ handlers
  setHandler(stateQuery, snapshot);
  setHandler(eventsQuery, (args) => log.after(args?.after ?? 0));

  setHandler(settingsSignal, (raw: unknown) => {
    // Signals come from the Temporal CLI too: a bad value is reported and never stored.
    const p = parseSignal(SettingsSchema, raw, 'settings');
    if (!p.ok) {
      log.emit({ type: 'error', code: 'InvalidSignal', message: `settings signal ignored: ${p.problem}` });
      return;
    }
    const s = p.value;
    let changed = false;
    if (s?.mode && s.mode !== mode) {
      mode = s.mode;
      changed = true;
    }
    if (s?.toolAccess && s.toolAccess !== toolAccess) {
      toolAccess = s.toolAccess;
      changed = true;
    }
    if (changed) {
      emitContext();
      showDetails();
    }
  });

  setHandler(grantSignal, (raw: unknown) => {
    const p = parseSignal(GrantSchema, raw, 'grant');
    if (p.ok) addGrants([p.value]);
  });

  setHandler(
    submitUpdate,
    async (request): Promise<SubmitResult> => {
      const text = request.text.trim();
      const seq = ++messageSeq;
      const wasBusy = busy();
      if (isCommand(text)) {
        const cmd = parseCommand(text);
        if (cmd.name === 'help') return { kind: 'command', reply: helpText() };
        if (cmd.name === 'unknown') return { kind: 'command', reply: unknownCommandText(cmd.raw) };
        if (cmd.name === 'mode') {
          if (!cmd.mode)
            return { kind: 'command', reply: `Usage: \`/mode general|scientific\` (the mode is ${mode}).` };
          mode = cmd.mode;
          emitContext();
          showDetails();
          return {
            kind: 'command',
            reply:
              mode === 'scientific' ? `Mode set to scientific. ${SCIENTIFIC_MODE_EXPLANATION}` : 'Mode set to general.',
          };
        }
        queue.push({ seq, kind: 'command', text, route: 'command' });
        if (wasBusy) return { kind: 'command', queued: true };
        await condition(() => outcomes.has(seq));
        return outcomes.get(seq)!;
      }

      const item: QueuedMessage = { seq, kind: 'message', text, ...(request.mode ? { mode: request.mode } : {}) };
      queue.push(item);
      const effectiveMode = request.mode ?? mode;
      if (effectiveMode === 'scientific') {
        // Scientific requests go to a task, which declines them with the explanation: never an ungrounded chat reply.
        item.route = 'task';
      } else {
        try {
          const r = await modelNodes.routeRequest.executeWithOptions({ summary: 'route request' }, [
            { text, summary: summary || undefined, recentTurns: recentTurns() },
          ]);
          item.route = r.route === 'chat' && r.reply ? 'chat' : 'task';
          if (item.route === 'chat') item.reply = r.reply!;
        } catch (err) {
          queue.splice(queue.indexOf(item), 1);
          const message = `could not route the message: ${failureMessage(err)}`;
          log.emit({ type: 'error', code: 'RouteFailed', message });
          throw ApplicationFailure.nonRetryable(message, 'RouteFailed');
        }
      }
      if (item.route === 'task') item.taskId = `task-${input.sessionId}-${++taskCounter}`;
      if (item.route === 'task' && !wasBusy) await condition(() => started.has(item.taskId!) || !queue.includes(item));
      return {
        kind: item.route,
        ...(item.taskId ? { taskId: item.taskId } : {}),
        ...(item.reply ? { reply: item.reply } : {}),
        ...(wasBusy ? { queued: true } : {}),
      };
    },
    {
      validator: (request) => {
        parseOrThrow(SubmitRequestSchema, 'invalid message', request, 'message');
      },
    }
  );

  setHandler(
    startTaskUpdate,
    async (request) => {
      const wasBusy = busy();
      const taskId = `task-${input.sessionId}-${++taskCounter}`;
      const item: QueuedMessage = {
        seq: ++messageSeq,
        kind: 'task',
        text: request.prompt.trim(),
        route: 'task',
        taskId,
        ...(request.mode ? { mode: request.mode } : {}),
        ...(request.toolAccess ? { toolAccess: request.toolAccess } : {}),
        ...(request.review ? { review: request.review } : {}),
      };
      queue.push(item);
      if (!wasBusy) await condition(() => started.has(taskId) || !queue.includes(item));
      return { taskId, queued: wasBusy };
    },
    {
      validator: (request) => {
        parseOrThrow(StartTaskRequestSchema, 'invalid task', request, 'task');
      },
    }
  );

  // ------------------------------------------------------------------ memory
  async function summarise(older: Turn[], recent: Turn[], why: 'threshold' | 'compact'): Promise<void> {
    try {
      const res = await executeChild(summarizeMemoryWorkflow, {
        workflowId: `${workflowInfo().workflowId}-memory-${runs}-${processed}-${why}`,
        args: [{ summary, turns: older }],
        staticSummary: `fold ${older.length} turns (${totalChars(older)} chars) into the summary`,
      });
      summary = res.summary;
      // Turns that arrived while the child ran are kept: only the folded ones leave.
      turns = [...recent, ...turns.slice(older.length + recent.length)];
      summarisedChars += res.foldedChars;
      log.emit({
        type: 'memory',
        action: 'summarised',
        detail: `${why === 'compact' ? '/compact' : 'memory threshold reached'}: folded ${older.length} turns (${res.foldedChars} characters) into the summary; ${totalChars(turns)} characters stay verbatim`,
        foldedChars: res.foldedChars,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Nothing is lost: memory stays as it was.
      log.emit({
        type: 'memory',
        action: 'failed',
        detail: `summarisation failed, memory unchanged: ${failureMessage(err)}`,
      });
    }
    showDetails();
  }

  // ------------------------------------------------------------------ processing
  async function runTask(item: QueuedMessage): Promise<void> {
    const taskId = item.taskId!;
    const taskMode = item.mode ?? mode;
    const taskAccess = item.toolAccess ?? toolAccess;
    const taskInput: TaskInput = {
      taskId,
      sessionId: input.sessionId,
      prompt: item.text,
      projectDir: input.projectDir,
      mode: taskMode,
      toolAccess: taskAccess,
      review: item.review ?? review,
      route: false,
      grants: [...grants],
      summary,
      recentTurns: recentTurns(),
    };
    turns.push({ role: 'user', text: item.text });
    currentTaskId = taskId;
    tasks.push(taskId);
    showDetails();
    log.emit({ type: 'status', status: 'running', taskId, detail: `task ${taskId} started` });
    let result: TaskResult;
    try {
      const child = await startChild(taskWorkflow, {
        workflowId: taskId,
        args: [taskInput],
        staticSummary: firstLine(item.text),
        staticDetails: `session ${input.sessionId} · mode ${taskMode} · tools ${taskAccess} · project ${input.projectDir}`,
        typedSearchAttributes: [
          { key: KleaSessionId, value: input.sessionId },
          { key: KleaStatus, value: 'planning' },
          { key: KleaMode, value: taskMode },
        ],
      });
      started.add(taskId);
      result = await child.result();
    } catch (err) {
      started.add(taskId);
      if (isCancellation(err)) throw err;
      result = {
        taskId,
        status: 'failed',
        answer: null,
        verification: 'unverified',
        error: failureMessage(err),
        newGrants: [],
      };
    }
    addGrants(result.newGrants);
    const reply =
      result.answer ??
      `(the task ${result.status === 'cancelled' ? 'was cancelled' : 'failed'}${result.error ? `: ${result.error}` : ''})`;
    turns.push({ role: 'assistant', text: reply });
    if (result.answer) emitAnswer(result.answer, { taskId });
    log.emit({
      type: 'status',
      status: result.status,
      taskId,
      detail: result.error ?? `task ${taskId} ${result.status}`,
    });
    currentTaskId = null;
  }

  async function runCommand(item: QueuedMessage): Promise<SubmitResult> {
    const cmd = parseCommand(item.text);
    if (cmd.name === 'compact') {
      const { older, recent } = compactSplit(turns);
      if (!older.length) {
        log.emit({
          type: 'memory',
          action: 'nothing_to_summarise',
          detail: '/compact: nothing to summarise yet',
          foldedChars: 0,
        });
      } else await summarise(older, recent, 'compact');
      return { kind: 'command' };
    }
    // /init
    if (toolAccess === 'read_only') {
      const reply =
        '/init writes AGENTS.md into the project, and this session has read-only tool access. Switch tool access to full (in the status pane) and run /init again.';
      emitAnswer(reply, { command: '/init' });
      return { kind: 'command', reply };
    }
    try {
      const r = await projectSetup.initProject.executeWithOptions({ summary: 'init: write AGENTS.md' }, [
        { projectDir: input.projectDir },
      ]);
      contextFile = 'AGENTS.md';
      const reply = `Wrote ${r.path} (${r.bytes} bytes) with guidance for this project. It is used as project context from now on; edit it as you like.`;
      emitAnswer(reply, { command: '/init' });
      emitContext();
      return { kind: 'command', reply };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const message = `/init failed: ${failureMessage(err)}`;
      log.emit({ type: 'error', code: 'InitFailed', message });
      return { kind: 'command', reply: message };
    }
  }

  async function take(item: QueuedMessage): Promise<void> {
    if (item.route === 'command') {
      outcomes.set(item.seq, await runCommand(item));
      return;
    }
    if (item.route === 'chat') {
      turns.push({ role: 'user', text: item.text }, { role: 'assistant', text: item.reply! });
      emitAnswer(item.reply!);
      return;
    }
    await runTask(item);
  }

  // ------------------------------------------------------------------ main loop
  upsertSearchAttributes([{ key: KleaSessionId, value: input.sessionId }]);
  if (!carry) {
    const ctx = await projectFacts.projectContextInfo
      .executeWithOptions({ summary: 'project context' }, [{ projectDir: input.projectDir }])
      .catch(() => ({ file: null }));
    contextFile = ctx.file;
    emitContext(input.mode);
  }
  showDetails();

  const rollOver = () => processed >= input.continueAsNewAfter || workflowInfo().continueAsNewSuggested;
  for (;;) {
    await condition(() => (queue.length > 0 && queue[0].route !== undefined) || (rollOver() && queue.length === 0));
    if (queue.length === 0 || queue[0].route === undefined) {
      // Idle and due: hand everything to a fresh run once in-flight handlers are done.
      await condition(allHandlersFinished);
      if (queue.some((q) => q.route === undefined)) continue;
      await continueAsNew<typeof sessionWorkflow>({
        ...input,
        carry: {
          mode,
          toolAccess,
          review,
          grants,
          summary,
          turns,
          summarisedChars,
          queue,
          taskCounter,
          messageSeq,
          tasks: tasks.slice(-1000),
          lastSeq: log.lastSeq,
          recentEvents: log.tail(CARRIED_EVENTS),
          contextFile,
          runs,
        },
      });
    }
    const item = queue[0];
    await take(item);
    queue.shift();
    processed++;
    if (needsSummary(turns, input.memory)) {
      const { older, recent } = splitWindow(turns, input.memory.numHistoryChars);
      await summarise(older, recent, 'threshold');
    }
    showDetails();
  }
}
