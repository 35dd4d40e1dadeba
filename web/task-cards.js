// The task cards of the page's session: each follows its task's event stream and shows the plan with each step's
// live status and file changes, the decisions the task waits for, and the answer with the files it changed.
import { $, el } from './dom.js';
import * as md from './markdown.js';
import { api, follow } from './client.js';
import { diffView, changedFiles, diffMarks } from './diffs.js';
import { offersRewind, rewindControls } from './rewind.js';

/** A task in one of these has ended: its stream has nothing more to say (until a rewind runs it again). */
const FINAL = ['done', 'failed', 'cancelled', 'rewound'];

/**
 * The cards of a page whose `state` holds them (`state.tasks`) and the task to bring into view (`state.focusTask`);
 * the page lends `runUrl`, `logEvent`, `scrollChat`, `waitingWhileHidden`, the decision forms (`interruptForm`)
 * and `decide`.
 */
function create(deps) {
  const state = deps.state;

  function taskCard(taskId, prompt) {
    let t = state.tasks.get(taskId);
    if (t) {
      // The session's stream can announce a task before the request that started it returns: it is still new,
      // so a wait its card has already shown is news after all.
      if (prompt && !t.fromHere) {
        t.fromHere = true;
        if (t.unannounced && t.state) deps.waitingWhileHidden(t.state);
        t.unannounced = false;
      }
      return t;
    }
    const card = el('li', { class: 'msg task', 'data-task': taskId }, [
      el('header', { class: 'task-head' }, [
        el('strong', { text: 'Task' }),
        el('span', { class: 'badge task-status', text: 'starting' }),
        el('a', {
          href: deps.runUrl(taskId),
          target: '_blank',
          rel: 'noopener',
          class: 'temporal-link',
          text: 'Open in Temporal UI',
        }),
      ]),
      prompt ? el('p', { class: 'task-prompt', text: prompt }) : null,
      el('div', { class: 'plan' }),
      el('div', { class: 'interrupts' }),
      el('div', { class: 'answer' }),
    ]);
    $('messages').appendChild(card);
    t = {
      card: card,
      state: null,
      stream: null,
      refreshing: false,
      again: false,
      changes: new Map(),
      titles: new Map(),
      // A task sent from this page is new, so its first wait is news; one found on load may have waited long.
      fromHere: Boolean(prompt),
      // The last event seen, so a stream started again (after a rewind) goes on from there.
      seen: 0,
      // Each step's undo/redo controls, kept across renders so an open confirmation survives one.
      rewinds: new Map(),
      lastStatus: prompt ? 'starting' : undefined,
      // Found waiting before the page knew it had sent the task (see above).
      unannounced: false,
    };
    state.tasks.set(taskId, t);
    followTask(taskId, t);
    void refreshTask(taskId);
    deps.scrollChat();
    return t;
  }

  function followTask(taskId, t) {
    t.stream = follow(
      '/tasks/' + taskId + '/events',
      function (e) {
        t.seen = Math.max(t.seen, e.seq);
        deps.logEvent(taskId, e);
        noteTaskEvent(t, e);
        void refreshTask(taskId);
        // The final status is the last event of a task: nothing more to follow.
        if (e.type === 'status' && FINAL.includes(e.status) && t.stream) {
          t.stream.stop();
          t.stream = null;
        }
      },
      undefined,
      t.seen
    );
  }

  /** After a rewind: the card follows the task again (a re-run has more to say) and shows it as it is now. */
  function rewound(taskId) {
    const t = state.tasks.get(taskId);
    if (!t) return;
    if (!t.stream) followTask(taskId, t);
    void refreshTask(taskId);
  }

  /** What the task card keeps from its events: each step's file changes, and the latest plan difference. */
  function noteTaskEvent(t, e) {
    // The steps a rewind undid: their changes are gone from the project, and the answer is to come again.
    if (e.type === 'rewound') {
      for (const id of e.steps) t.changes.delete(id);
      t.rewinds.clear();
      const answer = t.card.querySelector('.answer');
      answer.replaceChildren();
      delete answer.dataset.shown;
      delete answer.dataset.files;
      delete answer.dataset.error;
    }
    if (e.type === 'step_finished' && e.changes && e.changes.length) {
      const list = t.changes.get(e.stepId) || [];
      t.changes.set(e.stepId, list.concat(e.changes));
    }
    // Titles of every step any plan had, so a removed step can be named.
    if (e.type === 'plan' || e.type === 'replanned' || e.type === 'review_requested')
      for (const st of e.plan.steps) t.titles.set(st.id, st.title);
  }

  async function refreshTask(taskId) {
    const t = state.tasks.get(taskId);
    if (!t) return;
    if (t.refreshing) {
      t.again = true;
      return;
    }
    t.refreshing = true;
    try {
      do {
        t.again = false;
        t.state = await api('GET', '/tasks/' + taskId);
        renderTask(taskId);
      } while (t.again);
    } catch (err) {
      if (err.status !== 404) console.error(err);
    } finally {
      t.refreshing = false;
    }
  }

  function rewindBox(taskId, t, stepId) {
    if (!t.rewinds.has(stepId))
      t.rewinds.set(
        stepId,
        rewindControls(taskId, stepId, () => rewound(taskId))
      );
    return t.rewinds.get(stepId);
  }

  function renderTask(taskId) {
    const t = state.tasks.get(taskId);
    const s = t.state;
    const card = t.card;
    // On a cluster: the host that holds the project is gone, and the task waits for it.
    card.querySelector('.task-status').textContent =
      s.status.replace(/_/g, ' ') + (s.waitingForHost ? ' · waiting for host ' + s.waitingForHost : '');
    card.dataset.status = s.status;
    if (!card.querySelector('.task-prompt') && s.prompt)
      card.querySelector('.task-head').after(el('p', { class: 'task-prompt', text: s.prompt }));

    // The plan: steps with their dependencies and live status.
    const plan = card.querySelector('.plan');
    plan.replaceChildren();
    if (s.plan) {
      plan.appendChild(el('p', { class: 'goal' }, [el('strong', { text: 'Goal: ' }), s.goal || '']));
      const steps = el('ol', { class: 'steps', 'aria-label': 'Plan steps' });
      const byId = new Map(s.steps.map((st) => [st.id, st]));
      const review = s.pending.find((p) => p.kind === 'review' && p.diff);
      const marks = review ? diffMarks(review.diff) : new Map();
      for (const step of s.plan.steps) {
        const st = byId.get(step.id) || { status: 'pending' };
        const mark = marks.get(step.id);
        steps.appendChild(
          el('li', { class: 'step', 'data-status': st.status, 'data-step': step.id, 'data-diff': mark && mark.kind }, [
            mark ? el('span', { class: 'diff-mark diff-mark-' + mark.kind, text: mark.label }) : null,
            el('span', { class: 'step-status', text: st.status.replace(/_/g, ' ') }),
            el('span', { class: 'step-title', text: step.id + ' · ' + step.title }),
            step.depends_on.length ? el('span', { class: 'deps', text: 'after ' + step.depends_on.join(', ') }) : null,
            el('div', {
              class: 'step-instruction',
              text: step.instruction + (step.needs_tool ? '' : ' (no tool)'),
            }),
            st.result ? el('details', {}, [el('summary', { text: 'result' }), el('pre', { text: st.result })]) : null,
            t.changes.has(step.id)
              ? el(
                  'div',
                  { class: 'changes', 'aria-label': 'Changes of step ' + step.id },
                  t.changes.get(step.id).map(diffView)
                )
              : null,
            (st.status === 'done' || st.status === 'failed') && offersRewind(s, step.id)
              ? rewindBox(taskId, t, step.id)
              : null,
          ])
        );
      }
      plan.appendChild(steps);
    }

    // Decisions the task waits for.
    const box = card.querySelector('.interrupts');
    const wanted = JSON.stringify(s.pending);
    if (box.dataset.pending !== wanted) {
      box.dataset.pending = wanted;
      box.replaceChildren(...s.pending.map((p) => deps.interruptForm(taskId, p)));
    }
    if (state.focusTask === taskId && s.pending.length) {
      state.focusTask = null;
      box.scrollIntoView({ block: 'center' });
      const first = box.querySelector('textarea, input, button');
      if (first) first.focus();
    }
    if (s.status.startsWith('awaiting_') && t.lastStatus !== s.status) {
      if (t.lastStatus !== undefined || t.fromHere) deps.waitingWhileHidden(s);
      else t.unannounced = true;
    } else if (!s.status.startsWith('awaiting_')) t.unannounced = false;
    t.lastStatus = s.status;

    // The answer.
    const answer = card.querySelector('.answer');
    if (s.answer && !answer.dataset.shown) {
      answer.dataset.shown = '1';
      answer.appendChild(el('div', { class: 'md', html: md.render(s.answer) }));
      answer.appendChild(
        el('p', {
          class: 'unverified',
          text: 'Unverified',
          title: 'Grounding is not enforced yet: this answer has not been checked against sources.',
        })
      );
    }
    const files = changedFiles(t);
    const filesKey = JSON.stringify(files);
    if (answer.dataset.files !== filesKey) {
      answer.dataset.files = filesKey;
      answer.querySelector('.changed-files')?.remove();
      if (files.length)
        answer.appendChild(
          el('div', { class: 'changed-files' }, [
            el('h4', { text: 'Changed files' }),
            el(
              'ul',
              {},
              files.map((f) =>
                el('li', { 'data-path': f.path }, [
                  el('code', { text: f.path }),
                  el('span', { class: 'added', text: ' +' + f.added }),
                  el('span', { class: 'removed', text: ' −' + f.removed }),
                ])
              )
            ),
          ])
        );
    }
    if (s.error && !answer.dataset.error) {
      answer.dataset.error = '1';
      answer.appendChild(el('p', { class: 'error', text: s.error }));
    }
    if (s.usage)
      $('usage').textContent =
        taskId +
        ': ' +
        s.usage.modelCalls +
        ' model calls, ' +
        s.usage.toolCalls +
        ' tool calls, ' +
        s.usage.inputTokens +
        ' in / ' +
        s.usage.outputTokens +
        ' out tokens, ' +
        s.steps.length +
        ' steps';
    if (!FINAL.includes(s.status) && !card.querySelector('.cancel')) {
      card.querySelector('.task-head').appendChild(
        el('button', {
          type: 'button',
          class: 'cancel',
          text: 'Cancel',
          onclick: () => deps.decide(taskId, 'cancel', {}),
        })
      );
    }
    if (FINAL.includes(s.status)) card.querySelector('.cancel')?.remove();
  }

  return { taskCard: taskCard, refreshTask: refreshTask };
}

export { create };
