/**
 * Model failures leave the activity typed, so a task's `error` event and the API can tell an endpoint that is
 * down from one that refused the request: ModelUnavailable (retried), ModelServerError (retried) and
 * ModelRequestRefused (not retried).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { createModelClient } from '../../activities/llm/model';
import { resolveConfig } from '../../common/config-resolve';
import { findFreePort } from '../../runtime/ports';
import { FakeModel } from '../support/fake-model';

const prompt = { node: 'do_step' as const, system: 'Do the step.', messages: ['step'] };
const clientFor = (baseUrl: string, timeoutMs = 5000) =>
  createModelClient(resolveConfig({ model: { base_url: baseUrl, api_key: 'k', timeout_ms: timeoutMs } }, {}));

async function failureOf(run: () => Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('model errors', () => {
  let fake: FakeModel;
  beforeAll(async () => {
    fake = await FakeModel.start();
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  it('connection refused: ModelUnavailable, left to Temporal to retry', async () => {
    const port = await findFreePort();
    const f = await failureOf(() => clientFor(`http://127.0.0.1:${port}/v1`).text(prompt));
    expect(f).toMatchObject({ type: 'ModelUnavailable', nonRetryable: false });
    expect(f.message).toMatch(/model endpoint unavailable for do_step/);
  });

  it('no answer within the timeout: ModelUnavailable', async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
      expect(await failureOf(() => clientFor(url, 300).text(prompt))).toMatchObject({ type: 'ModelUnavailable' });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it.each([
    [503, 'ModelUnavailable', false],
    [429, 'ModelUnavailable', false],
    [500, 'ModelServerError', false],
    [400, 'ModelRequestRefused', true],
    [404, 'ModelRequestRefused', true],
  ])('HTTP %i: %s (non-retryable: %s)', async (status, type, nonRetryable) => {
    fake.on('do_step', { status, message: `injected ${status}` });
    const f = await failureOf(() => clientFor(fake.url).text(prompt));
    expect(f).toMatchObject({ type, nonRetryable });
    expect(f.message).toContain(`(HTTP ${status})`);
    expect(f.message).toContain(`injected ${status}`);
  });
});
