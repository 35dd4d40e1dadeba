/** Tool dispatch bookkeeping: idempotency keys, what results and denials look like, what a step's calls add up to. */
import { callKey, callOutcome, deniedOutcome, stepToolResult } from '../../workflows/task/dispatch';

describe('tool dispatch', () => {
  it("Temporal's retry of a call keeps its idempotency key; a new attempt of the step gets a new one", () => {
    const first = callKey('task-s-1', 's2', 1, 0);

    const retried = callKey('task-s-1', 's2', 1, 0);
    const nextAttempt = callKey('task-s-1', 's2', 2, 0);
    const otherCall = callKey('task-s-1', 's2', 1, 1);

    expect(retried).toBe(first);
    expect(new Set([first, nextAttempt, otherCall]).size).toBe(3);
    expect(first).toBe('task-s-1/s2/attempt-1/call-0');
  });

  it('a cut output says where the whole of it is kept', () => {
    const call = { qualifiedName: 'workspace__grep' };

    const cut = callOutcome(call, { status: 'ok', text: 'a\nb', truncated: true, bytes: 90000, ref: 'sha256:ff' });
    const whole = callOutcome(call, { status: 'error', text: 'no match', truncated: false, bytes: 8 });

    expect(cut).toEqual({
      tool: 'workspace__grep',
      status: 'ok',
      text: '[full output of 90000 bytes kept as sha256:ff]\na\nb',
    });
    expect(whole).toEqual({ tool: 'workspace__grep', status: 'error', text: 'no match' });
  });

  it('a denied path becomes a non-halting error naming the path and why it was asked about', () => {
    const outcome = deniedOutcome(
      { qualifiedName: 'workspace__read_file' },
      { arg: 'path', requested: '../.env', op: 'read', real: '/p/.env', class: 'sensitive', reason: 'a sensitive file' }
    );

    expect(outcome).toEqual({
      tool: 'workspace__read_file',
      status: 'denied',
      text: '../.env (a sensitive file) was denied by the user',
    });
  });

  it('a step the picker found no tool for goes to triage with the reason', () => {
    expect(stepToolResult('s1', [], [{ stepId: 's1', reason: 'nothing reads PDFs' }])).toEqual({
      noTool: 'nothing reads PDFs',
      text: '',
    });
    expect(stepToolResult('s1', [], []).noTool).toBe('the tool picker named no tool for this step');
  });

  it('the results of several calls are labelled with their tool; a single result is not', () => {
    const read = { tool: 'workspace__read_file', status: 'ok' as const, text: 'alpha' };
    const grep = { tool: 'workspace__grep', status: 'ok' as const, text: 'a.txt:1' };

    expect(stepToolResult('s1', [read, grep], [])).toEqual({
      noTool: null,
      text: '[workspace__read_file] alpha\n\n[workspace__grep] a.txt:1',
    });
    expect(stepToolResult('s1', [read], []).text).toBe('alpha');
  });
});
