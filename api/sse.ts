/**
 * Server-sent events from a workflow's event feed (event-feed.ts): each event is sent with `id: <seq>`, so a
 * reconnecting client (EventSource sends Last-Event-ID) resumes after the last event it saw, with no gap and no
 * duplicate. The stream ends once the feed has finished (a task's final `status` event, or the run closed) and
 * everything it holds was sent. Heartbeat comments keep proxies from closing an idle stream.
 */
import { streamOpened } from './observe';
import type { Request, Response } from 'express';
import type { EventFeed } from './event-feed';

export interface SseOptions {
  feed: EventFeed;
  /** Send events with seq greater than this. */
  after: number;
  heartbeatMs?: number;
}

export function lastEventId(req: Request): number | undefined {
  const raw = req.get('last-event-id');
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export function streamEvents(req: Request, res: Response, opts: SseOptions): Promise<void> {
  const { feed } = opts;
  res.status(200).set({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  res.write('retry: 2000\n\n');
  let after = opts.after;
  const streamClosed = streamOpened(res);
  let lastWrite = Date.now();
  const heartbeatMs = opts.heartbeatMs ?? 15_000;

  return new Promise<void>((resolve) => {
    let unsubscribe = () => {};
    const heartbeat = setInterval(
      () => {
        if (Date.now() - lastWrite < heartbeatMs) return;
        res.write(': heartbeat\n\n');
        lastWrite = Date.now();
      },
      Math.min(heartbeatMs, 5_000)
    );
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      clearInterval(heartbeat);
      unsubscribe();
      streamClosed();
      res.end();
      resolve();
    };
    const send = () => {
      if (!open) return;
      for (const e of feed.since(after)) {
        res.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
        after = e.seq;
        lastWrite = Date.now();
      }
      if (feed.finished) close();
    };
    req.on('close', close);
    unsubscribe = feed.subscribe({
      changed: send,
      failed: (err) => {
        if (!open) return;
        res.write(`event: stream_error\ndata: ${JSON.stringify({ message: (err as Error).message })}\n\n`);
        close();
      },
    });
    send();
  });
}
