import { answersProblem } from '../../workflows/task/questions';

describe('answersProblem: clarify answers against the pending questions', () => {
  const questions = ['Whom should I greet?', 'In which language?'];

  it('accepts an answer to every pending question', () => {
    expect(answersProblem(questions, { 'Whom should I greet?': 'Ada', 'In which language?': 'German' })).toBeNull();
  });

  it('refuses an unknown question, listing the pending ones', () => {
    expect(answersProblem(questions, { 'Who?': 'Ada', 'In which language?': 'German' })).toBe(
      'this is not a pending question: "Who?"; the pending questions are "Whom should I greet?", "In which language?"'
    );
    expect(answersProblem(questions, { a: '1', b: '2' })).toMatch(/^these are not pending questions: "a", "b";/);
  });

  it('refuses answers that leave a question unanswered or blank', () => {
    expect(answersProblem(questions, { 'Whom should I greet?': 'Ada' })).toBe(
      'no answer to "In which language?"; answer every pending question: "Whom should I greet?", "In which language?"'
    );
    expect(answersProblem(questions, { 'Whom should I greet?': 'Ada', 'In which language?': '  ' })).toMatch(
      /^no answer to "In which language\?"/
    );
    expect(answersProblem(questions, {})).toMatch(/^no answer to "Whom should I greet\?", "In which language\?"/);
  });
});
