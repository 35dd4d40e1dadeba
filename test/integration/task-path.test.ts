/**
 * The durable task path on a real Temporal dev server, with the fake model and the real workspace MCP server:
 * plan, review (approve, revise, checkpoint, stale), the batched work loop, clarification, the permission gate,
 * replanning, cancellation and a worker restart during a pause.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { FakeModel } from '../support/fake-model';
import type { TestEnv } from '../support/harness';
import { useFakeModelEnv } from '../support/suite';
import { makeProject, plan, step, TaskDriver } from '../support/task-driver';
import {
  cancelSignal,
  clarifySignal,
  permissionSignal,
  reviewSignal,
  reviewUpdate,
} from '../../workflows/task/messages';

const callLog = path.join(os.tmpdir(), `klea-calls-${process.pid}.jsonl`);
const calls = (): Array<{ tool: string; args: Record<string, unknown>; grants: unknown[]; at: string; ms: number }> =>
  existsSync(callLog)
    ? readFileSync(callLog, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

/** A one-step task that read a.txt and answered "alpha": one plan, then its pick in an activity of its own. */
async function expectOwnPickAfterOnePlan(t: TaskDriver, fake: FakeModel) {
  expect(await t.result()).toMatchObject({ status: 'done', answer: 'alpha' });
  expect((await t.scheduledActivities()).map((a) => a.type)).toEqual([
    'writePlan',
    'pickTools',
    'callTool',
    'composeAnswer',
  ]);
  expect(fake.requestsFor('write_plan')).toHaveLength(1);
}

