import { ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import { Failure, failureCode, failureMessage, isTimeout } from '../../common/failures';

/** How Temporal hands an activity's failure to the workflow: ActivityFailure → ApplicationFailure. */
const wrapped = (cause: Error) => Object.assign(new Error('activity task failed'), { cause });

describe('failure helpers', () => {
  it('the error code is the innermost typed failure of the chain', () => {
    const err = wrapped(ApplicationFailure.nonRetryable('bad output', Failure.ModelOutputInvalid));

    expect(failureCode(err, Failure.TaskFailed)).toBe('ModelOutputInvalid');
  });

  it('an untyped failure gets the fallback code', () => {
    expect(failureCode(wrapped(new Error('boom')), Failure.TaskFailed)).toBe('TaskFailed');
  });

  it('the message shown is the innermost one, not the wrapper', () => {
    const err = wrapped(ApplicationFailure.nonRetryable('project directory refused', Failure.ProjectNotAllowed));

    expect(failureMessage(err)).toBe('project directory refused');
    expect(failureMessage('plain')).toBe('plain');
  });

  it('a timeout anywhere in the chain is a timeout', () => {
    expect(isTimeout(wrapped(new TimeoutFailure('ran out', undefined, 'SCHEDULE_TO_CLOSE')))).toBe(true);
    expect(isTimeout(wrapped(new Error('other')))).toBe(false);
  });

  it('every failure name is its own value, so a thrown type reads back as its name', () => {
    for (const [name, value] of Object.entries(Failure)) expect(value).toBe(name);
  });
});
