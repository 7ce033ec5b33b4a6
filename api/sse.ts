import { metrics } from '../src/kernel/metrics.js';
import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import { unavailable, validationError, workspaceShareExceeded } from '../src/kernel/errors.js';
import { shareOf } from '../src/kernel/limits.js';
import { compareIds, CURSOR_RE, isTerminal, type StreamEntry, type Streams } from '../src/kernel/streams.js';

export interface SseOptions {
  streams: Streams;
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
 * The SSE streams this API process holds open: at most `max` in all (503 past it) and at most
 * `sharePercent` of them per tenant (a workspace; anonymous callers by address; 429 past it), so
 * one workspace's readers cannot take every stream (docs/operations.md, "Fair share").
 */
export function createSseGate(o: { max: number; sharePercent: number }) {
  let open = 0;
  const perTenant = new Map<string, number>();
  const tenantMax = shareOf(o.max, o.sharePercent);
  return {
    /** Takes a stream for `tenant`: its release (once), or throws the refusal before anything is written. */
    enter(tenant: string): () => void {
      if (open >= o.max) throw unavailable('Too many open streams on this server; retry shortly', 5);
      const held = perTenant.get(tenant) ?? 0;
      if (held >= tenantMax)
        throw workspaceShareExceeded(
          `This workspace holds ${tenantMax} open streams on this server, its share; close one or retry later`,
          5,
        );
      open++;
      perTenant.set(tenant, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        open--;
        const n = (perTenant.get(tenant) ?? 1) - 1;
        if (n > 0) perTenant.set(tenant, n);
        else perTenant.delete(tenant);
      };
    },
    load: () => ({ open, tenants: perTenant.size }),
  };
}
export type SseGate = ReturnType<typeof createSseGate>;

/** The gate and tenant of a request (set by the route handler, api/route.ts); openSse takes its stream from them. */
interface SseAdmission {
  gate: SseGate;
  tenant: string;
}
export const setSseAdmission = (ctx: Context, a: SseAdmission): void => {
  ctx.state.sseAdmission = a;
};

/** An open SSE response (`openSse`). */
export interface SseResponse {
  /** The response body. */
  out: PassThrough;
  /** Aborts once the response is closed: the client went away, or `close` was called. */
  signal: AbortSignal;
  /** Writes one frame (`data: …\n\n`, `: ping\n\n`) unless the response is closed. */
  write(frame: string): void;
  /** Ends the response (once; `onClose` runs then). */
  close(): void;
}

/**
 * Opens an SSE response (the one place its headers are set): no socket timeout, no Nagle delay, no
 * proxy buffering, and a body that closes when the client goes away. Every SSE response of the API
 * (`sseStream`, the OpenAI-compatible streaming completion) is opened here.
 */
export function openSse(ctx: Context, onClose?: () => void): SseResponse {
  // The stream's place in its workspace's share, taken before anything is written (a refusal is a plain 429/503).
  const admission = ctx.state.sseAdmission as SseAdmission | undefined;
  const leave = admission?.gate.enter(admission.tenant);
  const out = new PassThrough();
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  const ctl = new AbortController();
  const close = () => {
    if (ctl.signal.aborted) return;
    ctl.abort();
    leave?.();
    onClose?.();
    out.end();
  };
  ctx.req.on('close', close);
  out.on('close', close);
  return {
    out,
    signal: ctl.signal,
    write: (frame) => {
      if (!ctl.signal.aborted) out.write(frame);
    },
    close,
  };
}

/**
 * Serves one Redis stream as SSE (the one SSE server of the API) over the stream follower
 * (`Streams.follow`: replay after the cursor, then blocking reads on a dedicated connection):
 * `id:`/`data:` frames, `stream_reset`, `: ping` keepalives, and clean close when the client goes
 * away (the abort closes the blocking connection at once).
 */
export function sseStream(ctx: Context, opts: SseOptions): PassThrough {
  metrics.sseOpen.inc();
  const { out, signal, write, close } = openSse(ctx, () => metrics.sseOpen.dec());
  const pump = async () => {
    write(': connected\n\n');
    await opts.streams.follow(opts.key, {
      after: opts.after,
      backlog: opts.backlog,
      endOnTerminal: opts.endOnTerminal,
      blockMs: opts.pingMs ?? 15_000,
      signal,
      onStreamReset: (after, newest) => write(`data: ${JSON.stringify({ type: 'stream_reset', after, newest })}\n\n`),
      onEntry: (e) => write(`id: ${e.id}\ndata: ${JSON.stringify(e.data)}\n\n`),
      onIdle: async () => {
        if (opts.isFinished && (await opts.isFinished())) return 'finished';
        write(': ping\n\n');
        return 'wait';
      },
    });
    close();
  };
  pump().catch(() => close());
  return out;
}
