// Klea's web page: a chat with one session, its tasks' plans and decisions, a status pane and an inspect pane.
// Plain DOM, no framework. Live updates come from the API's event streams (resumed with Last-Event-ID). This module
// holds the page's state, wires its parts together (chat.js, status-pane.js, notifications.js, decisions.js,
// inbox.js, task-cards.js, composer.js), follows the session's events and opens the session, new or reopened.
import { $, el } from './dom.js';
import { api, follow } from './client.js';
import { addMessage, logEvent, scrollChat } from './chat.js';
import { create as createComposer } from './composer.js';
import { create as createDecisions } from './decisions.js';
import { create as createInbox } from './inbox.js';
import { create as createNotifications } from './notifications.js';
import { create as createStatusPane } from './status-pane.js';
import { create as createTaskCards } from './task-cards.js';

const temporalUi = document.body.dataset.temporalUi;
const namespace = document.body.dataset.namespace;
const runUrl = (workflowId) =>
  temporalUi + '/namespaces/' + encodeURIComponent(namespace) + '/workflows/' + encodeURIComponent(workflowId);

const state = {
  sessionId: null,
  session: null,
  commands: [],
  tasks: new Map(), // taskId -> { card, state, streamed }
  menuIndex: 0,
  /** A task to bring into view once its decision shows (opened from the inbox). */
  focusTask: null,
  /** Decisions that started while the page was hidden (the tab title counts them). */
  unseen: 0,
};

// ------------------------------------------------------------------ the status pane and notifications
const { showContext, showGrants } = createStatusPane({ state: state, addMessage: addMessage });
const { waitingWhileHidden, askNotificationPermission } = createNotifications({ state: state });

// ------------------------------------------------------------------ decisions, the inbox and task cards
async function decide(taskId, what, body) {
  try {
    await api('POST', '/tasks/' + taskId + '/' + what, body);
    await cards.refreshTask(taskId);
  } catch (err) {
    addMessage('error', err.message);
  }
}

const { interruptForm } = createDecisions({
  decide: decide,
  titleOf: (taskId, stepId) => {
    const t = state.tasks.get(taskId);
    return t && t.titles.get(stepId);
  },
});
const inbox = createInbox({ api: api, sessionId: () => state.sessionId });
const cards = createTaskCards({
  state: state,
  runUrl: runUrl,
  logEvent: logEvent,
  scrollChat: scrollChat,
  waitingWhileHidden: waitingWhileHidden,
  interruptForm: interruptForm,
  decide: decide,
});
const taskCard = cards.taskCard;

// ------------------------------------------------------------------ session events
function onSessionEvent(e) {
  logEvent('session', e);
  if (e.type === 'context') showContext(e);
  else if (e.type === 'grants') showGrants(e.grants);
  else if (e.type === 'memory') {
    $('memory-log').appendChild(el('li', { 'data-action': e.action, text: e.detail }));
  } else if (e.type === 'answer' && !e.taskId) {
    addMessage('assistant', e.text, { markdown: true });
  } else if (e.type === 'status' && e.taskId) {
    taskCard(e.taskId);
  } else if (e.type === 'error') {
    addMessage('error', e.message);
  } else if (e.type === 'waiting_for_host') {
    addMessage('note', 'Host ' + e.hostId + ', which holds this project, is not taking work: waiting for it.');
  }
}

// ------------------------------------------------------------------ composer and the / menu
createComposer({
  state: state,
  addMessage: addMessage,
  askNotificationPermission: askNotificationPermission,
  taskCard: taskCard,
});

// ------------------------------------------------------------------ start
/**
 * The conversation as it looked live: the summary of what was folded, then each turn, where a task's request and
 * answer are its card (plan, steps, file changes, decisions and answer). Tasks are matched to the turns that asked
 * for them in order; the cards of tasks whose turns were summarised come first.
 */
async function showHistory(session) {
  if (session.memory.summary) addMessage('note', 'Earlier conversation (summarised): ' + session.memory.summary);
  const tasks = await Promise.all(
    session.tasks.slice(-50).map((id) =>
      api('GET', '/tasks/' + id).then(
        (s) => ({ id: id, prompt: s.prompt }),
        () => ({ id: id, prompt: null })
      )
    )
  );
  const turns = session.memory.turns;
  // Tasks asked for by turns still verbatim are the last ones; earlier ones were folded into the summary.
  const asked = turns.filter((t) => t.role === 'user').map((t) => t.text);
  let next = 0;
  const folded = [];
  for (const t of tasks) if (!asked.includes(t.prompt)) folded.push(t);
  for (const t of folded) taskCard(t.id);
  const pending = tasks.filter((t) => !folded.includes(t));
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i];
    const task = turn.role === 'user' && pending[next] && pending[next].prompt === turn.text ? pending[next] : null;
    if (task) {
      next++;
      taskCard(task.id);
      if (turns[i + 1] && turns[i + 1].role === 'assistant') i++;
      continue;
    }
    addMessage(turn.role, turn.text, { markdown: turn.role === 'assistant' });
  }
  for (; next < pending.length; next++) taskCard(pending[next].id);
  if (session.currentTaskId) taskCard(session.currentTaskId);
}

async function start() {
  // #<sessionId>, or #<sessionId>/<taskId> to open it at the task's decision.
  const fromHash = decodeURIComponent(location.hash.replace(/^#/, '')).split('/');
  if (fromHash[1]) state.focusTask = fromHash[1];
  if (fromHash[0]) {
    state.sessionId = fromHash[0];
    if (state.focusTask) history.replaceState(null, '', '#' + state.sessionId);
  } else {
    const created = await api('POST', '/sessions', {});
    state.sessionId = created.sessionId;
    history.replaceState(null, '', '#' + state.sessionId);
  }
  const link = $('session-link');
  link.textContent = state.sessionId;
  link.href = runUrl('session-' + state.sessionId);
  state.session = await api('GET', '/sessions/' + state.sessionId);
  state.commands = state.session.commands;
  showGrants(state.session.grants || []);
  // A reopened session (awake or asleep) shows the conversation so far, each task as its card, then follows what
  // comes next.
  const resumed = state.session.lastSeq > 0;
  if (resumed) await showHistory(state.session);
  if (state.focusTask && !state.tasks.has(state.focusTask)) taskCard(state.focusTask);
  void inbox.refresh();
  setInterval(inbox.refresh, 4000);
  const events = await api('GET', '/sessions/' + state.sessionId + '/events?after=0');
  for (const e of events.events) {
    if (resumed) {
      logEvent('session', e);
      if (e.type === 'context') showContext(e);
      if (e.type === 'memory') $('memory-log').appendChild(el('li', { 'data-action': e.action, text: e.detail }));
    } else onSessionEvent(e);
  }
  follow(
    '/sessions/' + state.sessionId + '/events',
    onSessionEvent,
    function (s) {
      $('connection').textContent = s === 'live' ? 'live' : 'reconnecting…';
      $('connection').dataset.state = s;
    },
    events.events.length ? events.events[events.events.length - 1].seq : 0
  );
  // Opened at a decision: that keeps the focus.
  if (!fromHash[1]) $('input').focus();
}

$('new-session').addEventListener('click', function () {
  location.hash = '';
  location.reload();
});

start().catch(function (err) {
  $('connection').textContent = 'error: ' + err.message;
});
