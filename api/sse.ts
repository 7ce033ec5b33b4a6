import { metrics } from '../src/metrics.js';
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import { blockingReader, type BlockingReader, type Redis } from '../src/redis.js';
import { validationError } from '../src/errors.js';
import { compareIds, CURSOR_RE, isTerminal, type StreamEntry, type Streams } from '../src/streams.js';

export interface SseOptions {
  streams: Streams;
  redis: Redis;
  key: string;
  /** Resume point: only entries after it are sent. */
  after?: string;
  /** The replay after `after`, already requested by the route (while it checked access). */
  backlog?: Promise<StreamEntry[]>;
  /** End the response after a terminal entry (job streams). */
  endOnTerminal: boolean;
  /** Checked before blocking: when it says the stream is finished and nothing is pending, end. */
  isFinished?: () => Promise<boolean>;
  pingMs?: number;
}

/** Validates a resume cursor from `after` or Last-Event-ID (docs/streams.md, rule 5). */
export function resumeCursor(ctx: Context, after: string | undefined): string | undefined {
  const c = after ?? (ctx.get('last-event-id') || undefined);
  if (c !== undefined && !CURSOR_RE.test(c))
    throw validationError('after: must be a stream cursor like 1731000000000-0');
  return c;
}

/**
 * A job stream with nothing after the cursor once the job has ended (resumed after its terminal
 * entry, or opened without a cursor on a stream that expired): nothing will ever follow, so the
 * route answers 204 No Content instead of a stream. That is what makes a standard EventSource
 * (the WHATWG client in browsers and the `eventsource` package) stop: after the terminal entry the
 * server closes, the client reconnects with Last-Event-ID, and a 204 ends its reconnecting.
 *
 * The stream itself says it has ended when the cursor is its terminal entry: that holds even in the
 * moment after the terminal entry is written and before the job record shows the end (docs/streams.md,
 * rule 4), when a client that read the terminal entry reconnects at once. Otherwise the job record
 * decides. A cursor newer than the stream's newest entry is left to the stream (`stream_reset`, then
 * the stream anew), unless the stream is gone and the job has ended: then nothing is left to send.
 */
export async function endedAfter(
  streams: Streams,
  key: string,
  after: string | undefined,
  backlog: Promise<StreamEntry[]>,
  isFinished: () => Promise<boolean>,
): Promise<boolean> {
  if ((await backlog).length > 0) return false;
  if (after !== undefined) {
    const newest = await streams.newest(key);
    if (newest && newest.id === after && isTerminal(newest)) return true;
    if (newest && compareIds(newest.id, after) < 0) return false;
  }
  return isFinished();
}

/**
 * Serves one Redis stream as SSE (the one SSE server of the API): replay with XRANGE after the cursor, then
 * block on XREAD on a dedicated connection, `: ping` keepalives, and clean close when the
 * client goes away (disconnect() unblocks XREAD at once).
 */
export function sseStream(ctx: Context, opts: SseOptions): PassThrough {
  const out = new PassThrough();
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  // The blocking reader's own connection is made only once the replay is sent: a stream whose
  // entries are already there (a reader arriving after the first token) never waits for a connect.
  let reader: BlockingReader | undefined;
  let closed = false;
  metrics.sseOpen.inc();
  const close = () => {
    if (closed) return;
    closed = true;
    metrics.sseOpen.dec();
    reader?.disconnect();
    out.end();
  };
  ctx.req.on('close', close);
  out.on('close', close);
  let last = opts.after ?? '0-0';
  const send = (e: StreamEntry) => {
    out.write(`id: ${e.id}\ndata: ${JSON.stringify(e.data)}\n\n`);
    last = e.id;
  };
  const pump = async () => {
    out.write(': connected\n\n');
    let backlog = await (opts.backlog ?? opts.streams.range(opts.key, opts.after));
    if (opts.after && backlog.length === 0) {
      // A cursor newer than the stream's newest entry: the stream went backwards (Redis came back
      // without its newest entries, or the stream was deleted and written again). Waiting after the
      // cursor could wait forever: say so (docs/streams.md, stream_reset) and send the stream anew.
      const newest = await opts.streams.newest(opts.key);
      if (!newest || compareIds(newest.id, opts.after) < 0) {
        out.write(
          `data: ${JSON.stringify({ type: 'stream_reset', after: opts.after, newest: newest?.id ?? null })}\n\n`,
        );
        last = '0-0';
        backlog = await opts.streams.range(opts.key);
      }
    }
    while (backlog.length > 0 && !closed) {
      for (const e of backlog) {
        send(e);
        if (opts.endOnTerminal && isTerminal(e)) return close();
      }
      backlog = backlog.length >= 1000 ? await opts.streams.range(opts.key, last) : [];
    }
    if (closed) return;
    reader = blockingReader(opts.redis, opts.key);
    while (!closed) {
      const entries = await opts.streams.read(reader, opts.key, last, opts.pingMs ?? 15_000);
      if (closed) return;
      if (!entries) {
        if (opts.isFinished && (await opts.isFinished())) {
          const rest = await opts.streams.range(opts.key, last);
          rest.forEach(send);
          return close();
        }
        out.write(': ping\n\n');
        continue;
      }
      for (const e of entries) {
        send(e);
        if (opts.endOnTerminal && isTerminal(e)) return close();
      }
    }
  };
  pump().catch(() => close());
  return out;
}
