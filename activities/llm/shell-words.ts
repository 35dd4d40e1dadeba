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
