// Model-chosen text as a person should read it: shown, never obeyed. A terminal obeys control characters (a
// carriage return or `ESC[2K` rewrites what the person is asked to approve; OSC 52 writes their clipboard), and a
// browser or a terminal obeys bidirectional controls (U+202E reverses what follows). Each such character is
// replaced by a visible stand-in: a C0 control by its control picture (ESC is ␛, CR is ␍), any other by its code
// point in brackets (⟦U+202E⟧). The page and the CLI both use this one rule.

/** Characters that are never printed as they are (newline and tab are handled by the caller's choice). */
const HIDDEN =
  // eslint-disable-next-line no-control-regex -- finding control characters is what this module is for
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B\u200E\u200F\u2028\u2029\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\uFFF9-\uFFFB\u{E0000}-\u{E007F}]/gu;

function stand(ch) {
  const code = ch.codePointAt(0);
  if (code < 0x20) return String.fromCodePoint(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return '\u27e6U+' + code.toString(16).toUpperCase().padStart(4, '0') + '\u27e7';
}

/**
 * Text that may run over several lines (a command, an answer, a diff, a result): newlines and tabs stay, every
 * other control or bidirectional character is shown.
 */
function visibleText(text) {
  return String(text).replace(HIDDEN, stand);
}

/**
 * Text that must stay on one line (a title, a path, a name): newlines and tabs are shown too (␤, ␉), so a value
 * cannot start a line of its own that reads like something else.
 */
function visibleLine(text) {
  return visibleText(text).replace(/\n/g, '\u2424').replace(/\t/g, '\u2409');
}

export { visibleText, visibleLine };
