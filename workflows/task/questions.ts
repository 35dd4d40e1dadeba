/** Whether a `clarify` payload answers the questions the task is waiting on (pure; shared by signal and update). */

const quoted = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ');

/** Null when `answers` answers every pending question and nothing else; otherwise what is wrong, naming them. */
export function answersProblem(questions: readonly string[], answers: Record<string, string>): string | null {
  const unknown = Object.keys(answers).filter((k) => !questions.includes(k));
  if (unknown.length)
    return `${unknown.length > 1 ? 'these are not pending questions' : 'this is not a pending question'}: ${quoted(unknown)}; the pending questions are ${quoted(questions)}`;
  const missing = questions.filter((q) => !answers[q]?.trim());
  if (missing.length) return `no answer to ${quoted(missing)}; answer every pending question: ${quoted(questions)}`;
  return null;
}
