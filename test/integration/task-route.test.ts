import { WorkflowFailedError } from '@temporalio/client';
import type { KleaEvent } from '../../common/events';
import type { TaskInput, TaskResult } from '../../common/task';
import { FakeModel } from '../support/fake-model';
import type { taskWorkflow } from '../../workflows';
import { eventsQuery } from '../../workflows/task/messages';
import { startTestEnv, uniqueId, type TestEnv } from '../support/harness';

describe('taskWorkflow: the first durable path (route_request through the model)', () => {
  let fake: FakeModel;
  let env: TestEnv;

  beforeAll(async () => {
    fake = await FakeModel.start();
    env = await startTestEnv({ fakeModel: fake, name: 'route' });
  });
  afterEach(() => {
    fake.assertDone();
    fake.reset();
  });
  afterAll(async () => {
    await env?.shutdown();
    await fake?.close();
  });

  const input = (prompt: string, extra: Partial<TaskInput> = {}): TaskInput => {
    const sessionId = uniqueId('s');
    return {
      taskId: `task-${sessionId}-1`,
      sessionId,
      prompt,
      projectDir: '/tmp',
      mode: 'general',
      toolAccess: 'full',
      ...extra,
    };
  };

  async function run(i: TaskInput): Promise<{ result: TaskResult; events: KleaEvent[] }> {
    const handle = await env.client.workflow.start<typeof taskWorkflow>('taskWorkflow', {
      taskQueue: env.taskQueue,
      workflowId: i.taskId,
      args: [i],
    });
    const result = await handle.result();
    const events = await handle.query(eventsQuery, { after: 0 });
    return { result, events };
  }

  it('answers a chat request with the model reply, labelled unverified', async () => {
    // Arrange
    fake.on('route_request', { call: { route: 'chat', reply: 'Hello! How can I help?' } });
    // Act
    const { result, events } = await run(input('hi there'));
    // Assert
    expect(result).toMatchObject({ status: 'done', answer: 'Hello! How can I help?', verification: 'unverified' });
    expect(events.map((e) => e.type)).toEqual(['context', 'answer', 'status']);
    expect(events[0]).toMatchObject({ type: 'context', mode: 'general', toolAccess: 'full' });
    expect(events[1]).toMatchObject({ type: 'answer', verification: 'unverified' });
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    const [req] = fake.requestsFor('route_request');
    expect(req.system.split('\n')[0]).toBe('# klea:route_request');
    expect(req.forcedFunction).toBe('route_request');
    expect(req.tools).toEqual(['route_request']);
    expect(req.text).toContain('hi there');
  });

  it('re-asks the model with the validation error when its output is malformed, then succeeds', async () => {
    fake.on(
      'route_request',
      { call: '{"route": "chat", "reply": ' }, // not JSON
      { call: { route: 'chat', reply: null } }, // fails the schema: chat needs a reply
      { call: { route: 'chat', reply: 'Third time lucky.' } }
    );
    const { result } = await run(input('hello'));
    expect(result.answer).toBe('Third time lucky.');
    const reqs = fake.requestsFor('route_request');
    expect(reqs).toHaveLength(3);
    expect(reqs[1].text).toContain('not valid JSON');
    expect(reqs[2].text).toContain('reply must be a non-empty string');
  });

  it('fails the task with a clear error event after the re-asks are used up', async () => {
    fake.on('route_request', { call: { route: 'maybe' } }, { call: { route: 'maybe' } }, { call: { route: 'maybe' } });
    const { result, events } = await run(input('hello'));
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/route_request was invalid after 3 attempts/);
    expect(events.filter((e) => e.type === 'error')).toEqual([
      expect.objectContaining({
        code: 'ModelOutputInvalid',
        message: expect.stringMatching(/route_request was invalid/),
      }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'status', status: 'failed' });
  });

  it('rides out HTTP 429 and 500 from the model with Temporal retries', async () => {
    fake.on('route_request', { status: 429 }, { status: 500 }, { call: { route: 'chat', reply: 'Made it.' } });
    const { result } = await run(input('hello'));
    expect(result).toMatchObject({ status: 'done', answer: 'Made it.' });
    expect(fake.requestsFor('route_request')).toHaveLength(3);
  });

  it('declines scientific mode with an explanation instead of an ungrounded answer', async () => {
    const { result, events } = await run(input('What is the half-life of tritium?', { mode: 'scientific' }));
    expect(result.status).toBe('done');
    expect(result.answer).toMatch(/Scientific mode cannot run yet/);
    expect(events[0]).toMatchObject({ type: 'context', requestedMode: 'scientific' });
    expect((events[0] as { modeNote: string }).modeNote).toMatch(/no such source/);
    expect(fake.requests).toHaveLength(0);
  });

  it('mirrors the status into the KleaStatus search attribute', async () => {
    fake.on('route_request', { call: { route: 'chat', reply: 'ok' } });
    const i = input('ping');
    await run(i);
    const desc = await env.client.workflow.getHandle(i.taskId).describe();
    expect(desc.typedSearchAttributes.getAll().find((p) => p.key.name === 'KleaStatus')?.value).toBe('done');
    expect(desc.typedSearchAttributes.getAll().find((p) => p.key.name === 'KleaMode')?.value).toBe('general');
  });

  it('rejects invalid input with a non-retryable failure naming the field', async () => {
    const bad = { ...input('x'), prompt: '' };
    const err = await run(bad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(String((err as WorkflowFailedError).cause?.message)).toMatch(/prompt/);
  });
});
