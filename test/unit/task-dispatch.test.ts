/** Tool dispatch bookkeeping: idempotency keys, what results and denials look like, what a step's calls add up to. */
import { callKey, callOutcome, deniedOutcome, repeatsCall, stepToolResult } from '../../workflows/task/dispatch';

const RUN = { workflowId: 'task-s-1', runId: 'r1' };

describe('tool dispatch', () => {
  it("Temporal's retry of a call keeps its idempotency key; a new attempt of the step gets a new one", () => {
    const first = callKey(RUN, 's2', 1, 0);

    const retried = callKey(RUN, 's2', 1, 0);
    const nextAttempt = callKey(RUN, 's2', 2, 0);
    const otherCall = callKey(RUN, 's2', 1, 1);

    expect(retried).toBe(first);
    // A re-run after a rewind is a new run of the same workflow: its calls are new calls.
    expect(callKey({ ...RUN, runId: 'r2' }, 's2', 1, 0)).not.toBe(first);
    expect(new Set([first, nextAttempt, otherCall]).size).toBe(3);
    expect(first).toBe('task-s-1/r1/s2/attempt-1/call-0');
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
      repairs: [],
    });
    expect(stepToolResult('s1', [], []).noTool).toBe('the tool picker named no tool for this step');
  });

  const made = (qualifiedName: string, args: Record<string, unknown>, text: string, status = 'ok' as const) => ({
    call: { stepId: 's1', qualifiedName, args },
    outcome: { tool: qualifiedName, status, text },
  });

  it('the results of several calls are labelled with their call and status; a single result is not', () => {
    const read = made('workspace__read_file', { path: 'a.txt' }, 'alpha');
    const grep = made('workspace__grep', { pattern: 'a' }, 'a.txt:1');

    expect(stepToolResult('s1', [read, grep], [])).toEqual({
      noTool: null,
      text: '[workspace__read_file "a.txt": ok] alpha\n\n[workspace__grep "a": ok] a.txt:1',
      repairs: [],
    });
    expect(stepToolResult('s1', [read], []).text).toBe('alpha');
  });

  it('a pick holding a call and no_suitable_tool for the same step runs the call, and says so', () => {
    const run = made('workspace__run_command', { command: 'python hello.py' }, 'hello world');

    const r = stepToolResult('s1', [run], [{ stepId: 's1', reason: 'no tool runs Python' }]);

    expect(r.noTool).toBeNull();
    expect(r.repairs).toEqual(["the picker also said no tool fits (no tool runs Python); the step's call ran"]);
  });

  it('a call that repeats one the step made is recognised, whatever the order of its arguments', () => {
    const earlier = [made('workspace__edit_file', { path: 'a.py', old: 'x', new: 'y' }, 'edited')];

    expect(
      repeatsCall({ qualifiedName: 'workspace__edit_file', args: { new: 'y', old: 'x', path: 'a.py' } }, earlier)
    ).toBe(true);
    expect(
      repeatsCall({ qualifiedName: 'workspace__edit_file', args: { path: 'a.py', old: 'x', new: 'z' } }, earlier)
    ).toBe(false);
    expect(
      repeatsCall({ qualifiedName: 'workspace__read_file', args: { path: 'a.py' } }, [
        made('workspace__read_file', { path: 'a.py' }, 'no such file', 'error' as 'ok'),
      ])
    ).toBe(true); // a failed call made again fails again
  });

  it("a step's later rounds get idempotency keys of their own", () => {
    expect(callKey(RUN, 's1', 1, 0, 2)).toBe('task-s-1/r1/s1/attempt-1/round-2/call-0');
    expect(callKey(RUN, 's1', 1, 0, 1)).toBe(callKey(RUN, 's1', 1, 0));
  });
});
