// "Undo from here" and "Redo from here" on a task's finished steps: each first asks the API what the rewind would
// restore (GET /tasks/:id/rewind?toStep=), shows the files and any conflict (files the user changed since the task
// touched them), and only then, on confirmation, rewinds (POST /tasks/:id/rewind), forcing past conflicts only when
// the user ticks the box that says so.
import { el } from './dom.js';
import { api } from './client.js';

const ACTION_TEXT = {
  restore: 'restore',
  delete: 'delete (the task created it)',
  recreate: 'recreate (the task deleted it)',
};

/** The statuses a task can be rewound from: nothing of it runs then. */
const REWINDABLE = ['awaiting_review', 'awaiting_clarification', 'done', 'failed', 'cancelled', 'rewound'];

/** Whether the card's step offers the controls: the task is at rest and the step has run. */
function offersRewind(s, stepId) {
  return REWINDABLE.includes(s.status) && (s.rounds || []).some((r) => r.steps.includes(stepId));
}

/**
 * The controls of one step; `onRewound(result)` runs after a rewind (the card follows the task again).
 */
function rewindControls(taskId, stepId, onRewound) {
  const box = el('div', { class: 'rewind', 'data-step': stepId });
  const buttons = el('div', { class: 'rewind-buttons' }, [
    el('button', { type: 'button', class: 'undo', text: 'Undo from here', onclick: () => open(false) }),
    el('button', { type: 'button', class: 'redo', text: 'Redo from here', onclick: () => open(true) }),
  ]);
  box.appendChild(buttons);

  async function open(rerun) {
    box.querySelector('.rewind-panel')?.remove();
    const panel = el('div', { class: 'rewind-panel', role: 'group', 'aria-label': 'Rewind to before ' + stepId });
    panel.appendChild(el('p', { class: 'loading', text: 'Looking up what this would restore…' }));
    box.appendChild(panel);
    let preview;
    try {
      preview = await api('GET', '/tasks/' + taskId + '/rewind?toStep=' + encodeURIComponent(stepId));
    } catch (err) {
      panel.replaceChildren(el('p', { class: 'error', text: err.message }));
      return;
    }
    const what = rerun ? 'Redo from ' + stepId : 'Undo from ' + stepId;
    const parts = [
      el('p', {
        text:
          (rerun ? 'Restore the files to before ' : 'Undo everything the task did from ') +
          stepId +
          ' (steps ' +
          preview.steps.join(', ') +
          ')' +
          (rerun ? ', then run the task again from there.' : '; the task ends rewound.'),
      }),
    ];
    parts.push(
      preview.files.length
        ? el(
            'ul',
            { class: 'rewind-files', 'aria-label': 'Files it will restore' },
            preview.files.map((f) =>
              el('li', { 'data-path': f.path, 'data-action': f.action }, [
                el('code', { text: f.path }),
                el('span', { text: ' · ' + (ACTION_TEXT[f.action] || f.action) + ' · ' + f.step }),
              ])
            )
          )
        : el('p', { class: 'rewind-none', text: 'No file to restore.' })
    );
    if (preview.sensitive.length)
      parts.push(
        el('p', { class: 'note', text: 'Left as they are (sensitive, never kept): ' + preview.sensitive.join(', ') })
      );
    if (preview.tooLarge.length)
      parts.push(
        el('p', {
          class: 'note',
          text: 'Too large to have been kept (files left as they are): ' + preview.tooLarge.join(', '),
        })
      );
    let force = null;
    if (preview.conflicts.length) {
      parts.push(
        el('div', { class: 'rewind-conflicts', role: 'alert' }, [
          el('strong', { text: 'Changed since the task touched them:' }),
          el(
            'ul',
            {},
            preview.conflicts.map((c) =>
              el('li', { 'data-path': c.path }, [el('code', { text: c.path }), ' · ' + c.reason])
            )
          ),
        ])
      );
      force = el('input', { type: 'checkbox', class: 'force' });
      parts.push(el('label', {}, [force, ' overwrite my changes to these files too']));
    }
    const status = el('p', { class: 'rewind-status', role: 'status' });
    const confirm = el('button', {
      type: 'button',
      class: 'confirm',
      text: 'Confirm: ' + what.toLowerCase(),
      onclick: async () => {
        if (force && !force.checked) {
          status.textContent = 'Tick the box to overwrite the changed files, or leave them be.';
          return;
        }
        confirm.disabled = true;
        status.textContent = 'Restoring…';
        try {
          const res = await api('POST', '/tasks/' + taskId + '/rewind', {
            toStep: stepId,
            rerun: rerun,
            force: Boolean(force && force.checked),
          });
          status.textContent =
            'Restored ' + res.files.length + ' file(s)' + (rerun ? '; running again from ' + stepId + '.' : '.');
          onRewound(res);
        } catch (err) {
          confirm.disabled = false;
          status.textContent = err.message;
        }
      },
    });
    parts.push(
      el('div', { class: 'rewind-actions' }, [
        confirm,
        el('button', { type: 'button', class: 'close', text: 'Never mind', onclick: () => panel.remove() }),
      ]),
      status
    );
    panel.replaceChildren(...parts);
  }

  return box;
}

export { offersRewind, rewindControls };
