// The decisions a task waits for, as forms: a plan review (with what a revision changed), a step's questions, and
// permissions for paths (with the whole call). Each answer goes through `decide`, given by the page.
import { el } from './dom.js';
import { diffMarks, diffView } from './diffs.js';

/** A call as the person deciding should read it: a command line as it is, other arguments as JSON. */
function describeCall(call) {
  const args = Object.assign({}, call.args);
  delete args.step_id;
  if (typeof args.command === 'string') {
    const command = args.command;
    delete args.command;
    return '$ ' + command + (Object.keys(args).length ? '\n' + JSON.stringify(args) : '');
  }
  return call.tool + ' ' + JSON.stringify(args, null, 2);
}

/** The forms, for a page that sends each decision with `decide(taskId, route, body)` and names steps by `titleOf`. */
function create(deps) {
  /** What a revised plan changed against the one reviewed before, and the feedback that led to it. */
  function planChanges(taskId, p) {
    const name = (id) => id + ' · ' + (deps.titleOf(taskId, id) || '');
    const marks = diffMarks(p.diff);
    const items = p.plan.steps
      .filter((st) => marks.has(st.id))
      .map((st) =>
        el('li', { class: 'plan-diff-' + marks.get(st.id).kind, 'data-step': st.id }, [
          el('span', { class: 'diff-mark diff-mark-' + marks.get(st.id).kind, text: marks.get(st.id).label }),
          ' ' + st.id + ' · ' + st.title,
        ])
      )
      .concat(
        p.diff.removed.map((id) =>
          el('li', { class: 'plan-diff-removed', 'data-step': id }, [
            el('span', { class: 'diff-mark diff-mark-removed', text: 'removed' }),
            ' ',
            el('s', { text: name(id) }),
          ])
        )
      );
    return el('div', { class: 'plan-diff', 'aria-label': 'What the revision changed' }, [
      p.feedback ? el('blockquote', { class: 'plan-feedback' }, ['Your feedback: ' + p.feedback]) : null,
      items.length
        ? el('ul', {}, items)
        : el('p', { class: 'note', text: p.diff.goalChanged ? 'Only the goal changed.' : 'No step changed.' }),
    ]);
  }

  function interruptForm(taskId, p) {
    if (p.kind === 'review') {
      const feedbackId = 'fb-' + taskId + '-' + p.planHash;
      const title =
        p.reason === 'checkpoint'
          ? 'Review the results so far (after ' + p.afterStepIds.join(', ') + ')'
          : p.reason === 'revised'
            ? 'Review the revised plan'
            : p.reason === 'budget' && p.spent
              ? 'Token budget reached: ' +
                (p.spent.inputTokens + p.spent.outputTokens) +
                ' tokens used of ' +
                p.spent.budget +
                ' (' +
                p.spent.modelCalls +
                ' model calls). Approve to go on, or revise the plan'
              : 'Review the plan';
      return el('form', { class: 'interrupt review', 'aria-label': title, onsubmit: (e) => e.preventDefault() }, [
        el('h3', { text: title }),
        p.diff ? planChanges(taskId, p) : null,
        el('label', { for: feedbackId, text: 'What should change? (for Revise)' }),
        el('textarea', { id: feedbackId, rows: 2 }),
        el('div', { class: 'buttons' }, [
          el('button', {
            type: 'button',
            class: 'approve',
            text: 'Approve',
            onclick: () => deps.decide(taskId, 'review', { decision: 'approve', planHash: p.planHash }),
          }),
          el('button', {
            type: 'button',
            class: 'revise',
            text: 'Revise',
            onclick: () =>
              deps.decide(taskId, 'review', {
                decision: 'revise',
                planHash: p.planHash,
                feedback: document.getElementById(feedbackId).value,
              }),
          }),
        ]),
      ]);
    }
    if (p.kind === 'questions') {
      const inputs = p.questions.map((q, i) => ({ q: q, id: 'q-' + taskId + '-' + p.stepId + '-' + i }));
      return el(
        'form',
        {
          class: 'interrupt questions',
          'aria-label': 'Questions for step ' + p.stepId,
          onsubmit: (e) => {
            e.preventDefault();
            const answers = {};
            for (const x of inputs) answers[x.q] = document.getElementById(x.id).value;
            void deps.decide(taskId, 'clarify', { answers: answers });
          },
        },
        [
          el('h3', { text: 'Step ' + p.stepId + ' needs answers' }),
          ...inputs.flatMap((x) => [
            el('label', { for: x.id, text: x.q }),
            el('input', { id: x.id, type: 'text', required: true }),
          ]),
          el('button', { type: 'submit', text: 'Answer' }),
        ]
      );
    }
    return el(
      'div',
      { class: 'interrupt permissions' },
      p.requests.map((r) =>
        el(
          'div',
          {
            class: 'permission',
            role: 'group',
            'aria-label': 'Permission for ' + r.path,
            'data-request': r.requestId,
          },
          [
            el('h3', { text: 'Allow ' + r.tool + ' to ' + r.op + ' this path?' }),
            el('p', {}, [el('code', { text: r.path }), ' — ' + r.reason]),
            // The whole call, so nobody approves "execute /home/u" without seeing the rest of the command.
            r.call ? el('pre', { class: 'permission-call', text: describeCall(r.call) }) : null,
            // A change to an agent instruction file (AGENTS.md), which every later plan reads: shown as its diff.
            r.change ? diffView(r.change) : null,
            el('div', { class: 'buttons' }, [
              el('button', {
                type: 'button',
                class: 'allow-once',
                text: 'Allow once',
                onclick: () => deps.decide(taskId, 'permissions', { requestId: r.requestId, decision: 'allow_once' }),
              }),
              el('button', {
                type: 'button',
                class: 'allow-session',
                text: 'Allow for session',
                onclick: () =>
                  deps.decide(taskId, 'permissions', { requestId: r.requestId, decision: 'allow_session' }),
              }),
              el('button', {
                type: 'button',
                class: 'deny',
                text: 'Deny',
                onclick: () => deps.decide(taskId, 'permissions', { requestId: r.requestId, decision: 'deny' }),
              }),
            ]),
          ]
        )
      )
    );
  }

  return { interruptForm: interruptForm };
}

export { create };
