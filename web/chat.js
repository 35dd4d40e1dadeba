// The chat and the inspect pane: messages in the chat (answers as markdown, marked unverified), and each event in
// the inspect pane's log, with each finished step's token usage.
import { $, el } from './dom.js';
import * as md from './markdown.js';

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

export { scrollChat, addMessage, logEvent };
