/**
 * A task's model requests at temperature 0 (activities/llm/model-memo): a request the task makes again word for word
 * is answered with the reply it got, not sent to the server again. The task ends as it would have: the same calls,
 * the same steps, the same result, with fewer requests. At another temperature every request is sent.
 */
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

const small = { structured_output: 'json_schema', profile: 'small' } as const;

/** A test that fails, a plan that only runs it, and picks that only run it again: the step's rounds repeat. */
async function runTheFailingTest(env: TestEnv, fake: FakeModel) {
  const p = makeProject({
    'units.py': 'def km(miles):\n    return miles * 1.6\n',
    'test_units.py': 'from units import km\nassert km(10) == 16.09344, km(10)\n',
  });
  const check = 'python3 test_units.py';
  fake.always('write_plan', { call: plan([step('s1', 'Run test_units.py.', { expect: { check } })]) });
  fake.always('pick_tools', {
    calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: check, step_done: true } }],
  });
  fake.always('wants_changes', { call: { answer: 'no' } });
  fake.always('compose_answer', { content: 'test_units.py fails: km(10) is 16.0.' });
  const t = await TaskDriver.start(env, 'Run test_units.py.', p.dir);
  const result = await t.result();
  const picks = fake.requestsFor('pick_tools').map((r) => r.text);
  const steps = (await t.eventsOf('step_finished')).map((f) => ({
    status: f.status,
    calls: f.calls.map((c) => [c.tool, c.status]),
    repairs: f.repairs,
  }));
  return { status: result.status, steps, picks, distinct: new Set(picks).size };
}

/** How the task ends either way: its one step ran the test once, repeated the pick, and the plan was not achieved. */
const ended = {
  status: 'failed',
  steps: [
    {
      status: 'retry',
      calls: [['workspace__run_command', 'error']],
      repairs: expect.arrayContaining(['the next pick repeated a call the step had made: the step ends here']),
    },
  ],
};

describe('at temperature 0 (the default)', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'model-memo', overrides: { model: small } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a pick the task asks for again word for word is not sent again; the task ends as it does when it is', async () => {
    const r = await runTheFailingTest(env, fake);
    // The step's second round asks for the pick of its first: only the first reached the server.
    expect(r.picks).toHaveLength(1);
    expect(r.distinct).toBe(r.picks.length);
    expect(r).toMatchObject(ended);
  });
});

describe('the control: at temperature 0.4', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'model-memo-warm', overrides: { model: { ...small, temperature: 0.4 } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('the same pick is sent again, as often as the task asks for it', async () => {
    const r = await runTheFailingTest(env, fake);
    expect(r.picks).toHaveLength(2);
    expect(r.distinct).toBe(1);
    expect(r).toMatchObject(ended);
  });
});