describe('taskWorkflow: the task path', () => {
  let fake: FakeModel;
  let env: TestEnv;
  useFakeModelEnv(
    {
      name: 'task',
      overrides: { mcp: { workspace: { enabled: true, call_log: callLog } } },
      after: () => rmSync(callLog, { force: true }),
    },
    (f, e) => {
      fake = f;
      env = e;
    }
  );

  it('approve path: plan → review → approve → steps → answer labelled unverified', async () => {
    const p = makeProject({ 'notes.md': 'TODO: ship it\n' });
    const thePlan = plan(
      [step('s1', 'Find the TODOs'), step('s2', 'Summarise them', { needs_tool: false, depends_on: ['s1'] })],
      { before_work: true }
    );
    fake.on('write_plan', { call: thePlan });
    fake.on('pick_tools', { calls: [{ name: 'workspace__grep', args: { step_id: 's1', pattern: 'TODO' } }] });
    fake.on('do_step', { content: 'One TODO: ship it.' });
    fake.on('compose_answer', { content: 'There is **one** TODO: ship it.' });

    const t = await TaskDriver.start(env, 'What TODOs are in my notes?', p.dir);
    const review = await t.waitFor('review_requested');
    expect(review).toMatchObject({ reason: 'before_work', plan: thePlan });
    expect((await t.state()).status).toBe('awaiting_review');
    expect(await t.countOf('step_started')).toBe(0);

    await t.handle.signal(reviewSignal, { decision: 'approve' });
    const result = await t.result();
    expect(result).toMatchObject({
      status: 'done',
      answer: 'There is **one** TODO: ship it.',
      verification: 'unverified',
    });

    const types = (await t.events()).map((e) => e.type);
    expect(types).toEqual([
      'context',
      'plan',
      'review_requested',
      'step_started',
      'step_finished',
      'step_started',
      'step_finished',
      'answer',
      'status',
    ]);
    const answer = (await t.events()).find((e) => e.type === 'answer');
    expect(answer).toMatchObject({ verification: 'unverified', label: expect.stringMatching(/unverified/i) });
    const doStep = fake.requestsFor('do_step')[0];
    expect(doStep.text).toContain('notes.md:1: TODO: ship it');
    const state = await t.state();
    expect(state.steps.map((s) => [s.id, s.status])).toEqual([
      ['s1', 'done'],
      ['s2', 'done'],
    ]);
    // The Temporal UI shows what each activity did.
    const acts = await t.scheduledActivities();
    // The pick checks its calls' paths; the project context is read by a local activity.
    expect(acts.map((a) => a.type)).toEqual(['writePlan', 'pickTools', 'callTool', 'doStep', 'composeAnswer']);
    expect(await t.localActivities()).toEqual(['projectContextInfo']);
    const history = await t.handle.fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => Buffer.from(e.userMetadata?.summary?.data ?? []).toString());
    expect(summaries).toContain('"step s1 · workspace__grep \\"TODO\\""');
    expect(summaries).toContain('"plan · first tool picks if no review is due"');
    expect(summaries).toContain('"answer"');
    // The plan asked for a review, so the Planner's activity picked nothing: the pick came after the approval.
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
  });

  it("no review due: the Planner's activity picks the first round's tools, with the prompt the pick would have had", async () => {
    const p = makeProject({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    const steps = [
      step('s1', 'Read a.txt'),
      step('s2', 'Read b.txt'),
      step('s3', 'Compare them', { needs_tool: false, depends_on: ['s1', 's2'] }),
    ];
    const picks = {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's2', path: 'b.txt' } },
      ],
    };
    fake.on('write_plan', { call: plan(steps) });
    fake.on('pick_tools', picks);
    fake.on('do_step', { content: 'alpha, then beta' });
    fake.on('compose_answer', { content: 'a.txt says alpha, b.txt beta.' });
    const t = await TaskDriver.start(env, 'Compare a.txt and b.txt', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'a.txt says alpha, b.txt beta.' });

    // One activity fewer: no pickTools, and the calls, events and results are those of any batch.
    const acts = await t.scheduledActivities();
    expect(acts.map((a) => a.type)).toEqual(['writePlan', 'callTool', 'callTool', 'doStep', 'composeAnswer']);
    expect((await t.events()).map((e) => e.type)).toEqual([
      'context',
      'plan',
      'step_started',
      'step_started',
      'step_finished',
      'step_finished',
      'step_started',
      'step_finished',
      'answer',
      'status',
    ]);
    expect((await t.state()).steps.map((s) => [s.id, s.status, s.result])).toEqual([
      ['s1', 'done', expect.stringContaining('alpha')],
      ['s2', 'done', expect.stringContaining('beta')],
      ['s3', 'done', 'alpha, then beta'],
    ]);
    const [firstPick] = fake.requestsFor('pick_tools');
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
    // Every model call is counted once, the first pick included.
    const { modelCalls } = fake.reportedUsage();
    expect((await t.result()).usage).toMatchObject({ modelCalls, toolCalls: 2 });

    // The same plan, reviewed first: the pick comes in its own activity after the approval, with the same prompt.
    fake.reset();
    fake.on('write_plan', { call: plan(steps, { before_work: true }) });
    fake.on('pick_tools', picks);
    fake.on('do_step', { content: 'alpha, then beta' });
    fake.on('compose_answer', { content: 'a.txt says alpha, b.txt beta.' });
    const reviewed = await TaskDriver.start(env, 'Compare a.txt and b.txt', p.dir);
    await reviewed.waitFor('review_requested');
    expect(fake.requestsFor('pick_tools')).toHaveLength(0);
    await reviewed.handle.signal(reviewSignal, { decision: 'approve' });
    expect((await reviewed.result()).status).toBe('done');
    expect((await reviewed.scheduledActivities()).map((a) => a.type)).toContain('pickTools');
    const asSent = (r: typeof firstPick) => ({ system: r.system, messages: r.messages, tools: r.toolSchemas });
    expect(fake.requestsFor('pick_tools').map(asSent)).toEqual([asSent(firstPick)]);
  });

  it('a first pick that fails leaves the plan standing: the task picks again in an activity of its own', async () => {
    const p = makeProject({ 'a.txt': 'alpha\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]) });
    fake.on(
      'pick_tools',
      { status: 503, message: 'overloaded' },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] }
    );
    fake.on('compose_answer', { content: 'alpha' });
    const t = await TaskDriver.start(env, 'Read a.txt', p.dir);
    // One plan only: the failed pick did not make the Planner's activity write it again.
    await expectOwnPickAfterOnePlan(t, fake);
    expect((await t.events()).filter((e) => e.type === 'plan')).toHaveLength(1);
  });

  it('revise: the feedback reaches the Planner and the revised plan is reviewed again', async () => {
    const p = makeProject({ 'a.txt': 'alpha\n' });
    const first = plan([step('s1', 'Delete everything')], { before_work: true });
    const second = plan([step('s1', 'Read a.txt')], { before_work: false });
    fake.on('write_plan', { call: first }, { call: second });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'a.txt says alpha.' });

    const t = await TaskDriver.start(env, 'Tidy up', p.dir);
    const r1 = await t.waitFor('review_requested');
    await t.handle.signal(reviewSignal, { decision: 'revise', feedback: 'Do not delete anything; just read a.txt.' });
    const r2 = await t.waitFor('review_requested', (e) => e.planHash !== r1.planHash);
    expect(r2).toMatchObject({ reason: 'revised', plan: second });
    expect(await t.countOf('step_started')).toBe(0);

    const revision = fake.requestsFor('write_plan')[1];
    expect(revision.text).toContain('Do not delete anything; just read a.txt.');
    expect(revision.text).toContain('Delete everything');

    await t.handle.signal(reviewSignal, { decision: 'approve', planHash: r2.planHash });
    expect((await t.result()).status).toBe('done');
    expect(readFileSync(path.join(p.dir, 'a.txt'), 'utf8')).toBe('alpha\n');
  });

  it('a stale or duplicate decision changes nothing; the update says why', async () => {
    const p = makeProject({ 'a.txt': 'x' });
    fake.on('write_plan', { call: plan([step('s1', 'Think', { needs_tool: false })], { before_work: true }) });
    fake.on('do_step', { content: 'thought' });
    fake.on('compose_answer', { content: 'done' });
    const t = await TaskDriver.start(env, 'Think', p.dir);
    const r = await t.waitFor('review_requested');

    await t.handle.signal(reviewSignal, { decision: 'approve', planHash: 'not-the-plan' });
    await new Promise((res) => setTimeout(res, 500));
    expect((await t.state()).status).toBe('awaiting_review');
    const err = await t.handle
      .executeUpdate(reviewUpdate, { args: [{ decision: 'approve', planHash: 'stale0' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((err as WorkflowUpdateFailedError).cause?.message)).toMatch(/stale decision/);

    await t.handle.executeUpdate(reviewUpdate, { args: [{ decision: 'approve', planHash: r.planHash }] });
    const again = await t.handle
      .executeUpdate(reviewUpdate, { args: [{ decision: 'revise', feedback: 'too late' }] })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((await t.result()).status).toBe('done');
    expect(fake.requestsFor('write_plan')).toHaveLength(1);
  });

  it('checkpoint: pauses after the named step with its results, before the next one', async () => {
    const p = makeProject({ 'data.txt': '42\n' });
    fake.on('write_plan', {
      call: plan([step('s1', 'Read data.txt'), step('s2', 'Interpret', { needs_tool: false, depends_on: ['s1'] })], {
        after_step_ids: ['s1'],
      }),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'data.txt' } }] });
    fake.on('do_step', { content: 'The answer is 42.' });
    fake.on('compose_answer', { content: '42' });
    const t = await TaskDriver.start(env, 'What is in data.txt?', p.dir);
    const r = await t.waitFor('review_requested');
    expect(r).toMatchObject({
      reason: 'checkpoint',
      afterStepIds: ['s1'],
      results: [{ stepId: 's1', status: 'done', result: '42' }],
    });
    expect(fake.requestsFor('do_step')).toHaveLength(0);
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    expect((await t.result()).status).toBe('done');
  });

  it('policy "always": every plan is reviewed before work even when the Planner does not ask', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Think', { needs_tool: false })]) });
    fake.on('do_step', { content: 'ok' });
    fake.on('compose_answer', { content: 'ok' });
    const t = await TaskDriver.start(env, 'Think', p.dir, { review: 'always' });
    expect(await t.waitFor('review_requested')).toMatchObject({ reason: 'policy' });
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    expect((await t.result()).status).toBe('done');
  });

  it('independent steps with slow tools overlap; calls on one file keep their order and never overlap', async () => {
    const p = makeProject();
    const slow = (tag: string, file: string) =>
      `echo "start ${tag} $(date +%s%N)" >> ${file}; sleep 1; echo "end ${tag} $(date +%s%N)" >> ${file}`;
    fake.on('write_plan', {
      call: plan([step('a', 'slow A'), step('b', 'slow B'), step('c', 'shared 1'), step('d', 'shared 2')]),
    });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__run_command', args: { step_id: 'a', command: slow('a', 'a.log') } },
        { name: 'workspace__run_command', args: { step_id: 'b', command: slow('b', 'b.log') } },
        { name: 'workspace__run_command', args: { step_id: 'c', command: slow('c', './shared.log') } },
        { name: 'workspace__run_command', args: { step_id: 'd', command: slow('d', './shared.log') } },
      ],
    });
    fake.on('compose_answer', { content: 'ran' });
    const t = await TaskDriver.start(env, 'Run them', p.dir);
    expect(await t.result()).toMatchObject({ status: 'done', error: null });

    const times = (file: string) => {
      const out: Record<string, number> = {};
      for (const line of readFileSync(path.join(p.dir, file), 'utf8').trim().split('\n')) {
        const [what, tag, ns] = line.split(' ');
        out[`${what}-${tag}`] = Number(BigInt(ns) / 1_000_000n);
      }
      return out;
    };
    const a = times('a.log');
    const b = times('b.log');
    expect(a['start-a']).toBeLessThan(b['end-b']);
    expect(b['start-b']).toBeLessThan(a['end-a']); // A and B ran at the same time
    const shared = readFileSync(path.join(p.dir, 'shared.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ').slice(0, 2).join(' '));
    expect(shared).toEqual(['start c', 'end c', 'start d', 'end d']); // in the picked order, one after the other
  });

  it('questions → clarify → the answers reach the step prompt; independent steps go on meanwhile', async () => {
    const p = makeProject({ 'x.txt': 'x' });
    fake.on('write_plan', {
      call: plan([
        step('s1', 'Read x.txt'),
        step('s2', 'Write the greeting', { needs_tool: false, questions: ['Whom should I greet?'] }),
      ]),
    });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'x.txt' } }] });
    fake.on('do_step', { content: 'Hello, Ada!' });
    fake.on('compose_answer', { content: 'Hello, Ada!' });
    const t = await TaskDriver.start(env, 'Greet someone', p.dir);
    const q = await t.waitFor('questions');
    expect(q).toMatchObject({ stepId: 's2', questions: ['Whom should I greet?'] });
    await t.waitFor('step_finished', (e) => e.stepId === 's1');
    expect((await t.state()).status).toBe('awaiting_clarification');
    expect((await t.state()).pending).toEqual([
      { kind: 'questions', stepId: 's2', questions: ['Whom should I greet?'] },
    ]);

    await t.handle.signal(clarifySignal, { answers: { 'Whom should I greet?': 'Ada Lovelace' } });
    expect((await t.result()).status).toBe('done');
    const prompt = fake.requestsFor('do_step')[0].text;
    expect(prompt).toContain('Whom should I greet?');
    expect(prompt).toContain('Ada Lovelace');
  });

  it('outside path → deny: the call is never scheduled, the tool never sees it, the run finishes', async () => {
    const p = makeProject({ 'in.txt': 'inside' });
    const canary = path.join(p.outside, 'canary.txt');
    writeFileSync(canary, 'secret canary');
    fake.on('write_plan', { call: plan([step('s1', 'Read the canary'), step('s2', 'Read in.txt')]) });
    fake.on('pick_tools', {
      calls: [
        { name: 'workspace__read_file', args: { step_id: 's1', path: '../outside/canary.txt' } },
        { name: 'workspace__read_file', args: { step_id: 's2', path: 'in.txt' } },
      ],
    });
    fake.on('compose_answer', { content: 'Could not read the canary: access was denied.' });
    const t = await TaskDriver.start(env, 'Read files', p.dir);
    const req = await t.waitFor('permission_requested');
    expect(req).toMatchObject({
      stepId: 's1',
      tool: 'workspace__read_file',
      path: canary,
      op: 'read',
      class: 'outside',
    });
    // The other call of the batch is not held up by the pending decision.
    await t.waitFor('step_finished', (e) => e.stepId === 's2');
    expect((await t.state()).status).toBe('awaiting_permission');

    await t.handle.signal(permissionSignal, { requestId: req.requestId, decision: 'deny' });
    const result = await t.result();
    expect(result.status).toBe('done');
    expect(await t.waitFor('step_finished', (e) => e.stepId === 's1')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(/denied/),
    });
    expect(calls().filter((c) => JSON.stringify(c.args).includes('canary'))).toEqual([]);
    const scheduled = await t.scheduledActivities();
    expect(scheduled.filter((a) => a.type === 'callTool' && a.input.includes('canary'))).toEqual([]);
    expect(scheduled.filter((a) => a.type === 'callTool')).toHaveLength(1);
    expect(readFileSync(canary, 'utf8')).toBe('secret canary');
  });

  it('allow_session: the call runs with a grant, and the same path is not asked again', async () => {
    const p = makeProject();
    const shared = path.join(p.outside, 'shared.txt');
    writeFileSync(shared, 'shared data');
    fake.on('write_plan', { call: plan([step('s1', 'Read it'), step('s2', 'Read it again', { depends_on: ['s1'] })]) });
    fake.on(
      'pick_tools',
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: shared } }] },
      { calls: [{ name: 'workspace__read_file', args: { step_id: 's2', path: '../outside/shared.txt' } }] }
    );
    fake.on('compose_answer', { content: 'shared data' });
    const t = await TaskDriver.start(env, 'Read the shared file twice', p.dir);
    const req = await t.waitFor('permission_requested');
    await t.handle.signal(permissionSignal, { requestId: req.requestId, decision: 'allow_session' });
    const result = await t.result();
    expect(result).toMatchObject({ status: 'done', newGrants: [{ path: shared, op: 'read' }] });
    expect(await t.countOf('permission_requested')).toBe(1);
    const state = await t.state();
    expect(state.steps.map((s) => s.result)).toEqual(['shared data', 'shared data']);
    expect(calls().filter((c) => JSON.stringify(c.args).includes('shared.txt'))).toHaveLength(2);
  });

  it('grants in the input of a task no session started open nothing: the path is asked for', async () => {
    const p = makeProject();
    const file = path.join(p.outside, 'known.txt');
    writeFileSync(file, 'known');
    fake.on('write_plan', { call: plan([step('s1', 'Read it')]) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: file } }] });
    // Started straight from a Temporal client, with a made-up grant for the outside file.
    const t = await TaskDriver.start(env, 'Read', p.dir, { grants: [{ path: file, op: 'read' }] });
    const ignored = await t.waitFor('error', (e) => e.code === 'GrantsIgnored');
    expect(ignored.message).toMatch(/grant\(s\) in the task's input were ignored: only a session hands grants/);
    const req = await t.waitFor('permission_requested');
    expect(req).toMatchObject({ path: file, op: 'read' });
    await t.handle.signal(permissionSignal, { requestId: req.requestId, decision: 'deny' });
    // Its one step was denied: nothing was achieved, and the task says so.
    expect(await t.result()).toMatchObject({ status: 'failed', answer: expect.stringMatching(/denied by the user/) });
    expect(JSON.stringify(await t.events())).not.toContain('"known"');
  });

  it('no suitable tool → replan with the reason → the new plan runs', async () => {
    const p = makeProject();
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Open report.pdf')]) },
      { call: plan([step('s2', 'Explain that PDFs cannot be read here', { needs_tool: false })]) }
    );
    fake.on('pick_tools', {
      calls: [{ name: 'no_suitable_tool', args: { step_id: 's1', reason: 'no tool reads PDF files' } }],
    });
    fake.on('do_step', { content: 'PDFs are not supported.' });
    fake.on('compose_answer', { content: 'I cannot read PDFs here.' });
    const t = await TaskDriver.start(env, 'Summarise report.pdf', p.dir);
    expect((await t.result()).status).toBe('done');
    const replanned = await t.waitFor('replanned');
    expect(replanned.reason).toMatch(/no tool reads PDF files/);
    expect(fake.requestsFor('write_plan')[1].text).toContain('no tool reads PDF files');
  });

  it('a step whose calls all fail is never done: two repair rounds see the error, then the task ends failed', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Edit missing.txt, a file that does not exist')]) });
    // Each round tries something else (a repeated failed edit is read instead: steps-finish.test.ts).
    const bad = (old_string: string) => ({
      calls: [
        {
          name: 'workspace__edit_file',
          args: { step_id: 's1', path: 'missing.txt', old_string, new_string: 'b' },
        },
      ],
    });
    fake.on('pick_tools', bad('a'), bad('c'), bad('d'));
    const t = await TaskDriver.start(env, 'Edit missing.txt', p.dir);
    const result = await t.result();

    expect(result).toMatchObject({
      status: 'failed',
      error: 'no step of the plan achieved its instruction',
      answer: expect.stringMatching(
        /^Not done: "Edit missing.txt"\. No step of the plan achieved its instruction:\n- s1 /
      ),
      notAchieved: [{ stepId: 's1', reason: expect.stringMatching(/^not achieved: every call failed/) }],
    });
    const [finished] = await t.eventsOf('step_finished');
    expect(finished).toMatchObject({ stepId: 's1', status: 'failed', calls: [{}, {}, {}] });
    // The repair rounds saw what was missing; the model was never asked to judge, nor the plan rewritten.
    const picks = fake.requestsFor('pick_tools');
    expect(picks).toHaveLength(3);
    expect(picks[1].text).toContain('Not done yet: every call failed');
    expect(fake.requestsFor('evaluate_step')).toEqual([]);
    expect(fake.requestsFor('compose_answer')).toEqual([]);
    expect((await t.events()).some((e) => e.type === 'replanned')).toBe(false);
    expect((await t.state()).status).toBe('failed');
  });

  it('a forced write under read_only is refused at dispatch and leads to a replan', async () => {
    const p = makeProject({ 'keep.txt': 'original' });
    fake.on(
      'write_plan',
      { call: plan([step('s1', 'Overwrite keep.txt')]) },
      { call: plan([step('s2', 'Explain', { needs_tool: false })]) }
    );
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__write_file', args: { step_id: 's1', path: 'keep.txt', content: 'overwritten' } }],
    });
    fake.on('do_step', { content: 'read-only' });
    fake.on('compose_answer', { content: 'Tool access is read-only.' });
    const t = await TaskDriver.start(env, 'Overwrite keep.txt', p.dir, { toolAccess: 'read_only' });
    expect((await t.result()).status).toBe('done');
    expect(readFileSync(path.join(p.dir, 'keep.txt'), 'utf8')).toBe('original');
    expect(fake.requestsFor('pick_tools')[0].tools).not.toContain('workspace__write_file');
    expect((await t.waitFor('replanned')).reason).toMatch(/read_only/);
  });

  it('a new plan that asks again what the refused step asked is not run: no third plan, and the answer says why', async () => {
    const p = makeProject({ 'keep.txt': 'original' });
    const again = plan([step('s1', 'Overwrite keep.txt')]);
    // At temperature 0 the Planner writes the plan that was refused again.
    fake.on('write_plan', { call: again }, { call: plan([step('s7', 'Overwrite keep.txt')]) });
    const write = { step_id: 's1', path: 'keep.txt', content: 'overwritten' };
    fake.on('pick_tools', { calls: [{ name: 'workspace__write_file', args: write }] });
    const t = await TaskDriver.start(env, 'Overwrite keep.txt', p.dir, { toolAccess: 'read_only' });
    const result = await t.result();

    expect(result.status).toBe('failed');
    expect(fake.requestsFor('write_plan')).toHaveLength(2);
    expect(fake.requestsFor('pick_tools')).toHaveLength(1);
    expect(readFileSync(path.join(p.dir, 'keep.txt'), 'utf8')).toBe('original');
    const why = 'refused by policy: tool access is read_only and workspace__write_file is not a read-only tool';
    expect(result.notAchieved).toEqual([{ stepId: 's1', title: 'Step s1', reason: why }]);
    expect(result.answer).toContain(why);
    expect(result.answer).not.toContain('refused by policy: refused by policy');
    expect((await t.events()).filter((e) => e.type === 'error').map((e) => e.code)).toEqual([
      'PlanRepeated',
      'NothingAchieved',
    ]);
  });

  it('malformed planner output that cannot be repaired is re-asked, then the task fails with a clear error', async () => {
    const p = makeProject();
    fake.on(
      'write_plan',
      { call: '{"goal": "x", "steps": [' },
      { call: { goal: 'x', steps: [] } },
      // Two steps with one id: which one a dependency means is ambiguous, so it is not repaired.
      { call: plan([step('a', 'x'), step('a', 'y')]) }
    );
    const t = await TaskDriver.start(env, 'Do it', p.dir);
    const result = await t.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/write_plan was invalid after 3 attempts/);
    const err = await t.events().then((es) => es.find((e) => e.type === 'error'));
    expect(err).toMatchObject({ message: expect.stringMatching(/step id "a" is used more than once: give each step/) });
    expect(fake.requestsFor('write_plan')[2].text).toMatch(/steps/);
  });

  it('cancel while waiting for review ends the task as cancelled', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'x', { needs_tool: false })], { before_work: true }) });
    const t = await TaskDriver.start(env, 'Do it', p.dir);
    await t.waitFor('review_requested');
    await t.handle.signal(cancelSignal, { reason: 'changed my mind' });
    expect(await t.result()).toMatchObject({ status: 'cancelled', error: 'changed my mind' });
    expect((await t.events()).at(-1)).toMatchObject({ type: 'status', status: 'cancelled' });
  });

  it('cancel mid-run stops the in-flight work', async () => {
    const p = makeProject();
    fake.on('write_plan', { call: plan([step('s1', 'Sleep')]) });
    fake.on('pick_tools', {
      calls: [{ name: 'workspace__run_command', args: { step_id: 's1', command: 'sleep 30; touch ./woke-up' } }],
    });
    const t = await TaskDriver.start(env, 'Sleep', p.dir);
    await t.waitFor('step_started');
    await new Promise((r) => setTimeout(r, 1000));
    const started = Date.now();
    await t.handle.signal(cancelSignal, {});
    expect((await t.result()).status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await t.countOf('answer')).toBe(0);
    // The command itself was stopped: its audit line shows it ended long before its 30 s.
    const line = await (async () => {
      for (let i = 0; i < 100; i++) {
        const hit = calls().find((c) => String(c.args.command).includes('woke-up'));
        if (hit) return hit;
        await new Promise((r) => setTimeout(r, 100));
      }
      return undefined;
    })();
    expect(line?.ms).toBeLessThan(10_000);
    expect(existsSync(path.join(p.dir, 'woke-up'))).toBe(false);
  });

  it('cancel while the model writes the plan aborts its request: the model server stops working for nobody', async () => {
    const p = makeProject();
    // A local server answers one request at a time: a request left running holds up the next task's for minutes.
    fake.on('write_plan', { call: plan([step('s1', 'Never')]), delayMs: 60_000 });
    const t = await TaskDriver.start(env, 'Plan slowly', p.dir);
    for (let i = 0; i < 200 && !fake.requestsFor('write_plan').length; i++) await new Promise((r) => setTimeout(r, 50));
    expect(fake.requestsFor('write_plan')).toHaveLength(1);
    const asked = Date.now();
    await t.handle.signal(cancelSignal, {});
    expect((await t.result()).status).toBe('cancelled');
    const [request] = fake.requestsFor('write_plan');
    for (let i = 0; i < 300 && !request.aborted; i++) await new Promise((r) => setTimeout(r, 50));
    expect(request.aborted).toBe(true);
    // By the cancellation (at the activity's next heartbeat), not by the client's own timeout (10 s here).
    expect(Date.now() - asked).toBeLessThan(8000);
  });

  it('survives a worker restart while waiting for review; the approval then completes the task', async () => {
    const p = makeProject({ 'r.txt': 'restart-proof' });
    fake.on('write_plan', { call: plan([step('s1', 'Read r.txt')], { before_work: true }) });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'r.txt' } }] });
    fake.on('compose_answer', { content: 'restart-proof' });
    const t = await TaskDriver.start(env, 'Read r.txt', p.dir);
    await t.waitFor('review_requested');
    await env.stopWorker();
    await env.restartWorker();
    await t.handle.signal(reviewSignal, { decision: 'approve' });
    expect(await t.result()).toMatchObject({ status: 'done', answer: 'restart-proof' });
    expect((await t.state()).steps[0].result).toBe('restart-proof');
  });
});

describe("taskWorkflow: the Planner's activity and its time limit", () => {
  let fake: FakeModel;
  let env: TestEnv;
  // A model request may take almost the whole of a model activity's 3 minutes: a plan that took more than the
  // half second left over cannot be followed by a pick in the same attempt.
  useFakeModelEnv({ name: 'slow-plan', overrides: { model: { timeout_ms: 179_500 } } }, (f, e) => {
    fake = f;
    env = e;
  });

  it('a plan that used up the time a pick may need goes back alone; the pick is an activity of its own', async () => {
    const p = makeProject({ 'a.txt': 'alpha\n' });
    fake.on('write_plan', { call: plan([step('s1', 'Read a.txt')]), delayMs: 800 });
    fake.on('pick_tools', { calls: [{ name: 'workspace__read_file', args: { step_id: 's1', path: 'a.txt' } }] });
    fake.on('compose_answer', { content: 'alpha' });
    const t = await TaskDriver.start(env, 'Read a.txt', p.dir);
    await expectOwnPickAfterOnePlan(t, fake);
  });
});
