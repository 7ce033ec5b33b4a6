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

/**
 * How an entry is fenced (docs/streams.md):
 * - `terminal`: the stream's one `complete`/`error` entry; a second one is refused;
 * - `reset`: attempt N of a model turn begins: entries of older attempts of that turn are refused from now on;
 * - `turn`: an entry of attempt N of a model turn (tokens, turn progress); refused once a newer attempt began;
 * - `plain`: anything else.
 * Every kind is refused once the terminal entry is written.
 */
export type Fence = { kind: 'plain' } | { kind: 'terminal' } | { kind: 'reset' | 'turn'; turn: number; attempt: number };

/**
 * The fence and the XADD run as one Lua script, so Redis applies them atomically: two terminal
 * entries, or a token of a superseded attempt after its turn's reset, are impossible rather
 * than unlikely, whichever process (a dying worker, the API's cancel, the retry) writes them.
 * KEYS: stream, its meta hash. ARGV: data, kind, turn, attempt, maxlen, ttl.
 */
const APPEND_LUA = `
local meta = KEYS[2]
if redis.call('HEXISTS', meta, 'terminal') == 1 then return false end
local kind = ARGV[2]
if kind == 'terminal' then
  redis.call('HSET', meta, 'terminal', '1')
elseif kind == 'reset' or kind == 'turn' then
  local field = 't' .. ARGV[3]
  local attempt = tonumber(ARGV[4])
  local current = tonumber(redis.call('HGET', meta, field) or '0')
  if attempt < current then return false end
  if attempt > current then redis.call('HSET', meta, field, ARGV[4]) end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'data', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
if kind ~= 'plain' then redis.call('EXPIRE', meta, ARGV[6]) end
return id
`;

interface FencedRedis { cortexAppend(stream: string, meta: string, data: string, kind: string, turn: string, attempt: string, maxlen: string, ttl: string): Promise<string | null> }

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
 * resource-event stream. Writers append through one fenced script; readers replay with XRANGE
 * after a cursor and then block on XREAD with a dedicated connection.
 */
export function createStreams(redis: Redis, prefix: string) {
  const keys = {
    job: (jobId: string) => `${prefix}stream:job:${jobId}`,
    trace: (workspaceId: string, traceId: string) => `${prefix}stream:trace:${workspaceId}:${traceId}`,
    workspace: (workspaceId: string) => `${prefix}stream:ws:${workspaceId}`,
    /** Live captions of one transcription session (docs/meetings.md). */
    captions: (workspaceId: string, sessionId: string) => `${prefix}stream:captions:${workspaceId}:${sessionId}`,
    /** Every workspace's resource events in one stream: what the search index follows. */
    feed: () => `${prefix}stream:resource-feed`,
  };
  if (!('cortexAppend' in redis)) redis.defineCommand('cortexAppend', { numberOfKeys: 2, lua: APPEND_LUA });
  const fenced = redis as unknown as FencedRedis;
  return {
    keys,
    /**
     * Appends one event; returns its id (the SSE cursor), or null when the fence refused it.
     * Streams expire a week after the last write.
     */
    async append(key: string, event: Record<string, unknown>, fence: Fence = { kind: 'plain' }): Promise<string | null> {
      const turn = 'turn' in fence ? String(fence.turn) : '0';
      const attempt = 'attempt' in fence ? String(fence.attempt) : '0';
      return fenced.cortexAppend(key, `${key}:meta`, JSON.stringify(event), fence.kind, turn, attempt, MAXLEN, String(TTL_S));
    },
    /** Deletes a stream and its fences (a job that never started is started afresh). */
    async drop(key: string): Promise<void> {
      await redis.del(key, `${key}:meta`);
    },
    /** Entries strictly after `after` (all entries when after is undefined). */
    async range(key: string, after?: string, count = 1000): Promise<StreamEntry[]> {
      const start = after ? `(${after}` : '-';
      return parseEntries(await redis.xrange(key, start, '+', 'COUNT', count));
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
