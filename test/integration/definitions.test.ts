/**
 * Where the project defines the names a request mentions: the Planner and the answer composer are told (a small
 * model answered "where is this defined?" with a change to a caller), read through the workspace server like any
 * read, so a file the guard keeps from the model tells nothing.
 */
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

describe('a question about where a function is defined, in folders inside folders', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv({ name: 'where-defined' }, (f, e) => {
    fake = f;
    env = e;
  });

  const files = {
    'app.py': 'from billing.core.mailer import send_invoice\n\n\ndef run(order):\n    send_invoice(order)\n',
    'billing/__init__.py': '',
    'billing/core/__init__.py': '',
    'billing/core/mailer.py': 'import smtplib\n\n\ndef send_invoice(order):\n    return order\n',
  };
  const answering = plan([step('s1', 'Say where send_invoice is defined.', { needs_tool: false })]);

  /** Runs the question to its end; the Planner's and the composer's prompts. */
  async function ask(project: Record<string, string>, request: string) {
    const p = makeProject(project);
    fake.always('write_plan', { call: answering });
    fake.always('do_step', { content: 'It is defined in the billing package.' });
    fake.always('compose_answer', { content: 'In billing/core/mailer.py.' });
    const t = await TaskDriver.start(env, request, p.dir);
    expect(await t.result()).toMatchObject({ status: 'done' });
    return { planner: fake.requestsFor('write_plan')[0].text, composer: fake.requestsFor('compose_answer')[0].text };
  }

  it('the Planner and the composer are told the file and line that define it, not the caller', async () => {
    const { planner, composer } = await ask(files, "Where's send_invoice actually defined? Not where it's called.");
    const fact = 'send_invoice: a function in billing/core/mailer.py, line 4';
    for (const prompt of [planner, composer]) {
      expect(prompt).toContain(
        `## Where the names the request mentions are defined\n<untrusted source="the project's code">\n${fact}\n`
      );
      expect(prompt).not.toMatch(/send_invoice: a function in app\.py/);
    }
  });

  it('a request that names a file of the project says where to work: only the composer is told', async () => {
    const { planner, composer } = await ask(files, 'Does app.py call send_invoice with the order?');
    expect(planner).not.toContain('## Where the names the request mentions are defined');
    expect(composer).toContain('send_invoice: a function in billing/core/mailer.py, line 4');
  });

  it('attack: a code file behind the sensitive patterns is never read for it, though the listing shows it', async () => {
    const secret = { ...files, '.aws/rotate.py': 'def rotate_keys():\n    pass\n' };
    const { planner, composer } = await ask(secret, 'Where is rotate_keys defined?');
    expect(planner).toContain('.aws/rotate.py');
    expect(planner).not.toContain('rotate_keys: a function');
    expect(composer).not.toContain('rotate_keys: a function');
  });

  it('the control: the same file outside them is read, and its definition told', async () => {
    const open = { ...files, 'ops/rotate.py': 'def rotate_keys():\n    pass\n' };
    const { planner } = await ask(open, 'Where is rotate_keys defined?');
    expect(planner).toContain('rotate_keys: a function in ops/rotate.py, line 1');
  });
});
