import type { Redis } from 'ioredis';

/**
 * One entry of a Redis stream as the SSE layer sends it: the entry id is the cursor. Entries of
 * the resource feed also carry `seq`, the feed's own counter (see appendFeed).
 */
export interface StreamEntry {
  id: string;
  data: Record<string, unknown>;
  seq?: number;
}

/** Job stream entries that end the stream: `complete` and `error` (a cancel is `error: cancelled`; docs/streams.md). */
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
export type Fence =
  { kind: 'plain' } | { kind: 'terminal' } | { kind: 'reset' | 'turn'; turn: number; attempt: number };

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

/**
 * The resource feed's append (docs/search.md, Following the feed): the entry carries `seq`, one
 * more than the entry before it (a counter in the feed's meta hash, bumped in the same script), so
 * a reader sees entries it never got (trimmed, or lost by a Redis that restarted without them) as
 * a jump, and a feed that went backwards as a step back; and the workspace's mark (the id of its
 * newest feed entry) is set in the same script, so a search waits only for its own workspace's
 * writes. KEYS: feed, its meta hash, the workspace's mark. ARGV: data, maxlen, ttl.
 */
const FEED_LUA = `
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'data', ARGV[1], 'seq', seq)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[3], id, 'EX', ARGV[3])
return id
`;

interface FencedRedis {
  cortexAppend(
    stream: string,
    meta: string,
    data: string,
    kind: string,
    turn: string,
    attempt: string,
    maxlen: string,
    ttl: string,
  ): Promise<string | null>;
  cortexFeedAppend(
    feed: string,
    meta: string,
    mark: string,
    data: string,
    maxlen: string,
    ttl: string,
  ): Promise<string>;
}

function parseEntries(raw: [string, string[]][]): StreamEntry[] {
  return raw.map(([id, fields]) => {
    const i = fields.indexOf('data');
    let data: Record<string, unknown> = {};
    try {
      data = i >= 0 ? (JSON.parse(fields[i + 1]) as Record<string, unknown>) : {};
    } catch {
      /* keep empty */
    }
    const j = fields.indexOf('seq');
    return j >= 0 ? { id, data, seq: Number(fields[j + 1]) } : { id, data };
  });
}

/** Orders two stream ids (`<ms>-<n>`): negative when a is older. */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  return am.length - bm.length || (am < bm ? -1 : am > bm ? 1 : 0) || Number(as) - Number(bs);
}

/** Where the resource feed stands (Streams.feedPosition). */
export interface FeedPosition {
  id: string;
  seq: number;
  timeMs: number;
}

/**
 * The only writer and reader of event streams (nothing else touches a stream key). Keys are built here so that
 * routes and activities never assemble them: job streams, trace streams and the workspace
 * resource-event stream. Writers append through one fenced script; readers replay with XRANGE
 * after a cursor and then block on XREAD with a dedicated connection.
 */
export function createStreams(redis: Redis, prefix: string, opts: { feedMaxLen?: number } = {}) {
  const keys = {
    job: (jobId: string) => `${prefix}stream:job:${jobId}`,
    trace: (workspaceId: string, traceId: string) => `${prefix}stream:trace:${workspaceId}:${traceId}`,
    workspace: (workspaceId: string) => `${prefix}stream:ws:${workspaceId}`,
    /** Live captions of one transcription session (docs/meetings.md). */
    captions: (workspaceId: string, sessionId: string) => `${prefix}stream:captions:${workspaceId}:${sessionId}`,
    /** Every workspace's resource events in one stream: what the search index follows. */
    feed: () => `${prefix}stream:resource-feed`,
    /** The id of a workspace's newest resource-feed entry (what its searches wait for). */
    feedMark: (workspaceId: string) => `${prefix}feed-mark:${workspaceId}`,
  };
  if (!('cortexAppend' in redis)) redis.defineCommand('cortexAppend', { numberOfKeys: 2, lua: APPEND_LUA });
  if (!('cortexFeedAppend' in redis)) redis.defineCommand('cortexFeedAppend', { numberOfKeys: 3, lua: FEED_LUA });
  const fenced = redis as unknown as FencedRedis;
  const feedMaxLen = String(opts.feedMaxLen ?? Number(MAXLEN));
  const newest = async (key: string): Promise<StreamEntry | null> =>
    parseEntries(await redis.xrevrange(key, '+', '-', 'COUNT', 1))[0] ?? null;
  return {
    keys,
    /**
     * Appends one event; returns its id (the SSE cursor), or null when the fence refused it.
     * Streams expire a week after the last write.
     */
    async append(
      key: string,
      event: Record<string, unknown>,
      fence: Fence = { kind: 'plain' },
    ): Promise<string | null> {
      const turn = 'turn' in fence ? String(fence.turn) : '0';
      const attempt = 'attempt' in fence ? String(fence.attempt) : '0';
      return fenced.cortexAppend(
        key,
        `${key}:meta`,
        JSON.stringify(event),
        fence.kind,
        turn,
        attempt,
        MAXLEN,
        String(TTL_S),
      );
    },
    /**
     * Appends one entry to the platform-wide resource feed (trimmed to RESOURCE_FEED_MAXLEN) with
     * its `seq`, and marks it as the workspace's newest; returns its id.
     */
    async appendFeed(workspaceId: string, event: Record<string, unknown>): Promise<string> {
      const feed = keys.feed();
      return fenced.cortexFeedAppend(
        feed,
        `${feed}:meta`,
        keys.feedMark(workspaceId),
        JSON.stringify(event),
        feedMaxLen,
        String(TTL_S),
      );
    },
    /** The id of a workspace's newest feed entry, or null when it wrote none this week. */
    async feedMark(workspaceId: string): Promise<string | null> {
      return redis.get(keys.feedMark(workspaceId));
    },
    /**
     * Where the feed stands, read atomically: its newest entry's id (`0-0` when empty or gone), the
     * feed's counter (the newest entry's `seq`; 0 when the feed and its meta hash are gone), and
     * Redis's clock (ms; every mark older than it was written before this read).
     */
    async feedPosition(): Promise<FeedPosition> {
      const feed = keys.feed();
      const res = await redis.multi().xrevrange(feed, '+', '-', 'COUNT', 1).hget(`${feed}:meta`, 'seq').time().exec();
      if (!res) throw new Error('feed position: transaction aborted');
      for (const [err] of res) if (err) throw err;
      const last = parseEntries(res[0][1] as [string, string[]][])[0];
      const time = res[2][1] as [string, string];
      return {
        id: last?.id ?? '0-0',
        seq: Number(res[1][1] ?? 0),
        timeMs: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000),
      };
    },
    /** The newest entry of a stream, or null when it is empty or gone. */
    newest,
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
    async read(reader: Redis, key: string, last: string, blockMs: number, count = 500): Promise<StreamEntry[] | null> {
      const res = (await reader.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, last)) as
        [string, [string, string[]][]][] | null;
      if (!res || res.length === 0) return null;
      return parseEntries(res[0][1]);
    },
  };
}
export type Streams = ReturnType<typeof createStreams>;
