/**
 * A test's client connection to Temporal that can be closed without a stray retry throwing afterwards.
 *
 * The client retries a call Temporal answered UNAVAILABLE (an update the server aborted, a busy server) from a timer
 * of its own, even after the caller gave up; a retry that starts after the connection closed throws outside any
 * test ("Channel has been shut down"). Here a retry waits at most RETRY_MAX_MS, none is scheduled once closing
 * has begun, and `close` first lets every retry already scheduled start on the open connection.
 */
import { Connection, defaultGrpcRetryOptions, isRetryableError, makeGrpcRetryInterceptor } from '@temporalio/client';

const RETRY_MAX_MS = 1000;

export async function connectClient(address: string): Promise<{ connection: Connection; close(): Promise<void> }> {
  let closing = false;
  const backoff = defaultGrpcRetryOptions();
  const connection = await Connection.connect({
    address,
    interceptors: [
      makeGrpcRetryInterceptor({
        delayFunction: (attempt, status) => Math.min(RETRY_MAX_MS, backoff.delayFunction(attempt, status)),
        retryableDecider: (attempt, status) => !closing && attempt < 10 && isRetryableError(status),
      }),
    ],
  });
  return {
    connection,
    async close() {
      closing = true;
      await new Promise((r) => setTimeout(r, RETRY_MAX_MS + 100));
      await connection.close();
    },
  };
}
