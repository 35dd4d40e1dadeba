/**
 * Server-sent events over a workflow's `events` query: each event is sent with `id: <seq>`, so a reconnecting
 * client (EventSource sends Last-Event-ID) resumes after the last event it saw, with no gap and no duplicate.
 * Heartbeat comments keep proxies from closing an idle stream.
 */
import { streamOpened } from './observe';
import type { Request, Response } from 'express';

export interface SseOptions {
  /** Returns events with seq > after. */
  fetch: (after: number) => Promise<Array<{ seq: number }>>;
  after: number;
  pollMs?: number;
  heartbeatMs?: number;
  /** True when the stream can end after sending what it has (the run is over). */
  finished?: (events: Array<{ seq: number; type?: string }>) => boolean;
}

export function lastEventId(req: Request): number | undefined {
  const raw = req.get('last-event-id');
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export async function streamEvents(req: Request, res: Response, opts: SseOptions): Promise<void> {
  res.status(200).set({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  res.write('retry: 2000\n\n');
  let after = opts.after;
  let open = true;
  const closed = streamOpened(res);
  req.on('close', () => {
    open = false;
    closed();
  });
  let lastWrite = Date.now();
  const pollMs = opts.pollMs ?? 400;
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  while (open) {
    try {
      const events = await opts.fetch(after);
      for (const e of events) {
        if (e.seq <= after) continue;
        res.write(`id: ${e.seq}\nevent: ${(e as { type?: string }).type ?? 'message'}\ndata: ${JSON.stringify(e)}\n\n`);
        after = e.seq;
        lastWrite = Date.now();
      }
      if (opts.finished?.(events)) break;
    } catch (err) {
      res.write(`event: stream_error\ndata: ${JSON.stringify({ message: (err as Error).message })}\n\n`);
      break;
    }
    if (Date.now() - lastWrite >= heartbeatMs) {
      res.write(': heartbeat\n\n');
      lastWrite = Date.now();
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  closed();
  res.end();
}
