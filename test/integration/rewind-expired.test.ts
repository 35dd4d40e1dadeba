/**
 * Rewind when the checkpoints are gone: the store is bounded (`tools.checkpoints.max_mb`) and drops the oldest
 * tasks' checkpoints first, and a rewind of such a task answers 410 saying so, changing nothing.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../api/app';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';

/** 600 KiB: two of them do not fit in a 1 MiB store. */
const big = (c: string) => `${c.repeat(1023)}\n`.repeat(600);
/** What a task writes over a big file: half of it kept (a write that drops most of a file is refused). */
const halved = (c: string, note: string) => `${c.repeat(1023)}\n`.repeat(300) + note;

describe('rewind of a task whose checkpoints were dropped', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  useFakeModelEnv({ name: 'rewind-expired', overrides: { tools: { checkpoints: { max_mb: 1 } } } }, (f, e) => {
    fake = f;
    env = e;
    app = createApp({ client: env.client, config: env.config, ssePollMs: 50 });
  });

  async function writeTask(dir: string, file: string, content: string): Promise<TaskDriver> {
    fake.on('write_plan', { call: plan([step('s1', `Write ${file}`)]) });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: file, content } }],
    });
    fake.on('compose_answer', { content: 'Written.' });
    const t = await TaskDriver.start(env, `Write ${file}`, dir);
    expect((await t.result()).status).toBe('done');
    return t;
  }

  it('the oldest task goes first when the store is full; its rewind answers 410 and changes nothing', async () => {
    const p = makeProject({ 'big.txt': big('a'), 'big2.txt': big('b') });
    // Each task replaces a large file: its checkpoint keeps the large content it replaced. Both do not fit, and
    // the first task's checkpoint is dropped.
    const first = await writeTask(p.dir, 'big.txt', halved('a', 'small\n'));
    const second = await writeTask(p.dir, 'big2.txt', halved('b', 'small too\n'));

    const res = await request(app).post(`/tasks/${first.taskId}/rewind`).send({ toStep: 's1' });
    expect(res.status).toBe(410);
    expect(res.body.error.message).toMatch(/no longer kept.*tools\.checkpoints\.max_mb/);
    expect(readFileSync(path.join(p.dir, 'big.txt'), 'utf8')).toBe(halved('a', 'small\n'));
    expect((await request(app).get(`/tasks/${first.taskId}`)).body.status).toBe('done');

    // The newer task is still known: its rewind goes ahead, and says plainly what it could not keep.
    const undo = await request(app).post(`/tasks/${second.taskId}/rewind`).send({ toStep: 's1' });
    expect(undo.status).toBe(200);
    if (undo.body.tooLarge.length) {
      expect(undo.body).toMatchObject({ tooLarge: ['s1'], files: [] });
      expect(readFileSync(path.join(p.dir, 'big2.txt'), 'utf8')).toBe(halved('b', 'small too\n'));
    } else {
      expect(undo.body.files).toEqual([{ path: 'big2.txt', action: 'restore', step: 's1' }]);
      expect(readFileSync(path.join(p.dir, 'big2.txt'), 'utf8')).toBe(big('b'));
    }
  });
});
