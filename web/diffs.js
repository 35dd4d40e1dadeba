// What a task changed, as the page shows it: a change's unified diff, the changed files with their line counts, and
// the steps a plan revision added or changed.
import { el } from './dom.js';

/** A unified diff, each line coloured by what it is. */
function diffView(change) {
  const pre = el('pre', { class: 'diff' });
  for (const line of change.diff.split('\n')) {
    const kind = /^(\+\+\+|---)/.test(line)
      ? 'file'
      : line.startsWith('@@')
        ? 'hunk'
        : line.startsWith('+')
          ? 'add'
          : line.startsWith('-')
            ? 'del'
            : line.startsWith('…')
              ? 'more'
              : 'ctx';
    pre.appendChild(el('span', { class: 'diff-' + kind, text: line + '\n' }));
  }
  return el('details', { class: 'change', 'data-path': change.path }, [
    el('summary', {}, [
      el('code', { text: change.path }),
      el('span', { class: 'added', text: ' +' + change.added }),
      el('span', { class: 'removed', text: ' −' + change.removed }),
    ]),
    pre,
  ]);
}

/** The task's changed files with their line counts, summed over its steps. */
function changedFiles(t) {
  const files = new Map();
  for (const list of t.changes.values())
    for (const c of list) {
      const f = files.get(c.path) || { path: c.path, added: 0, removed: 0 };
      f.added += c.added;
      f.removed += c.removed;
      files.set(c.path, f);
    }
  return [...files.values()];
}

/** Each step a revision touched: its kind (added, changed) and a label saying how. */
function diffMarks(diff) {
  const marks = new Map();
  for (const id of diff.added) marks.set(id, { kind: 'added', label: 'added' });
  for (const c of diff.changed) marks.set(c.stepId, { kind: 'changed', label: 'changed: ' + c.fields.join(', ') });
  return marks;
}

export { diffView, changedFiles, diffMarks };
