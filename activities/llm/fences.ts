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
 * with a language inside the block opens a block of the file's own (a Markdown file's ```bash … ```, written inside
 * a plain ``` fence): its closing fence does not close the answer's block.
 */
export function contentOfAnswer(answer: string): string | null {
  const open = /^[ \t]*(`{3,}|~{3,})[^\n`]*\n/m.exec(answer);
  let body = answer;
  if (open) {
    const rest = answer.slice(open.index + open[0].length);
    const char = open[1][0] === '`' ? '`' : '~';
    const fence = new RegExp(`^[ \\t]*(\\${char}{3,})[ \\t]*(\\S*)[^\\n]*$`);
    let depth = 0;
    let end = rest.length;
    let at = 0;
    for (const line of rest.split('\n')) {
      const m = fence.exec(line);
      if (m && m[2] && !m[2].startsWith(char)) depth++;
      else if (m && !m[2] && depth > 0) depth--;
      else if (m && !m[2] && m[1].length >= open[1].length) {
        end = at;
        break;
      }
      at += line.length + 1;
    }
    body = rest.slice(0, end);
  }
  const trimmed = body.replace(/^\s*\n/, '').replace(/\s+$/, '');
  return trimmed ? `${trimmed}\n` : null;
}
