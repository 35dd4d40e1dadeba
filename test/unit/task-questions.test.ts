/** A step's questions to the user: what the `clarify` signal and update take, report and ignore. */
import type { PlanStep } from '../../common/plan';
import { QuestionGate } from '../../workflows/task/questions';

const step = (id: string, questions: string[]): PlanStep => ({
  id,
  title: `step ${id}`,
  instruction: `greet the user`,
  depends_on: [],
  needs_tool: false,
  questions,
});

function asking(): QuestionGate {
  const gate = new QuestionGate();
  gate.ask(step('s1', ['Who?', 'In which language?']));
  return gate;
}

describe('clarifying questions', () => {
  it('answers to every pending question are taken, and the step can run', () => {
    const gate = asking();

    const problem = gate.accept({ answers: { 'Who?': 'Ada', 'In which language?': 'French' } });
    const answered = gate.takeAnswered();

    expect(problem).toBeNull();
    expect(answered).toBe('s1');
    expect(gate.pending).toBeNull();
    expect(gate.takeAnswered()).toBeNull();
  });

  it('answers that leave a question unanswered are reported and not taken', () => {
    const gate = asking();

    const problem = gate.accept({ answers: { 'Who?': 'Ada' } });

    expect(problem).toContain('no answer to "In which language?"');
    expect(gate.isAnswered('s1')).toBe(false);
    expect(gate.pending).toMatchObject({ stepId: 's1' });
  });

  it('a malformed payload is reported', () => {
    const gate = asking();

    const problem = gate.accept({ answer: 'Ada' });

    expect(problem).toMatch(/answers/);
    expect(gate.isAnswered('s1')).toBe(false);
  });

  it('answers sent when nothing is asked change nothing and say nothing', () => {
    const gate = new QuestionGate();

    const problem = gate.accept({ answers: { 'Who?': 'Ada' } });

    expect(problem).toBeNull();
    expect(gate.isAnswered('s1')).toBe(false);
    expect(gate.problem({ answers: { 'Who?': 'Ada' } })).toBe('no questions are pending');
  });

  it('a repeat after the answers were taken changes nothing and says nothing', () => {
    const gate = asking();
    gate.accept({ answers: { 'Who?': 'Ada', 'In which language?': 'French' } });

    const problem = gate.accept({ answers: { 'Who?': 'Grace', 'In which language?': 'English' } });

    expect(problem).toBeNull();
    expect(gate.withAnswers(step('s1', [])).instruction).toContain('A: Ada');
  });

  it('the models see the step instruction followed by the user answers', () => {
    const gate = asking();
    gate.accept({ answers: { 'Who?': 'Ada', 'In which language?': 'French' } });

    const seen = gate.withAnswers(step('s1', ['Who?', 'In which language?']));

    expect(seen.instruction).toBe(
      'greet the user\n\nAnswers from the user:\nQ: Who?\nA: Ada\nQ: In which language?\nA: French'
    );
    expect(gate.withAnswers(step('s2', [])).instruction).toBe('greet the user');
  });

  it('a new plan does not reuse the answers given to the steps it replaced', () => {
    const gate = asking();
    gate.accept({ answers: { 'Who?': 'Ada', 'In which language?': 'French' } });

    gate.reset();

    expect(gate.isAnswered('s1')).toBe(false);
    expect(gate.pending).toBeNull();
  });
});
