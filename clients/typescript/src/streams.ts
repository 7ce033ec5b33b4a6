import { createParser } from 'eventsource-parser';

/*
 * Job and trace streams (docs/streams.md) for clients: one SSE reader that resumes after a cut from
 * the last entry id (sent as `after` and `Last-Event-ID`), and the reset rule for job replies.
 */

/** One stream entry: its cursor (the Redis entry id; empty for a `stream_reset`, which has none) and its JSON payload. */
export interface StreamEntry<T extends { type: string } = JobStreamData> {
  id: string;
  data: T;
}

/** The payload of a job stream entry (docs/streams.md); unknown types may appear and are passed on. */
export type JobStreamData =
  | { type: 'status'; status: string }
  | { type: 'token'; turn: number; attempt: number; index: number; text: string }
  | { type: 'reset'; turn: number; attempt: number }
  | { type: 'complete'; result: unknown }
  | { type: 'error'; error: 'failed' | 'cancelled'; message: string }
  | { type: 'stream_reset'; after: string; newest: string | null }
  | { type: string; [field: string]: unknown };

/** A trace event (`engram.created`, `trace.updated`, `run.*`); a trace stream has no terminal entry. */
export type TraceEventData = { type: string; [field: string]: unknown };

/** A refused request: the API's `{ message, code }` and the HTTP status. */
export class CortexApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CortexApiError';
  }
}

/** Reads an error response into a CortexApiError (the body is `{ message, code }` for every API error). */
export async function apiError(res: Response): Promise<CortexApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { message?: unknown; code?: unknown };
    if (typeof body.message === 'string')
      return new CortexApiError(res.status, typeof body.code === 'string' ? body.code : 'UNKNOWN', body.message);
  } catch {
    // not JSON
  }
  return new CortexApiError(res.status, 'UNKNOWN', text.slice(0, 200) || `HTTP ${res.status}`);
}

export const isTerminal = (data: { type: string }): boolean => data.type === 'complete' || data.type === 'error';

export interface StreamOptions {
  /** Resume after this cursor (the id of the last entry already processed). */
  after?: string;
  signal?: AbortSignal;
  /** Reconnects after a cut without any new entry in between before giving up (default 5). */
  maxRetries?: number;
  /** First reconnect delay, doubled per retry without progress, capped at 5 s (default 250 ms). */
  retryDelayMs?: number;
  /** Called on every (re)connection with the cursor it resumes from (tests and progress UIs). */
  onConnect?: (after: string | undefined) => void;
}

export interface StreamTransport {
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/**
 * Follows one SSE stream: yields every entry once, in order (a `stream_reset`, with an empty id, says
 * the stream went backwards: drop what was shown, the whole stream follows); after a dropped connection it reconnects
 * with the last entry id, so nothing is lost or repeated. With `endOnTerminal` (job streams) it stops
 * after `complete` or `error`. A 4xx other than 429 is thrown as CortexApiError; a 429, a 5xx and a
 * network failure are retried (Retry-After is honoured). A 204 (a finished job resumed after its end) ends it.
 */
export async function* followStream<T extends { type: string }>(
  transport: StreamTransport,
  opts: StreamOptions & { endOnTerminal: boolean },
): AsyncGenerator<StreamEntry<T>> {
  let last = opts.after;
  let failures = 0;
  const maxRetries = opts.maxRetries ?? 5;
  for (;;) {
    opts.onConnect?.(last);
    const url = new URL(transport.url);
    if (last) url.searchParams.set('after', last);
    let progressed = false;
    let waitMs = Math.min(5000, (opts.retryDelayMs ?? 250) * 2 ** failures);
    try {
      const res = await transport.fetch(url, {
        headers: { ...transport.headers, accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) },
        signal: opts.signal,
      });
      // 204: the stream has ended and nothing follows the cursor (a finished job): done.
      if (res.status === 204) return;
      if (!res.ok || !res.body) {
        const err = await apiError(res);
        if (res.status < 500 && res.status !== 429) throw err;
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) waitMs = retryAfter * 1000;
      } else {
        const queue: StreamEntry<T>[] = [];
        const parser = createParser({
          onEvent: (e) => {
            if (e.id) queue.push({ id: e.id, data: JSON.parse(e.data) as T });
            else {
              // The stream went backwards (docs/streams.md, stream_reset): passed on with an empty id;
              // the whole stream follows, so the position is its beginning again.
              const data = JSON.parse(e.data) as T;
              if (data.type === 'stream_reset') queue.push({ id: '', data });
            }
          },
        });
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(decoder.decode(value, { stream: true }));
            while (queue.length) {
              const entry = queue.shift()!;
              last = entry.id || undefined;
              progressed = true;
              yield entry;
              if (opts.endOnTerminal && isTerminal(entry.data)) return;
            }
          }
        } finally {
          reader.cancel().catch(() => undefined);
        }
      }
    } catch (e) {
      if (e instanceof CortexApiError || opts.signal?.aborted) throw e;
      // a cut connection or a network error: reconnect below
    }
    failures = progressed ? 0 : failures + 1;
    if (failures > maxRetries) throw new Error(`stream ${transport.url}: no progress after ${maxRetries} reconnects`);
    if (failures > 0) await sleep(waitMs, opts.signal);
  }
}

/**
 * The reply a job stream shows, by the reset rule (docs/streams.md): tokens are kept per turn, a
 * `reset` for a turn drops that turn's tokens so far (a retried turn is a different text, not a
 * continuation), and the reply is the turns' texts in turn order. It equals the stored reply.
 */
export class JobReply {
  private readonly turns = new Map<number, { attempt: number; parts: string[] }>();

  /** Applies one entry; returns true when the shown text changed. */
  apply(data: JobStreamData): boolean {
    if (data.type === 'stream_reset') {
      this.turns.clear();
      return true;
    }
    if (data.type === 'reset') {
      const d = data as Extract<JobStreamData, { type: 'reset' }>;
      this.turns.set(d.turn, { attempt: d.attempt, parts: [] });
      return true;
    }
    if (data.type === 'token') {
      const d = data as Extract<JobStreamData, { type: 'token' }>;
      const turn = this.turns.get(d.turn) ?? { attempt: d.attempt, parts: [] };
      // A token of an attempt older than the turn's latest reset never shows (the server refuses them too).
      if (d.attempt < turn.attempt) return false;
      turn.parts.push(d.text);
      this.turns.set(d.turn, turn);
      return true;
    }
    return false;
  }

  get text(): string {
    return [...this.turns.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, t]) => t.parts.join(''))
      .join('');
  }
}
