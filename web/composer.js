// The composer and its / menu: the session's commands offered as the user types `/` (arrows, Tab and Enter choose),
// `/help` answered by the page itself, and everything else sent to the session as a message (a task gets its card).
import { $, el } from './dom.js';
import { api } from './client.js';

/**
 * The composer of a page whose `state` holds the session's commands (`state.commands`), the menu's choice
 * (`state.menuIndex`) and the session (`state.sessionId`); the page lends `addMessage`, `askNotificationPermission`
 * and `taskCard`.
 */
function create(deps) {
  const state = deps.state;
  const addMessage = deps.addMessage;
  const askNotificationPermission = deps.askNotificationPermission;
  const taskCard = deps.taskCard;
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
}

export { create };
