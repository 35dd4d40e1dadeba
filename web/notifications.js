// Notifications: a task of this session that starts waiting for the user while the page is hidden is counted in the
// tab's title (until the page is seen again) and, when the user allowed it, announced by a browser notification.

const WAITS_FOR = {
  awaiting_review: 'a review',
  awaiting_clarification: 'answers',
  awaiting_permission: 'a permission',
};

/** The notifications of a page that counts the unseen waits in `state.unseen`. */
function create(deps) {
  const state = deps.state;

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

  return { waitingWhileHidden: waitingWhileHidden, askNotificationPermission: askNotificationPermission };
}

export { create };
