/**
 * What a task changed and why a plan changed, on a real Temporal server: file changes as unified diffs on
 * `step_finished`, plan differences on a revised plan's events, and the inbox routes (`GET /tasks`, `GET /sessions`)
 * that list runs from Temporal's visibility.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import type { FakeModel } from '../../testing/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

type StepFinished = Extract<KleaEvent, { type: 'step_finished' }>;

describe('changes and plan differences', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  const project = makeProject({ 'notes.txt': 'one\ntwo\nthree\n' });
  useFakeModelEnv({ name: 'inbox-diffs', overrides: { project: { dir: project.dir } } }, (f, e) => {
    fake = f;
    env = e;
    app = createApp({ client: env.client, config: env.config, ssePollMs: 50 });
  });

  it('an edit and a new file carry their unified diffs and line counts on step_finished', async () => {
    fake.on('write_plan', { call: plan([step('e', 'Edit notes.txt'), step('n', 'Create new.md')]) });
    fake.on('pick_tools', {
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 'e', path: 'notes.txt', old_string: 'two\n', new_string: 'TWO\n2.5\n' },
        },
        { name: 'workspace__write_file', args: { step_id: 'n', path: 'new.md', content: '# New\n\nhello\n' } },
      ],
    });
    fake.on('compose_answer', { content: 'Edited and created.' });
    const t = await TaskDriver.start(env, 'Edit and create', project.dir);
    expect((await t.result()).status).toBe('done');
    expect(readFileSync(path.join(project.dir, 'notes.txt'), 'utf8')).toBe('one\nTWO\n2.5\nthree\n');

    const finished = (await t.events()).filter((e): e is StepFinished => e.type === 'step_finished');
    const byStep = new Map(finished.map((e) => [e.stepId, e]));
    expect(byStep.get('e')!.changes).toEqual([
      {
        path: 'notes.txt',
        added: 2,
        removed: 1,
        diff: ['--- a/notes.txt', '+++ b/notes.txt', '@@ -1,3 +1,4 @@', ' one', '-two', '+TWO', '+2.5', ' three'].join(
          '\n'
        ),
      },
    ]);
    expect(byStep.get('n')!.changes).toEqual([
      {
        path: 'new.md',
        added: 3,
        removed: 0,
        diff: ['--- /dev/null', '+++ b/new.md', '@@ -0,0 +1,3 @@', '+# New', '+', '+hello'].join('\n'),
      },
    ]);
    // The same through the API's event route.
    const res = await request(app).get(`/tasks/${t.taskId}/events?after=0`);
    expect(res.status).toBe(200);
    const viaApi = (res.body.events as KleaEvent[]).filter((e) => e.type === 'step_finished') as StepFinished[];
    expect(viaApi.flatMap((e) => e.changes ?? []).map((c) => c.path)).toEqual(
      expect.arrayContaining(['notes.txt', 'new.md'])
    );
  });

  it('a revised plan carries its difference against the reviewed plan, and the feedback, on plan and review_requested', async () => {
    const first = plan(
      [step('s1', 'Read notes.txt'), step('s2', 'Count lines'), step('s3', 'Report', { needs_tool: false })],
      {
        before_work: true,
      }
    );
    const revised = plan(
      [
        step('s1', 'Read notes.txt'),
        step('s2', 'Count words instead', { depends_on: ['s1'] }),
        step('s4', 'Report in French', { needs_tool: false }),
      ],
      { before_work: true }
    );
    fake.on('write_plan', { call: first }, { call: revised });
    const t = await TaskDriver.start(env, 'Count', project.dir);
    const r1 = await t.waitFor('review_requested');
    expect(r1.diff).toBeUndefined();
    const res = await request(app)
      .post(`/tasks/${t.taskId}/review`)
      .send({ decision: 'revise', planHash: r1.planHash, feedback: 'words, not lines; in French' });
    expect(res.status).toBe(200);

    const r2 = await t.waitFor('review_requested', (e) => e.reason === 'revised');
    const diff = { added: ['s4'], removed: ['s3'], changed: [{ stepId: 's2', fields: ['instruction', 'depends_on'] }] };
    expect(r2).toMatchObject({ diff, feedback: 'words, not lines; in French' });
    const plans = (await t.events()).filter((e) => e.type === 'plan');
    expect(plans).toHaveLength(2);
    expect(plans[0]).not.toHaveProperty('diff');
    expect(plans[1]).toMatchObject({ diff, feedback: 'words, not lines; in French' });
    const state = await request(app).get(`/tasks/${t.taskId}`);
    expect(state.body.pending[0]).toMatchObject({ kind: 'review', reason: 'revised', diff });

    await request(app).post(`/tasks/${t.taskId}/cancel`).send({});
    expect((await t.result()).status).toBe('cancelled');
  });
});
