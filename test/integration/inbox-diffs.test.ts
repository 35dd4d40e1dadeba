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
import type { FakeModel } from '../support/fake-model';
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

  describe('the inbox: GET /tasks and GET /sessions', () => {
    type Item = { id: string; sessionId: string; status: string; request: string | null; waitingSince: string | null };

    async function until<T>(what: string, get: () => Promise<T | null>, ms = 20_000): Promise<T> {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await get();
        if (v !== null) return v;
        if (Date.now() > deadline) throw new Error(`never: ${what}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }

    async function park(prompt: string): Promise<{ taskId: string; sessionId: string }> {
      fake.on('write_plan', { call: plan([step('s1', 'Look')], { before_work: true }) });
      const created = await request(app).post('/tasks').send({ prompt });
      expect(created.status).toBe(201);
      const { taskId, sessionId } = created.body;
      await until('parked', async () => {
        const s = await request(app).get(`/tasks/${taskId}`);
        return s.body.status === 'awaiting_review' ? true : null;
      });
      return { taskId, sessionId };
    }

    it('lists parked tasks by status and session, newest first, a page at a time', async () => {
      const a = await park('First parked request\nwith a second line');
      const b = await park('Second parked request');

      // By session: only that session's task, with what the inbox shows of it.
      const mine = await until('listed by session', async () => {
        const res = await request(app).get(`/tasks?sessionId=${a.sessionId}`);
        expect(res.status).toBe(200);
        return res.body.tasks.length ? (res.body.tasks as Item[]) : null;
      });
      expect(mine).toEqual([
        expect.objectContaining({
          id: a.taskId,
          sessionId: a.sessionId,
          status: 'awaiting_review',
          request: 'First parked request',
          waitingSince: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          temporalUiUrl: expect.stringContaining(a.taskId),
        }),
      ]);
      expect(typeof (mine[0] as unknown as { tokens: unknown }).tokens).toBe('number');

      // By status: both parked tasks, newest first; none of another status.
      const waiting = await until('both listed', async () => {
        const res = await request(app).get('/tasks?status=awaiting_review,awaiting_permission&limit=100');
        const ids = (res.body.tasks as Item[]).map((t) => t.id);
        return ids.includes(a.taskId) && ids.includes(b.taskId) ? (res.body.tasks as Item[]) : null;
      });
      expect(waiting.every((t) => t.status === 'awaiting_review' || t.status === 'awaiting_permission')).toBe(true);
      const ids = waiting.map((t) => t.id);
      expect(ids.indexOf(b.taskId)).toBeLessThan(ids.indexOf(a.taskId));
      expect((await request(app).get(`/tasks?status=done&sessionId=${a.sessionId}`)).body.tasks).toEqual([]);

      // A page at a time: every parked task once, by following the cursor.
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 200; i++) {
        const res = await request(app).get(
          `/tasks?status=awaiting_review&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        );
        expect(res.status).toBe(200);
        expect(res.body.tasks.length).toBeLessThanOrEqual(1);
        seen.push(...(res.body.tasks as Item[]).map((t) => t.id));
        cursor = res.body.nextCursor;
        if (!cursor) break;
      }
      expect(seen).toEqual(expect.arrayContaining([a.taskId, b.taskId]));
      expect(new Set(seen).size).toBe(seen.length);

      // Sessions, newest first, paged.
      const sessions = await until('sessions listed', async () => {
        const res = await request(app).get('/sessions?limit=100');
        expect(res.status).toBe(200);
        const list = res.body.sessions as Array<{ id: string; status: string }>;
        return list.some((x) => x.id === a.sessionId) && list.some((x) => x.id === b.sessionId) ? list : null;
      });
      const order = sessions.map((x) => x.id);
      expect(order.indexOf(b.sessionId)).toBeLessThan(order.indexOf(a.sessionId));
      expect(sessions.find((x) => x.id === a.sessionId)).toMatchObject({ status: 'running' });
      // Each with its project; one machine: no host holds it, and there are no hosts to list.
      const project = (await request(app).get(`/sessions/${a.sessionId}`)).body.projectDir as string;
      expect(sessions.find((x) => x.id === a.sessionId)).toMatchObject({ projectDir: project, host: null });
      expect((await request(app).get('/hosts')).body).toEqual({ hosts: [], complete: true });
      expect((await request(app).get('/sessions?host=h1')).body.sessions).toEqual([]);
      const first = await request(app).get('/sessions?limit=1');
      expect(first.body.sessions).toHaveLength(1);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await request(app).get(`/sessions?limit=1&cursor=${first.body.nextCursor}`);
      expect(second.status).toBe(200);
      expect(second.body.sessions[0]?.id).not.toBe(first.body.sessions[0].id);

      for (const t of [a, b]) await request(app).post(`/tasks/${t.taskId}/cancel`).send({});
    });

    it.each([
      ['/tasks?status=bogus', 'query.status'],
      ['/tasks?status=awaiting_review,', 'query.status'],
      ['/tasks?sessionId=a%27%20OR%201%3D1', 'query.sessionId'],
      ['/tasks?limit=0', 'query.limit'],
      ['/tasks?limit=abc', 'query.limit'],
      ['/tasks?cursor=!!', 'query.cursor'],
      ['/tasks?cursor=AAAA', 'query.cursor'],
      ['/tasks?colour=red', 'query.colour'],
      ['/sessions?limit=1000', 'query.limit'],
      ['/sessions?cursor=bm90LWEtdG9rZW4', 'query.cursor'],
      ['/sessions?host=H%27%20OR%201%3D1', 'query.host'],
    ])('GET %s is refused with 400 naming %s', async (url, field) => {
      const res = await request(app).get(url);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain(field);
    });
  });
});
