/** The shape of a shell command as the small profile reads it (pipes, lists), with quoted text left out. */

/** The command with each quoted string ('…' or "…") blanked out, its length kept. */
export const withoutQuoted = (command: string) =>
  command.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, (q) => 'x'.repeat(q.length));

/** Where the first `|` of a command that is not `||` and not quoted is (its length when there is none). */
export function firstPipe(command: string): number {
  const at = /(?<!\|)\|(?!\|)/.exec(withoutQuoted(command));
  return at ? at.index : command.length;
}

/**
 * Whether a command pipes one program's output into another (a `|` outside quotes that is not `||`). A small model
 * checked a step that was to run a script by piping it into `awk` and `bc`: run first, bc's error exited 0, the step
 * was done on it, and the answer made up the number.
 */
export const piped = (command: string) => firstPipe(command) < command.length;

/** Programs whose work is to create, move, copy or delete files (or change their modes). */
const FILE_CHANGERS = new Set(['rm', 'rmdir', 'mv', 'cp', 'mkdir', 'touch', 'tee', 'chmod', 'chown', 'ln', 'truncate']);

/**
 * Whether a shell command changes files, by its shape: one of its commands (between pipes, `&&`, `||` and `;`) is a
 * program that creates, moves or deletes files (`FILE_CHANGERS`, after any `sudo` or `NAME=value`), edits them in
 * place (`sed -i`, `perl -i`), or deletes what `find` finds (`-delete`, `-exec rm`); or output goes to a file (`>`,
 * `>>`) other than /dev/null or another descriptor (`2>&1`).
 */
export function changesFiles(command: string): boolean {
  const own = withoutQuoted(command);
  if (/(?<![<>&0-9])\d?>>?\s*(?!&|\/dev\/null\b|\s*$)[^\s|;&]/.test(own.replace(/<<-?\s*\S+/g, ' '))) return true;
  return own.split(/\|\|?|&&|;/).some((part) => {
    const words = part.trim().split(/\s+/);
    while (words.length && (words[0] === 'sudo' || /^\w+=/.test(words[0]!))) words.shift();
    const [program = '', ...args] = words;
    if (FILE_CHANGERS.has(program)) return true;
    if ((program === 'sed' || program === 'perl') && args.some((a) => /^-[a-zA-Z]*i|^--in-place/.test(a))) return true;
    return program === 'find' && args.some((a, i) => a === '-delete' || (a === '-exec' && args[i + 1] === 'rm'));
  });
}
