// Klea's web page: a chat with one session, its tasks' plans and decisions, a status pane and an inspect pane.
// Plain DOM, no framework. Live updates come from the API's event streams (resumed with Last-Event-ID).
import { $, el } from './dom.js';
import * as md from './markdown.js';
import { api, follow } from './client.js';
import { create as createDecisions } from './decisions.js';
import { create as createInbox } from './inbox.js';
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

// ------------------------------------------------------------------ chat and inspect pane
function scrollChat() {
  const list = $('messages');
  list.scrollTop = list.scrollHeight;
}

function addMessage(role, content, opts) {
  const item = el('li', { class: 'msg ' + role, 'data-role': role });
  if (opts && opts.markdown) {
    item.appendChild(el('div', { class: 'md', html: md.render(content) }));
    item.appendChild(
      el('p', {
        class: 'unverified',
        text: 'Unverified',
        title: 'Grounding is not enforced yet: this answer has not been checked against sources.',
      })
    );
  } else {
    item.appendChild(el('p', { text: content }));
  }
  $('messages').appendChild(item);
  scrollChat();
  return item;
}

function logEvent(source, e) {
  const summary =
    e.type +
    (e.stepId ? ' · ' + e.stepId : '') +
    (e.status ? ' · ' + e.status : '') +
    (e.taskId ? ' · ' + e.taskId : '');
  const details = el('details', {}, [
    el('summary', { text: '#' + e.seq + ' ' + source + ' · ' + summary }),
    el('pre', { text: JSON.stringify(e, null, 2) }),
  ]);
  $('event-log').appendChild(el('li', { 'data-type': e.type }, [details]));
  if (e.type === 'step_finished' && e.usage) {
    const u = e.usage;
    $('step-usage').appendChild(
      el('li', {
        'data-step': e.stepId,
        text:
          source +
          ' · step ' +
          e.stepId +
          ' (' +
          e.status +
          '): ' +
          u.inputTokens +
          ' in / ' +
          u.outputTokens +
          ' out tokens, ' +
          u.modelCalls +
          ' model call' +
          (u.modelCalls === 1 ? '' : 's'),
      })
    );
  }
}

// ------------------------------------------------------------------ status pane
function showContext(ctx) {
  $('mode').textContent =
    ctx.mode + (ctx.requestedMode && ctx.requestedMode !== ctx.mode ? ' (requested ' + ctx.requestedMode + ')' : '');
  $('tool-access').value = ctx.toolAccess;
  if (ctx.network) $('network').value = ctx.network;
  if (ctx.sandbox) {
    const sandbox = $('sandbox');
    sandbox.textContent = ctx.sandbox === 'on' ? 'on (bubblewrap)' : ctx.sandbox + ': ' + (ctx.sandboxNote || '');
    sandbox.className = ctx.sandbox === 'on' ? '' : 'note';
    sandbox.setAttribute('data-state', ctx.sandbox);
  }
  $('context-file').textContent = ctx.projectContextFile || 'none';
  $('project-dir').textContent = ctx.projectDir;
  const note = $('mode-note');
  note.hidden = !ctx.modeNote;
  note.textContent = ctx.modeNote || '';
}

/** The paths allowed for the session, each with when it lapses and a button to revoke it. */
function showGrants(grants) {
  $('grant-list').replaceChildren(
    ...(grants.length
      ? grants.map((g) =>
          el('li', { 'data-grant': g.id }, [
            el('code', { text: g.op + ' ' + g.path }),
            el('span', {
              class: 'waited',
              text:
                Date.parse(g.expiresAt) > Date.now() ? ' until ' + new Date(g.expiresAt).toLocaleString() : ' lapsed',
              title: g.expiresAt,
            }),
            el('button', {
              type: 'button',
              class: 'revoke',
              text: 'Revoke',
              'aria-label': 'Revoke ' + g.op + ' ' + g.path,
              onclick: async () => {
                try {
                  await api('DELETE', '/sessions/' + state.sessionId + '/grants/' + g.id);
                } catch (err) {
                  addMessage('error', 'Could not revoke the grant: ' + err.message);
                }
              },
            }),
          ])
        )
      : [el('li', { class: 'note', text: 'Nothing beyond the project.' })])
  );
}

$('tool-access').addEventListener('change', async function (ev) {
  try {
    await api('PATCH', '/sessions/' + state.sessionId, { toolAccess: ev.target.value });
  } catch (err) {
    addMessage('error', 'Could not change tool access: ' + err.message);
  }
});

