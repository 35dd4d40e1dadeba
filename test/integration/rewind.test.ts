/**
 * Rewind through the whole task path, on a real Temporal dev server with the real workspace MCP server (commands
 * in the sandbox) and the API in front: undo a write, an edit and a command that created, changed and deleted
 * files, from any step; a conflict with the user's own change; a re-run from a step that ends as a fresh run
 * would; a sensitive file left as it is; the reset as Temporal shows it.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { temporal } from '@temporalio/proto';
import { createApp } from '../../api/app';
import type { KleaEvent } from '../../common/events';
import { dataPath } from '../../runtime/data-dir';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import { permissionSignal, stateQuery } from '../../workflows/task/messages';
import { SessionDriver } from '../support/session-driver';
import { randomUUID } from 'node:crypto';
import { newSessionId } from '../../api/targets';
import { until } from '../support/until';

/** Every file under `dir` with its content (the project as a user would compare it). */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[path.relative(dir, p)] = readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

/**
 * The files under `dir` whose bytes hold `secret`: to look for it anywhere in them (file by file: the test data
 * directory grows over local runs, past what one string can hold).
 */
function filesHolding(dir: string, secret: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && readFileSync(p).includes(secret)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

/** The picks of s2 (an edit) and s3 (a command that creates, changes and deletes files), asked again by a re-run. */
const PICK_S2 = {
  calls: [
    {
      name: 'workspace__edit_file',
      args: { step_id: 's2', path: 'notes.txt', old_string: 'two\n', new_string: 'TWO\n' },
    },
  ],
};
const PICK_S3 = {
  calls: [
    {
      name: 'workspace__run_command',
      args: {
        step_id: 's3',
        command: 'mkdir -p out && echo made > out/c.txt && echo four >> notes.txt && rm old.txt && chmod +x keep.md',
      },
    },
  ],
};

const ORIGINAL = { 'notes.txt': 'one\ntwo\nthree\n', 'old.txt': 'to be deleted\n', 'keep.md': '# kept\n' };

describe('rewind: undo what a task changed, from any step, and run it again', () => {
  let fake: FakeModel;
  let env: TestEnv;
  let app: Express;
  useFakeModelEnv({ name: 'rewind' }, (f, e) => {
    fake = f;
    env = e;
    app = createApp({ client: env.client, config: env.config, ssePollMs: 50 });
  });

  /** A three-step task: s1 writes a file, s2 edits one, s3 runs a command that creates, changes and deletes files. */
  function scriptThreeSteps(): void {
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Write a.txt'),
        step('s2', 'Edit notes.txt', { depends_on: ['s1'] }),
        step('s3', 'Tidy up with a command', { depends_on: ['s2'] }),
      ]),
    });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'a.txt', content: 'alpha\n' } }] },
      PICK_S2,
      PICK_S3
    );
    fake.on('compose_answer', { content: 'Done.' });
  }

  async function runThreeSteps(dir: string): Promise<TaskDriver> {
    scriptThreeSteps();
    const t = await TaskDriver.start(env, 'Write, edit, tidy', dir);
    expect((await t.result()).status).toBe('done');
    expect(tree(dir)).toEqual({
      'a.txt': 'alpha\n',
      'notes.txt': 'one\nTWO\nthree\nfour\n',
      'keep.md': '# kept\n',
      'out/c.txt': 'made\n',
    });
    return t;
  }

  it('undo from the first step puts back every file the steps wrote, edited, created, changed or deleted', async () => {
    const p = makeProject(ORIGINAL);
    const t = await runThreeSteps(p.dir);

    // What it would do, first: nothing changes.
    const preview = await request(app).get(`/tasks/${t.taskId}/rewind`).query({ toStep: 's1' });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ status: 'preview', steps: ['s1', 's2', 's3'], conflicts: [] });
    expect(preview.body.files).toEqual(
      expect.arrayContaining([
        { path: 'a.txt', action: 'delete', step: 's1' },
        { path: 'notes.txt', action: 'restore', step: 's2' },
        { path: 'old.txt', action: 'recreate', step: 's3' },
        { path: 'out/c.txt', action: 'delete', step: 's3' },
      ])
    );
    expect(readFileSync(path.join(p.dir, 'a.txt'), 'utf8')).toBe('alpha\n');

    const res = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's1' });
    expect(res.body.error?.message).toBeUndefined();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'rewound', rerun: false, steps: ['s1', 's2', 's3'] });
    expect(tree(p.dir)).toEqual(ORIGINAL);
    expect(statSync(path.join(p.dir, 'keep.md')).mode & 0o111).toBe(0);

    // The task ends `rewound`, and says what was restored, file by file.
    const state = await request(app).get(`/tasks/${t.taskId}`);
    expect(state.body.status).toBe('rewound');
    const events = (await request(app).get(`/tasks/${t.taskId}/events`).query({ after: 0 })).body.events as KleaEvent[];
    const rewound = events.find((e) => e.type === 'rewound');
    expect(rewound).toMatchObject({ toStep: 's1', rerun: false, fromRunId: res.body.previousRunId });
    expect(rewound && 'restored' in rewound && rewound.restored.map((f) => f.path).sort()).toEqual([
      'a.txt',
      'keep.md',
      'notes.txt',
      'old.txt',
      'out/c.txt',
    ]);
    // No seq is handed out twice: the run that was reset had got further than the point it went back to.
    const seqs = events.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(events.at(-1)).toMatchObject({ type: 'status', status: 'rewound' });

    // Temporal shows the reset: a new run of the same workflow, the old one kept.
    const newRun = env.client.workflow.getHandle(t.taskId, res.body.runId);
    expect((await newRun.describe()).status.name).toBe('COMPLETED');
    expect((await env.client.workflow.getHandle(t.taskId, res.body.previousRunId).describe()).runId).toBe(
      res.body.previousRunId
    );
    const history = await newRun.fetchHistory();
    const resetFailure = (history.events ?? []).find(
      (e) =>
        e.workflowTaskFailedEventAttributes?.cause ===
        temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    );
    expect(resetFailure?.workflowTaskFailedEventAttributes?.baseRunId).toBe(res.body.previousRunId);
    // The reset is the only workflow task that failed, and nothing was scheduled after it: the round did not run.
    const failed = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    expect(failed).toHaveLength(1);
    const afterReset = (history.events ?? []).filter((e) => Number(e.eventId) > Number(resetFailure!.eventId));
    expect(afterReset.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);

    // Undone is undone: in the task as it stands now, no step has run, so there is nothing to go back to.
    const again = await request(app).get(`/tasks/${t.taskId}/rewind`).query({ toStep: 's1' });
    expect(again.status).toBe(400);
    expect(again.body.error.message).toMatch(/s1 has not run/);
  });

  it('undo from a middle step keeps what the steps before it did', async () => {
    const p = makeProject(ORIGINAL);
    const t = await runThreeSteps(p.dir);
    const res = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's2' });
    expect(res.status).toBe(200);
    expect(res.body.steps).toEqual(['s2', 's3']);
    expect(tree(p.dir)).toEqual({ ...ORIGINAL, 'a.txt': 'alpha\n' });
  });

  it('a file the user changed since the task touched it stops the rewind before anything changes; force restores it', async () => {
    const p = makeProject(ORIGINAL);
    const t = await runThreeSteps(p.dir);
    writeFileSync(path.join(p.dir, 'a.txt'), 'my own edit\n');
    const before = tree(p.dir);

    const res = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's1' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toContain('a.txt');
    expect(res.body.error.details.conflicts).toEqual([{ path: 'a.txt', reason: expect.any(String) }]);
    expect(tree(p.dir)).toEqual(before);
    expect((await request(app).get(`/tasks/${t.taskId}`)).body.status).toBe('done');

    const forced = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's1', force: true });
    expect(forced.status).toBe(200);
    expect(tree(p.dir)).toEqual(ORIGINAL);
  });

  it('redo from a step runs the task again from there, with new calls, and ends as a fresh run does', async () => {
    const p = makeProject(ORIGINAL);
    const t = await runThreeSteps(p.dir);
    const afterFirst = tree(p.dir);

    // The re-run of s2 and s3: the model is asked again, and picks as it did.
    fake.on('pick_tools', PICK_S2, PICK_S3);
    fake.on('compose_answer', { content: 'Done again.' });
    const res = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's2', rerun: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'rewound', rerun: true });

    const rerun = env.client.workflow.getHandle(t.taskId, res.body.runId);
    expect(await rerun.result()).toMatchObject({ status: 'done', answer: 'Done again.' });
    // The edit and the command were applied again (new calls): the tree is what the first run left.
    expect(tree(p.dir)).toEqual(afterFirst);
    const events = (await request(app).get(`/tasks/${t.taskId}/events`).query({ after: 0 })).body.events as KleaEvent[];
    const types = events.map((e) => e.type);
    expect(types.slice(types.indexOf('rewound'))).toEqual([
      'rewound',
      'step_started',
      'step_finished',
      'step_started',
      'step_finished',
      'answer',
      'status',
    ]);
    expect(events.filter((e) => e.type === 'step_finished' && e.status === 'done').length).toBeGreaterThanOrEqual(3);

    // A fresh run of the same task on a fresh copy of the project ends with the same files.
    const fresh = makeProject(ORIGINAL);
    await runThreeSteps(fresh.dir);
    expect(tree(fresh.dir)).toEqual(tree(p.dir));

    // A run a rewind made can be rewound again, to a later round: it waits for that rewind too, and runs nothing.
    const again = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's3' });
    expect(again.status).toBe(200);
    expect(again.body.steps).toEqual(['s3']);
    expect(tree(p.dir)).toEqual({ ...ORIGINAL, 'a.txt': 'alpha\n', 'notes.txt': 'one\nTWO\nthree\n' });
    expect(await env.client.workflow.getHandle(t.taskId, again.body.runId).result()).toMatchObject({
      status: 'rewound',
    });
  });

  it('a sensitive file a step changed is never kept and is left as it is; the rest is restored', async () => {
    const p = makeProject({ 'app.py': 'print(1)\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Write the settings')]) });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__write_file', args: { step_id: 's1', path: '.env', content: 'TOKEN=sk-rewind-secret\n' } },
        { name: 'workspace__write_file', args: { step_id: 's1', path: 'app.py', content: 'print(2)\n' } },
      ],
    });
    fake.on('compose_answer', { content: 'Written.' });
    const t = await TaskDriver.start(env, 'Write the settings', p.dir);
    const asked = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: asked.requestId, decision: 'allow_once' });
    expect((await t.result()).status).toBe('done');

    const res = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's1' });
    expect(res.status).toBe(200);
    expect(res.body.sensitive).toEqual(['.env']);
    expect(readFileSync(path.join(p.dir, 'app.py'), 'utf8')).toBe('print(1)\n');
    expect(readFileSync(path.join(p.dir, '.env'), 'utf8')).toBe('TOKEN=sk-rewind-secret\n');
    expect(filesHolding(dataPath('checkpoints'), 'sk-rewind-secret')).toEqual([]);
  });

  it('bad requests get a clear answer: a step that never ran, a task that does not exist, a malformed body', async () => {
    const p = makeProject(ORIGINAL);
    const t = await runThreeSteps(p.dir);
    const unknown = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's9' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/s9 has not run.*s1, s2, s3/);
    const missing = await request(app).post('/tasks/task-nobody-1/rewind').send({ toStep: 's1' });
    expect(missing.status).toBe(404);
    const malformed = await request(app).post(`/tasks/${t.taskId}/rewind`).send({ toStep: 's1', rerun: 'yes' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.message).toContain('rerun');
    expect(tree(p.dir)).toEqual({
      'a.txt': 'alpha\n',
      'notes.txt': 'one\nTWO\nthree\nfour\n',
      'keep.md': '# kept\n',
      'out/c.txt': 'made\n',
    });
  });
  it("a session's task paused for a review is rewound: the session hears it ended rewound and takes the next message", async () => {
    const p = makeProject(ORIGINAL);
    const s = await SessionDriver.start(env, p.dir, { sessionId: newSessionId(randomUUID()) });
    fake.on(
      'route_request',
      { call: { route: 'task', reply: null } },
      { call: { route: 'chat', reply: 'Hello again.' } }
    );
    fake.on('write_plan', {
      call: plan([step('s1', 'Write a.txt'), step('s2', 'Edit notes.txt', { depends_on: ['s1'] })], {
        after_step_ids: ['s1'],
      }),
    });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'a.txt', content: 'alpha\n' } }],
    });
    const r = await s.submit('Write, then edit');
    const task = env.client.workflow.getHandle(r.taskId!);
    await until('the task waits for its review after s1', async () =>
      (await task.query(stateQuery)).status === 'awaiting_review' ? true : undefined
    );
    expect(readFileSync(path.join(p.dir, 'a.txt'), 'utf8')).toBe('alpha\n');

    const res = await request(app).post(`/tasks/${r.taskId}/rewind`).send({ toStep: 's1' });
    expect(res.status).toBe(200);
    expect(tree(p.dir)).toEqual(ORIGINAL);
    expect(await task.result()).toMatchObject({ status: 'rewound' });
    await s.waitFor(
      (e) => e.type === 'status' && e.taskId === r.taskId && e.status === 'rewound',
      'the task ended rewound'
    );
    expect((await s.state()).currentTaskId).toBeNull();
    const next = await s.submit('hi');
    expect(next).toMatchObject({ kind: 'chat', reply: 'Hello again.' });
  });
});
