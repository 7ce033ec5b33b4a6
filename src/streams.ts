import { createFeed } from './feed.js';
import { sameSlot, type BlockingReader, type Redis } from './redis.js';
import { parseEntries, type StreamEntry } from './stream-entries.js';

export { compareIds, parseEntries, type StreamEntry } from './stream-entries.js';
export type { FeedBatch, FeedPosition, FeedReader } from './feed.js';

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
 * KEYS: stream, its meta hash (in the stream's cluster slot: sameSlot), and on one server the
 * meta hash's former name (`<stream>:meta`, another slot), whose fences are taken over once.
 * ARGV: data, kind, turn, attempt, maxlen, ttl.
 *
 * The meta hash exists whenever the stream does (a `stream` field, set by every append, and the
 * same expiry): while a cluster slot migrates, Redis runs a script only where all its keys are,
 * and answers TRYAGAIN until the migration ends when some are missing on both sides, so a stream
 * without its hash could not be appended to for as long as its slot moves.
 */
const APPEND_LUA = `
local meta = KEYS[2]
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then
  local old = redis.call('HGETALL', KEYS[3])
  for i = 1, #old, 2 do
    local now = redis.call('HGET', meta, old[i])
    if not now or tonumber(old[i + 1]) > tonumber(now) then redis.call('HSET', meta, old[i], old[i + 1]) end
  end
  redis.call('EXPIRE', meta, ARGV[6])
  redis.call('DEL', KEYS[3])
end
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
redis.call('HSETNX', meta, 'stream', '1')
redis.call('EXPIRE', meta, ARGV[6])
return id
`;

interface FencedRedis {
  cortexAppend(numKeys: number, ...keysAndArgs: string[]): Promise<string | null>;
}

/**
 * The only writer and reader of event streams (nothing else touches a stream key). Keys are built here so that
 * routes and activities never assemble them: job streams, trace streams, the workspace
 * resource-event stream and the partitioned resource feed (src/feed.ts). Writers append through
 * one fenced script; readers replay with XRANGE after a cursor and then block on XREAD with a
 * dedicated connection. A stream's meta hash (its fences) is in the stream's cluster slot, so the
 * script runs on a Redis Cluster as on one server; stream keys themselves kept their names.
 */
export function createStreams(
  redis: Redis,
  prefix: string,
  opts: { feedMaxLen?: number; feedPartitions?: number } = {},
) {
  const keys = {
    job: (jobId: string) => `${prefix}stream:job:${jobId}`,
    trace: (workspaceId: string, traceId: string) => `${prefix}stream:trace:${workspaceId}:${traceId}`,
    workspace: (workspaceId: string) => `${prefix}stream:ws:${workspaceId}`,
    /** Live captions of one transcription session (docs/meetings.md). */
    captions: (workspaceId: string, sessionId: string) => `${prefix}stream:captions:${workspaceId}:${sessionId}`,
    /** A stream's fences (terminal, the current attempt of each turn), in the stream's slot. */
    meta: (stream: string) => sameSlot(stream, 'meta'),
  };
  // The meta hash's name before it moved into the stream's slot. One server only: on a cluster the
  // former layout never ran (its script touched two slots), so there is nothing to take over.
  // Such hashes expire a week after their last write, after which this can go (docs/decisions.md).
  const formerMeta = redis.isCluster ? () => [] : (stream: string) => [`${stream}:meta`];
  if (!('cortexAppend' in redis)) redis.defineCommand('cortexAppend', { lua: APPEND_LUA });
  const fenced = redis as unknown as FencedRedis;
  const newest = async (key: string): Promise<StreamEntry | null> =>
    parseEntries(await redis.xrevrange(key, '+', '-', 'COUNT', 1))[0] ?? null;
  return {
    keys,
    /** The platform-wide resource feed, in partitions (src/feed.ts). */
    feed: createFeed(redis, prefix, {
      partitions: opts.feedPartitions ?? 16,
      maxLen: opts.feedMaxLen ?? Number(MAXLEN),
      ttlS: TTL_S,
    }),
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
      const ks = [key, keys.meta(key), ...formerMeta(key)];
      return fenced.cortexAppend(
        ks.length,
        ...ks,
        JSON.stringify(event),
        fence.kind,
        turn,
        attempt,
        MAXLEN,
        String(TTL_S),
      );
    },
    /** The newest entry of a stream, or null when it is empty or gone. */
    newest,
    /** Deletes a stream and its fences (a job that never started is started afresh); one slot, one command. */
    async drop(key: string): Promise<void> {
      await redis.del(key, keys.meta(key), ...formerMeta(key));
    },
    /** Entries strictly after `after` (all entries when after is undefined). */
    async range(key: string, after?: string, count = 1000): Promise<StreamEntry[]> {
      const start = after ? `(${after}` : '-';
      return parseEntries(await redis.xrange(key, start, '+', 'COUNT', count));
    },
    /** Blocks up to blockMs for entries after `last` on a dedicated connection. */
    async read(
      reader: BlockingReader,
      key: string,
      last: string,
      blockMs: number,
      count = 500,
    ): Promise<StreamEntry[] | null> {
      const res = await reader.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, last);
      if (!res || res.length === 0) return null;
      return parseEntries(res[0][1]);
    },
  };
}
export type Streams = ReturnType<typeof createStreams>;
