/** Code fences of plain-text prompts and answers (pure): a file shown in one, the file an answer holds in one. */

/** A code fence longer than any run of backticks in `text`. */
function fenceFor(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(longest + 1);
}

export const fenced = (text: string) => {
  const fence = fenceFor(text);
  return `${fence}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}`;
};

/**
 * The content of the answer's first fenced block (or of the whole answer, without one); null when it is empty. A fence
 * with a language inside the block (```` ```bash ````) opens a block of the file's own (a Markdown file's example,
 * written inside a plain ```` ``` ```` fence): the bare fence that closes it does not close the answer's block. As in
 * Markdown, a bare fence shorter than the one it would close is text. Read so, an answer's block that never ends (a
 * fence inside a string opened a block) ends at its first bare fence after all.
 */
export function contentOfAnswer(answer: string): string | null {
  const open = /^[ \t]*(`{3,}|~{3,})[^\n`]*\n/m.exec(answer);
  let body = answer;
  if (open) {
    const rest = answer.slice(open.index + open[0].length);
    const fence = open[1][0] === '`' ? /^[ \t]*(`{3,})(.*)$/ : /^[ \t]*(~{3,})(.*)$/;
    /** The fence lengths of the file's own blocks open at this line. */
    const inner: number[] = [];
    /** Where the first bare fence that could close the answer's block is. */
    let firstBare: number | undefined;
    let end: number | undefined;
    let at = 0;
    for (const line of rest.split('\n')) {
      const m = fence.exec(line);
      const info = m?.[2].trim() ?? '';
      if (m && LANGUAGE.test(info)) inner.push(m[1].length);
      else if (m && !info) {
        if (m[1].length >= open[1].length) firstBare ??= at;
        if (m[1].length >= (inner.at(-1) ?? open[1].length)) {
          if (!inner.length) {
            end = at;
            break;
          }
          inner.pop();
        }
      }
      at += line.length + 1;
    }
    // Read so, the answer's block never ends (a fence inside a string opened a block of the file's own, say): it ends
    // at its first bare fence after all.
    end ??= firstBare ?? rest.length;
    body = rest.slice(0, end);
  }
  const trimmed = body.replace(/^\s*\n/, '').replace(/\s+$/, '');
  return trimmed ? `${trimmed}\n` : null;
}

/** A fence's language, as a code block names it (`bash`, `c++`, `objective-c`, `json5`). */
const LANGUAGE = /^[A-Za-z][\w+#.-]*$/;