$('network').addEventListener('change', async function (ev) {
  try {
    await api('PATCH', '/sessions/' + state.sessionId, { network: ev.target.value });
  } catch (err) {
    addMessage('error', 'Could not change the network setting: ' + err.message);
  }
});

// ------------------------------------------------------------------ notifications
const WAITS_FOR = {
  awaiting_review: 'a review',
  awaiting_clarification: 'answers',
  awaiting_permission: 'a permission',
};

/** A task of this session started waiting while the page was hidden: count it in the title, and notify. */
function waitingWhileHidden(s) {
  if (!document.hidden) return;
  state.unseen++;
  document.title = '(' + state.unseen + ') Klea';
  if (window.Notification && Notification.permission === 'granted') {
    try {
      new Notification('Klea waits for ' + (WAITS_FOR[s.status] || 'you'), {
        body: (s.prompt || '').split('\n')[0].slice(0, 140),
        tag: s.taskId + ':' + s.status,
      });
    } catch (err) {
      console.error(err);
    }
  }
}

document.addEventListener('visibilitychange', function () {
  if (document.hidden) return;
  state.unseen = 0;
  document.title = 'Klea';
});

/** Asked once, on the user's own action (a message sent), never on load. */
function askNotificationPermission() {
  if (window.Notification && Notification.permission === 'default') void Notification.requestPermission();
}

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
  }
}

// ------------------------------------------------------------------ composer and the / menu
const input = $('input');

function menuItems() {
  const text = input.value;
  if (!text.startsWith('/') || text.includes(' ')) return [];
  return state.commands.filter((c) => c.name.startsWith(text.split(/\s/)[0].toLowerCase()));
}

function renderMenu() {
  const menu = $('command-menu');
  const items = menuItems();
  menu.hidden = items.length === 0;
  input.setAttribute('aria-expanded', String(!menu.hidden));
  state.menuIndex = Math.min(state.menuIndex, Math.max(items.length - 1, 0));
  menu.replaceChildren(
    ...items.map((c, i) =>
      el(
        'li',
        {
          role: 'option',
          id: 'cmd-' + i,
          'aria-selected': String(i === state.menuIndex),
          class: i === state.menuIndex ? 'active' : '',
          onmousedown: (ev) => {
            ev.preventDefault();
            choose(c);
          },
        },
        [
          el('code', { text: c.usage }),
          el('span', { text: ' ' + c.description + (c.runs === 'client' ? ' (in this page)' : '') }),
        ]
      )
    )
  );
  if (!menu.hidden) input.setAttribute('aria-activedescendant', 'cmd-' + state.menuIndex);
  else input.removeAttribute('aria-activedescendant');
}

function choose(c) {
  input.value = c.usage.includes(' ') ? c.name + ' ' : c.name;
  renderMenu();
  input.focus();
}

input.addEventListener('input', renderMenu);
input.addEventListener('keydown', function (ev) {
  const items = menuItems();
  if (items.length && (ev.key === 'ArrowDown' || ev.key === 'ArrowUp')) {
    ev.preventDefault();
    state.menuIndex = (state.menuIndex + (ev.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
    renderMenu();
  } else if (items.length && ev.key === 'Tab') {
    ev.preventDefault();
    choose(items[state.menuIndex]);
  } else if (ev.key === 'Escape') {
    $('command-menu').hidden = true;
  } else if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    if (items.length && items[state.menuIndex].name !== input.value.trim()) choose(items[state.menuIndex]);
    else $('composer').requestSubmit();
  }
});

$('composer').addEventListener('submit', async function (ev) {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  renderMenu();
  addMessage('user', text);
  askNotificationPermission();
  if (text === '/help') {
    // A client command: the page answers it itself.
    addMessage(
      'assistant',
      ['Commands:'].concat(state.commands.map((c) => '- `' + c.usage + '`: ' + c.description)).join('\n'),
      { markdown: true }
    );
    return;
  }
  try {
    const res = await api('POST', '/sessions/' + state.sessionId + '/messages', { text: text });
    if (res.kind === 'task' && res.taskId) taskCard(res.taskId, text);
    else if (res.kind === 'command' && res.reply && !/^\/(init)\b/.test(text))
      addMessage('assistant', res.reply, { markdown: true });
  } catch (err) {
    addMessage('error', err.message);
  }
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
  if (!fromHash[1]) input.focus();
}

$('new-session').addEventListener('click', function () {
  location.hash = '';
  location.reload();
});

start().catch(function (err) {
  $('connection').textContent = 'error: ' + err.message;
});
