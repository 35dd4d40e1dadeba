/**
 * Evidence a user can trust: a file written back with only its blank lines moved is no change, so the step that was
 * to change it is not done on it; and a check the shell cannot read (a quote left open) is no check, so a step is not
 * failed on it alone.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

describe('a small model that writes a file back with a blank line less', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv(
    { name: 'written-back', overrides: { model: { structured_output: 'json_schema', profile: 'small' } } },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  const views = 'from billing.mailer import send_invoice\n\n\ndef post_invoice(r):\n    send_invoice(r)\n';
  const request = 'In views.py, make post_invoice return what send_invoice returns.';
  const changing = plan([
    step('s1', 'In views.py, return the result of send_invoice.', { expect: { changes: ['views.py'] } }),
  ]);
  const edit = {
    calls: [
      {
        name: 'workspace__edit_file',
        args: { step_id: 's1', path: 'views.py', old_string: 'send_invoice(r)\n', new_string: 'send_invoice(r)\n' },
      },
    ],
  };

  it('does not get the step done: the file stays as it was, and the task ends failed, saying so', async () => {
    const p = makeProject({ 'views.py': views });
    fake.always('write_plan', { call: changing });
    fake.always('pick_tools', edit);
    fake.always('write_file_content', { content: '```\n' + views.replace('\n\n\n', '\n\n') + '```' });
    fake.always('compose_answer', { content: 'views.py was not changed.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'failed' });
    expect(readFileSync(path.join(p.dir, 'views.py'), 'utf8')).toBe(views);
    const [s1] = await t.eventsOf('step_finished');
    expect(s1).toMatchObject({ stepId: 's1' });
    expect(s1.reason).toMatch(/views\.py/);
  });

  it('the control: a rewrite that changes a line is written, and the step is done', async () => {
    const p = makeProject({ 'views.py': views });
    const fixed = views.replace('    send_invoice(r)', '    return send_invoice(r)');
    fake.always('write_plan', { call: changing });
    fake.always('pick_tools', edit);
    fake.always('write_file_content', { content: '```\n' + fixed + '```' });
    fake.always('compose_answer', { content: 'post_invoice returns it now.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'views.py'), 'utf8')).toBe(fixed);
  });
});

describe('a check that leaves a quote open', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'open-quote-check' }, (f, e) => {
    fake = f;
    env = e;
  });

  const request = 'Add a line "beta" to notes.txt.';
  const write = {
    calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'notes.txt', content: 'alpha\nbeta\n' } }],
  };
  const checked = (check: string) =>
    plan([step('s1', 'Add beta to notes.txt.', { expect: { changes: ['notes.txt'], check } })]);

  it('is left out of the plan: the step is judged by the file it changed, and the task is done', async () => {
    const p = makeProject({ 'notes.txt': 'alpha\n' });
    fake.on('write_plan', { call: checked("grep -q 'beta notes.txt") });
    fake.on('pick_tools', write);
    fake.on('compose_answer', { content: 'notes.txt has beta.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    expect(readFileSync(path.join(p.dir, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n');
    const [planEvent] = await t.eventsOf('plan');
    expect(planEvent.plan.steps[0].expect).toEqual({ changes: ['notes.txt'] });
    expect(planEvent.repairs).toContain(
      'step "s1": its check `grep -q \'beta notes.txt` leaves a quote open, and the shell cannot run it: left out'
    );
  });

  it('the control: a check that closes its quote is run, and passes on the change', async () => {
    const p = makeProject({ 'notes.txt': 'alpha\n' });
    fake.on('write_plan', { call: checked("grep -q 'beta' notes.txt") });
    fake.on('pick_tools', write);
    fake.on('compose_answer', { content: 'notes.txt has beta.' });

    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    const [s1] = await t.eventsOf('step_finished');
    expect(s1.calls.map((c: { tool: string }) => c.tool)).toContain('workspace__run_command');
  });
});
