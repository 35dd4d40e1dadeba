/**
 * A decision that arrives in the very workflow task that closes the task (a `cancel`, then at once a review) is
 * dropped by the server when a new event lands during that workflow task: it refuses to close the workflow
 * (UnhandledCommand) and aborts the updates that task carried with FAILED_PRECONDITION "unexpected workflow task
 * failure". The API must not answer that with a 500: it sends the decision again (same update id) and answers with
 * what the task now is.
 *
 * The race is made deterministic by driving the workflow tasks by hand over Temporal's own gRPC API (a worker
 * written out step by step): the test decides exactly when the signal lands and when each task completes.
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createApp } from '../../api/app';
import { cancelSignal } from '../../workflows/task/messages';
import { temporalAddress, testConfig } from '../support/harness';

const { CommandType } = temporal.api.enums.v1;
type PollResponse = temporal.api.workflowservice.v1.IPollWorkflowTaskQueueResponse;

describe('a decision dropped with a failed workflow task', () => {
  let connection: Connection;
  let client: Client;
  const namespace = 'default';
  const identity = 'hand-driven-worker';

  beforeAll(async () => {
    connection = await Connection.connect({ address: temporalAddress() });
    client = new Client({ connection, namespace });
  });
  afterAll(async () => {
    await connection.close();
  });

  /** A task workflow no Klea worker runs: its workflow tasks come to the test. */
  async function handDriven() {
    const taskQueue = `hand-${randomUUID().slice(0, 8)}`;
    const workflowId = `task-s-${randomUUID().slice(0, 8).replace(/-/g, '')}-1`;
    const svc = connection.workflowService;
    // Temporal wants a deadline on every call; the tasks this test waits for are due within moments.
    const rpc = <T>(fn: () => Promise<T>) => connection.withDeadline(Date.now() + 20_000, fn);
    const app = createApp({ client, config: testConfig({ taskQueue }) });
    await client.workflow.start('taskWorkflow', { taskQueue, workflowId, args: [] });

    const poll = async (): Promise<PollResponse> => {
      for (;;) {
        const res = await rpc(() => svc.pollWorkflowTaskQueue({ namespace, identity, taskQueue: { name: taskQueue } }));
        if (res.taskToken?.length) return res;
      }
    };
    /** Polls until a workflow task carries the update (a task without one is completed with no commands). */
    const pollUpdate = async (): Promise<PollResponse> => {
      for (;;) {
        const wft = await poll();
        if (wft.messages?.length) return wft;
        await rpc(() =>
          svc.respondWorkflowTaskCompleted({ namespace, identity, taskToken: wft.taskToken, commands: [] })
        );
      }
    };
    /** Completes the workflow while a signal sent meanwhile waits: the server fails this workflow task. */
    const closeWhileSignalled = async (wft: PollResponse) => {
      await client.workflow.getHandle(workflowId).signal(cancelSignal, { reason: 'meanwhile' });
      const complete = rpc(() =>
        svc.respondWorkflowTaskCompleted({
          namespace,
          identity,
          taskToken: wft.taskToken,
          commands: [
            {
              commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
              completeWorkflowExecutionCommandAttributes: {},
            },
          ],
        })
      );
      await expect(complete).rejects.toThrow(/UnhandledCommand/);
    };

    // The first workflow task: the workflow is running and waits.
    const first = await poll();
    await rpc(() =>
      svc.respondWorkflowTaskCompleted({ namespace, identity, taskToken: first.taskToken, commands: [] })
    );
    // Sent at once (a supertest request only goes out when it is awaited).
    const review = () =>
      request(app)
        .post(`/tasks/${workflowId}/review`)
        .send({ decision: 'approve' })
        .then((r) => r);
    return { workflowId, pollUpdate, closeWhileSignalled, review };
  }

  test('the decision is sent again and the caller hears how the task ended (409), not 500', async () => {
    const t = await handDriven();
    const answer = t.review();
    const carried = await t.pollUpdate();
    await t.closeWhileSignalled(carried);

    // Sent again with the same update id: it reaches the workflow once more.
    const again = await t.pollUpdate();
    const id = (m: PollResponse) => m.messages?.[0]?.protocolInstanceId;
    expect(id(again)).toBe(id(carried));
    await client.workflow.getHandle(t.workflowId).terminate('the test ends it');

    const res = await answer;
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 409, code: 'conflict' });
    expect(res.body.error.message).toMatch(/was terminated \(status terminated\)/);
  });

  test('when every attempt is dropped the caller hears 503 not_applied with Retry-After', async () => {
    const t = await handDriven();
    const answer = t.review();
    for (let attempt = 1; attempt <= 4; attempt++) await t.closeWhileSignalled(await t.pollUpdate());

    const res = await answer;
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 503, code: 'not_applied' });
    expect(res.body.error.message).toMatch(/decision was not applied.*try again/);
    expect(res.headers['retry-after']).toBeDefined();
    await client.workflow.getHandle(t.workflowId).terminate('the test ends it');
  });
});
