/**
 * A step's questions to the user (pure): which step waits for answers, the answers taken, and whether a `clarify`
 * payload answers what is asked (the rules shared by the `clarify` signal and update).
 */
import type { PlanStep } from '../../common/plan';
import { ClarifySchema, type ClarifyAnswers, type PendingInterrupt, type TaskCarry } from '../../common/task';
import { parseSignal } from '../shared/payloads';
import { withAnswers } from './text';

export type PendingQuestions = Extract<PendingInterrupt, { kind: 'questions' }>;

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

/** One step's questions are pending at a time; the others wait their turn. */
export class QuestionGate {
  private open: PendingQuestions | null = null;
  private readonly answers = new Map<string, Record<string, string>>();

  /** @param carried what an earlier run of the task held (continue-as-new): questions asked, answers taken. */
  constructor(carried?: TaskCarry['questions']) {
    this.open = carried?.open ?? null;
    for (const [stepId, a] of Object.entries(carried?.answers ?? {})) this.answers.set(stepId, a);
  }

  carry(): TaskCarry['questions'] {
    return { open: this.open, answers: Object.fromEntries(this.answers) };
  }

  get pending(): PendingQuestions | null {
    return this.open;
  }

  isAnswered(stepId: string): boolean {
    return this.answers.has(stepId);
  }

  ask(s: Pick<PlanStep, 'id' | 'questions'>): PendingQuestions {
    this.open = { kind: 'questions', stepId: s.id, questions: s.questions };
    return this.open;
  }

  /** Why answers cannot be taken now, or null. */
  problem(a: ClarifyAnswers): string | null {
    return this.open ? answersProblem(this.open.questions, a.answers) : 'no questions are pending';
  }

  /**
   * Takes answers to the pending questions; what to tell the sender when they cannot be used, or null. A repeat
   * after the answers were taken, or answers with nothing pending, change nothing and say nothing.
   */
  accept(raw: unknown): string | null {
    if (!this.open || this.answers.has(this.open.stepId)) return null;
    const p = parseSignal(ClarifySchema, raw, 'answers');
    const problem = p.ok ? this.problem(p.value) : p.problem;
    if (problem) return problem;
    if (p.ok) this.answers.set(this.open.stepId, p.value.answers);
    return null;
  }

  /** The step whose answers have come in (it can run now), once; null while they have not. */
  takeAnswered(): string | null {
    if (!this.open || !this.answers.has(this.open.stepId)) return null;
    const stepId = this.open.stepId;
    this.open = null;
    return stepId;
  }

  /** The step as the models see it: its instruction followed by the user's answers. */
  withAnswers(s: PlanStep): PlanStep {
    return { ...s, instruction: withAnswers(s.instruction, this.answers.get(s.id)) };
  }

  /** A new plan asks its own questions: answers given to the steps it replaced do not carry over. */
  reset(): void {
    this.answers.clear();
    this.open = null;
  }

  /** The task ends (cancelled) while questions are pending: nothing is waited for any more. */
  withdraw(): void {
    this.open = null;
  }
}
