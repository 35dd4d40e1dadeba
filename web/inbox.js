// The inbox: tasks of every session that wait for the user, and recent sessions to reopen (most recently active
// first, awake or asleep), refreshed by the page.
import { $, el } from './dom.js';

/** The inbox of a page that calls the API with `api` and shows the session `sessionId()`. */
function create(deps) {
  const api = deps.api;
  const KIND = {
    awaiting_review: 'Review',
    awaiting_clarification: 'Questions',
    awaiting_permission: 'Permission',
  };

  function ago(iso) {
    const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.round(s / 60) + ' min';
    if (s < 86400) return Math.round(s / 3600) + ' h';
    return Math.round(s / 86400) + ' d';
  }

  /** Opens a session (and, for a waiting task, brings its decision into view). */
  function openSession(sessionId, taskId) {
    location.hash = sessionId + (taskId ? '/' + taskId : '');
    location.reload();
  }

  async function refreshInbox() {
    try {
      const [waiting, recent, sessions] = await Promise.all([
        api('GET', '/tasks?status=awaiting_review,awaiting_clarification,awaiting_permission&limit=20'),
        api('GET', '/tasks?limit=50'),
        api('GET', '/sessions?limit=10'),
      ]);
      $('waiting-list').replaceChildren(
        ...(waiting.tasks.length
          ? waiting.tasks.map((t) =>
              el('li', { 'data-task': t.id, 'data-session': t.sessionId }, [
                el(
                  'a',
                  {
                    href: '#' + t.sessionId + '/' + t.id,
                    onclick: (ev) => {
                      ev.preventDefault();
                      openSession(t.sessionId, t.id);
                    },
                  },
                  [el('span', { class: 'badge kind', text: KIND[t.status] || t.status }), ' ' + (t.request || t.id)]
                ),
                el('span', {
                  class: 'waited',
                  text: ' waiting ' + ago(t.waitingSince || t.startedAt),
                  title: t.waitingSince || t.startedAt,
                }),
              ])
            )
          : [el('li', { class: 'note', text: 'Nothing waits for you.' })])
      );
      // A session is named by its latest request.
      const named = new Map();
      for (const t of recent.tasks)
        if (t.sessionId && t.request && !named.has(t.sessionId)) named.set(t.sessionId, t.request);
      $('session-list').replaceChildren(
        ...sessions.sessions.map((x) =>
          el('li', { 'data-session': x.id, class: x.id === deps.sessionId() ? 'current' : '' }, [
            el('a', {
              href: '#' + x.id,
              text: named.get(x.id) || x.id,
              'aria-current': x.id === deps.sessionId() ? 'page' : undefined,
              onclick: (ev) => {
                ev.preventDefault();
                openSession(x.id);
              },
            }),
            x.status === 'sleeping'
              ? el('span', {
                  class: 'badge sleeping',
                  text: 'asleep',
                  title: 'Idle: its next message wakes it, as it was',
                })
              : null,
            el('span', {
              class: 'waited',
              text: ' ' + ago(x.lastActivityAt || x.startedAt) + ' ago',
              title: 'last active ' + (x.lastActivityAt || x.startedAt),
            }),
          ])
        )
      );
    } catch (err) {
      console.error(err);
    }
  }

  return { refresh: refreshInbox };
}

export { create };
