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
 * update `revokeGrant {grantId}`; signal `settings {mode?, toolAccess?, network?}`; signal `grant` (from a child
 * task); queries `state` and `events {after}`.
 *
 * Lifecycle: continues-as-new when Temporal suggests it (or after `continueAsNewAfter` messages), once idle and
 * after its handlers have finished, carrying all of its state (`Session.snapshot`). After `idleCloseMs` with no
 * task, nothing queued and nothing being routed it goes to sleep: the run completes with that same carry as its
 * result (`SessionSleep`). The API wakes it with update-with-start (or signal-with-start) on the same workflow id:
 * the new run starts from the result (`wakeFrom` names the run), drops the grants that lapsed meanwhile, and takes
 * the message that woke it.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { Failure } from '../../common/failures';
import { KleaSessionId } from '../../common/search-attributes';
import { SessionInputSchema, type SessionInput, type SessionSleep } from '../../common/session';
import { projectFacts, sessionRuns } from '../shared/activities';
import { atHome as runAtHome, type HostWatch } from '../shared/home';
import { parseInput } from '../shared/payloads';
import { checkProject, type ContextReader } from '../shared/project-check';
import { showSessionDetails } from './details';
import { setSessionHandlers } from './handlers';
import { MessageRunner } from './message-runner';
import { Session } from './session-state';

export async function sessionWorkflow(rawInput: SessionInput): Promise<SessionSleep> {
  const parsed = parseInput(SessionInputSchema, 'invalid session input', rawInput);
  // Security: what a run carries over (grants included) counts only when this run continues an earlier one; a
  // session started with a made-up carry gets none of its grants. A woken run reads them from the run that slept.
  const continued = Boolean(workflowInfo().continuedFromExecutionRunId);
  const wakeFrom = continued ? undefined : parsed.wakeFrom;
  const forgedGrants = !continued && !wakeFrom && (parsed.carry?.grants.length ?? 0) > 0;
  const input =
    (forgedGrants || wakeFrom) && parsed.carry ? { ...parsed, carry: { ...parsed.carry, grants: [] } } : parsed;
  const session = new Session(input, workflowInfo().runStartTime, workflowInfo().runId);
  const { queue, memory, log } = session;
  if (forgedGrants)
    log.emit({
      type: 'error',
      code: Failure.GrantsIgnored,
      message: 'the grants in the input were ignored: a session takes grants over only from its own earlier run',
    });
  if (wakeFrom) session.grants.awaitRead(parsed.carry?.grants ?? []);
  const runner = new MessageRunner(session);
  setSessionHandlers(session);

  // ------------------------------------------------------------------ main loop
  upsertSearchAttributes([{ key: KleaSessionId, value: input.sessionId }]);
  if (!input.carry) {
    // At the project's home on a cluster.
    // A host that is gone is waited for, saying so once; the `context` event that follows says it is back.
    let waited = false;
    const watch: HostWatch = {
      away: (hostId) => {
        if (!waited) log.emit({ type: 'waiting_for_host', hostId });
        waited = true;
      },
      back: () => undefined,
    };
    const atHome: ContextReader = {
      executeWithOptions: (options, args) =>
        runAtHome(input.home, watch, (at) =>
          projectFacts.projectContextInfo.executeWithOptions({ ...options, ...at }, args)
        ),
    };
    const project = await checkProject(input.projectDir, atHome);
    if (project.refused) {
      log.emit({ type: 'error', code: Failure.ProjectNotAllowed, message: project.refused });
      throw ApplicationFailure.nonRetryable(project.refused, Failure.ProjectNotAllowed);
    }
    const ctx = project.context;
    session.contextFile = ctx.file;
    session.sandbox = ctx.sandbox ? { status: ctx.sandbox, note: ctx.sandboxNote ?? null } : null;
    log.emit(session.contextEvent());
  }
  if (wakeFrom) {
    // The message that woke the session is routed first: a chat reply needs no grant, and an activity ending
    // beside the routing would hold the reply behind a workflow task of its own. Whatever uses grants (a task's
    // start, a revocation) waits until they are read.
    await condition(() => !queue.routing());
    const slept = await sessionRuns.sleptSessionGrants.executeWithOptions(
      { summary: 'wake: the grants it slept with' },
      [{ workflowId: workflowInfo().workflowId, runId: wakeFrom }]
    );
    session.grants.restore(slept.grants, slept.grantCounter);
  }
  dropLapsedGrants();
  showSessionDetails(session);

  function dropLapsedGrants() {
    const lapsed = session.grants.dropExpired(new Date());
    if (lapsed.length) log.emit(session.grants.event('expired', lapsed));
  }

  const rollOver = () => session.processed >= input.continueAsNewAfter || workflowInfo().continueAsNewSuggested;
  const idle = () => queue.length === 0 && session.currentTaskId === null;
  for (;;) {
    const woken = await condition(
      () => queue.ready() !== undefined || (rollOver() && queue.length === 0),
      input.idleCloseMs
    );
    if (!woken) {
      // Idle for idleCloseMs: sleep once the handlers in flight are done, unless one of them brought work.
      await condition(allHandlersFinished);
      if (!idle()) continue;
      const slept = session.sleep(new Date());
      showSessionDetails(session);
      return slept;
    }
    const item = queue.ready();
    if (!item) {
      // Idle and due: hand everything to a fresh run once in-flight handlers are done.
      await condition(allHandlersFinished);
      if (queue.routing()) continue;
      await continueAsNew<typeof sessionWorkflow>({ ...input, carry: session.snapshot().carry });
      continue; // not reached: continue-as-new ends this run
    }
    dropLapsedGrants();
    session.touch(new Date());
    await runner.take(item);
    queue.shift();
    session.processed++;
    const due = memory.due();
    if (due) await runner.summarise(due.older, due.recent, 'threshold');
    showSessionDetails(session);
  }
}
