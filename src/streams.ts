import type { Redis } from 'ioredis';

/** One entry of a Redis stream as the SSE layer sends it: the entry id is the cursor. */
export interface StreamEntry { id: string; data: Record<string, unknown> }

/** Job stream entries that end the stream (document 1, Events rule 3). */
export const TERMINAL_EVENTS = new Set(['complete', 'error']);
export const isTerminal = (e: StreamEntry): boolean => TERMINAL_EVENTS.has(String(e.data.type));

/** Cursor format of a Redis stream entry id (`1731000000000-0`). */
export const CURSOR_RE = /^\d{1,20}-\d{1,20}$/;

const MAXLEN = '10000';
const TTL_S = 7 * 24 * 3600;

function parseEntries(raw: [string, string[]][]): StreamEntry[] {
  return raw.map(([id, fields]) => {
    const i = fields.indexOf('data');
    let data: Record<string, unknown> = {};
    try { data = i >= 0 ? (JSON.parse(fields[i + 1]) as Record<string, unknown>) : {}; } catch { /* keep empty */ }
    return { id, data };
  });
}

/**
 * The only writer and reader of event streams (STYLE.md §10). Keys are built here so that
 * routes and activities never assemble them: job streams, trace streams and the workspace
 * resource-event stream. Writers XADD; readers replay with XRANGE after a cursor and then
 * block on XREAD with a dedicated connection.
 */
export function createStreams(redis: Redis, prefix: string) {
  const keys = {
    job: (jobId: string) => `${prefix}stream:job:${jobId}`,
    trace: (workspaceId: string, traceId: string) => `${prefix}stream:trace:${workspaceId}:${traceId}`,
    workspace: (workspaceId: string) => `${prefix}stream:ws:${workspaceId}`,
  };
  return {
    keys,
    /** Appends one event; returns its id (the SSE cursor). Streams expire a week after the last write. */
    async append(key: string, event: Record<string, unknown>): Promise<string> {
      const res = await redis.multi()
        .xadd(key, 'MAXLEN', '~', MAXLEN, '*', 'data', JSON.stringify(event))
        .expire(key, TTL_S)
        .exec();
      const id = res?.[0]?.[1];
      if (typeof id !== 'string') throw new Error('XADD failed');
      return id;
    },
    /** Entries strictly after `after` (all entries when after is undefined). */
    async range(key: string, after?: string, count = 1000): Promise<StreamEntry[]> {
      const start = after ? `(${after}` : '-';
      return parseEntries(await redis.xrange(key, start, '+', 'COUNT', count));
    },
    /** The newest entries, newest first (used to resume token writing after a retry). */
    async tail(key: string, count: number): Promise<StreamEntry[]> {
      return parseEntries(await redis.xrevrange(key, '+', '-', 'COUNT', count));
    },
    /** Blocks up to blockMs for entries after `last` on a dedicated connection. */
    async read(reader: Redis, key: string, last: string, blockMs: number): Promise<StreamEntry[] | null> {
      const res = (await reader.xread('COUNT', 500, 'BLOCK', blockMs, 'STREAMS', key, last)) as [string, [string, string[]][]][] | null;
      if (!res || res.length === 0) return null;
      return parseEntries(res[0][1]);
    },
  };
}
export type Streams = ReturnType<typeof createStreams>;
