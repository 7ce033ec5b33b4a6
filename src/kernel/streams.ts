import { createFeed } from './feed.js';
import { blockingReader, sameSlot, type BlockingReader, type Redis } from './redis.js';
import { compareIds, parseEntries, type StreamEntry } from './stream-entries.js';

export { compareIds, type StreamEntry } from './stream-entries.js';
export type { FeedBatch, FeedReader } from './feed.js';

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

/**
 * Claims the next attempt number of a turn: one above both the claims so far (`c<turn>`) and the
 * turn's current fence (`t<turn>`, the newest attempt that wrote), so a claimed attempt is newer
 * than every attempt of the turn whoever numbered it (a local activity's claims, an activity's own
 * attempt numbers, a fallback model's turn after the failed model's attempts).
 * KEYS: the meta hash. ARGV: turn, ttl.
 */
const CLAIM_LUA = `
local c = tonumber(redis.call('HGET', KEYS[1], 'c' .. ARGV[1]) or '0')
local t = tonumber(redis.call('HGET', KEYS[1], 't' .. ARGV[1]) or '0')
local n = math.max(c, t) + 1
redis.call('HSET', KEYS[1], 'c' .. ARGV[1], n)
redis.call('EXPIRE', KEYS[1], ARGV[2])
return n
`;

/** How following a stream ended (`Streams.follow`). */
export type FollowEnd<T> =
  /** The stream's terminal entry (with `endOnTerminal`), delivered to `onEntry` already. */
  | { end: 'terminal'; entry: StreamEntry }
  /** `onIdle` said the stream is finished, and what was left after the cursor held no terminal entry. */
  | { end: 'finished' }
  /** `onEntry` or `onIdle` stopped it with a value. */
  | { end: 'stopped'; value: T }
  /** The signal aborted (the client went away, the caller gave up). */
  | { end: 'aborted' }
  /** The deadline passed. */
  | { end: 'deadline' };

/** What to do after a blocking read that brought nothing: wait again, end after the rest (`finished`), or stop. */
type IdleVerdict<T> = 'wait' | 'finished' | { stop: T };

export interface FollowOptions<T> {
  /** Resume point: only entries after it are delivered (none: the whole stream). */
  after?: string;
  /** The replay after `after`, already requested by the caller. */
  backlog?: Promise<StreamEntry[]>;
  /** End after the terminal entry (`complete` or `error`: job and caption streams). */
  endOnTerminal: boolean;
  /** How long one blocking read waits before `onIdle`. */
  blockMs: number;
  /** Aborting it ends the follow at once (the blocking connection is closed). */
  signal: AbortSignal;
  /** Epoch ms after which the follow ends (`deadline`); none by default. */
  deadline?: number;
  /** Every entry, in order; returning `{ stop }` ends the follow. */
  onEntry: (e: StreamEntry) => void | { stop: T } | Promise<void | { stop: T }>;
  /** After each blocking read that brought nothing (default: wait again). */
  onIdle?: () => IdleVerdict<T> | Promise<IdleVerdict<T>>;
  /**
   * A cursor newer than the stream's newest entry, or a stream that is gone (docs/streams.md, rule 6):
   * called before the whole stream is delivered from its beginning.
   */
  onStreamReset?: (after: string, newest: string | null) => void;
  /** A failed blocking read is retried on a fresh connection after a pause (default: the follow fails). */
  retryReads?: boolean;
}

/** Entries per replay page (XRANGE COUNT). */
const PAGE = 1000;
/** The pause before a failed blocking read is retried (`retryReads`). */
const RETRY_READ_MS = 500;

interface FencedRedis {
  cortexAppend(numKeys: number, ...keysAndArgs: string[]): Promise<string | null>;
  cortexClaim(numKeys: number, ...keysAndArgs: string[]): Promise<number>;
}

/**
 * The only writer and reader of event streams (nothing else touches a stream key). Keys are built here so that
 * routes and activities never assemble them: job streams, trace streams, the workspace
 * resource-event stream and the partitioned resource feed (src/kernel/feed.ts). Writers append through
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
  if (!('cortexClaim' in redis)) redis.defineCommand('cortexClaim', { lua: CLAIM_LUA });
  const fenced = redis as unknown as FencedRedis;
  const newest = async (key: string): Promise<StreamEntry | null> =>
    parseEntries(await redis.xrevrange(key, '+', '-', 'COUNT', 1))[0] ?? null;
  /** Entries strictly after `after` (all entries when after is undefined). */
  const range = async (key: string, after?: string, count = PAGE): Promise<StreamEntry[]> => {
    const start = after ? `(${after}` : '-';
    return parseEntries(await redis.xrange(key, start, '+', 'COUNT', count));
  };
  /** Blocks up to blockMs for entries after `last` on a dedicated connection. */
  const read = async (
    reader: BlockingReader,
    key: string,
    last: string,
    blockMs: number,
    count = 500,
  ): Promise<StreamEntry[] | null> => {
    const res = await reader.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, last);
    if (!res || res.length === 0) return null;
    return parseEntries(res[0][1]);
  };

  /**
   * Follows one stream (the one follower of the platform: the SSE routes, the OpenAI-compatible
   * endpoint and MCP tool calls all read a stream through it): the entries after the cursor with
   * XRANGE, page by page, then blocking XREADs on a connection of its own (blockingReader: one
   * server or the cluster master of the key's slot), made only once the replay is delivered and
   * closed at once when the signal aborts. It ends at the terminal entry (`endOnTerminal`), when
   * `onIdle` says the stream is finished (after delivering what is left), when a callback stops it,
   * or on abort or deadline. Presentation (SSE framing, chunks, progress) stays with the caller.
   */
  async function follow<T = never>(key: string, o: FollowOptions<T>): Promise<FollowEnd<T>> {
    const { signal } = o;
    const deadline = o.deadline ?? Number.POSITIVE_INFINITY;
    let last = o.after ?? '0-0';
    let reader: BlockingReader | undefined;
    const stop = () => reader?.disconnect();
    signal.addEventListener('abort', stop, { once: true });
    const deliver = async (entries: StreamEntry[]): Promise<FollowEnd<T> | null> => {
      for (const e of entries) {
        last = e.id;
        const r = o.onEntry(e);
        const v = r instanceof Promise ? await r : r;
        if (v) return { end: 'stopped', value: v.stop };
        if (o.endOnTerminal && isTerminal(e)) return { end: 'terminal', entry: e };
      }
      return null;
    };
    try {
      let batch = await (o.backlog ?? range(key, o.after));
      if (o.after && batch.length === 0) {
        // A cursor newer than the stream's newest entry: the stream went backwards (Redis came back
        // without its newest entries, or the stream was deleted and written again). Waiting after the
        // cursor could wait forever: the whole stream is delivered anew (docs/streams.md, stream_reset).
        const n = await newest(key);
        if (!n || compareIds(n.id, o.after) < 0) {
          o.onStreamReset?.(o.after, n?.id ?? null);
          last = '0-0';
          batch = await range(key);
        }
      }
      for (;;) {
        const done = await deliver(batch);
        if (done) return done;
        if (signal.aborted) return { end: 'aborted' };
        if (batch.length < PAGE) break;
        batch = await range(key, last);
      }
      while (!signal.aborted && Date.now() < deadline) {
        reader ??= blockingReader(redis, key);
        const block = Math.max(1, Math.min(o.blockMs, deadline - Date.now()));
        let entries: StreamEntry[] | null;
        try {
          entries = await read(reader, key, last, block);
        } catch (e) {
          if (signal.aborted) return { end: 'aborted' };
          if (!o.retryReads) throw e;
          // A fresh reader next time (its connection failed; a moved slot it follows itself), after a pause.
          reader.disconnect();
          reader = undefined;
          await new Promise((r) => setTimeout(r, RETRY_READ_MS));
          entries = null;
        }
        if (signal.aborted) return { end: 'aborted' };
        if (entries) {
          const done = await deliver(entries);
          if (done) return done;
          continue;
        }
        const verdict = o.onIdle ? await o.onIdle() : 'wait';
        if (verdict === 'wait') continue;
        if (verdict !== 'finished') return { end: 'stopped', value: verdict.stop };
        // Finished without a terminal entry this follower saw: deliver what is left, then end.
        return (await deliver(await range(key, last))) ?? { end: 'finished' };
      }
      return signal.aborted ? { end: 'aborted' } : { end: 'deadline' };
    } finally {
      signal.removeEventListener('abort', stop);
      // An aborted reader is closed already; an idle one is kept for the next follow (BlockingReader.release).
      reader?.release();
    }
  }
  return {
    keys,
    /** The platform-wide resource feed, in partitions (src/kernel/feed.ts). */
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
    /**
     * Claims the next attempt number of model turn `turn` of a stream's writer (1, 2, …), kept in
     * the stream's meta hash beside its fences: for a turn whose runner does not know its own
     * attempt (a local activity starts again at attempt 1 when its workflow task is retried on
     * another worker), so that the retry's `reset` fences off the dead attempt's late tokens.
     * The number is above the turn's current fence too (CLAIM_LUA).
     */
    async claimAttempt(key: string, turn: number): Promise<number> {
      return Number(await fenced.cortexClaim(1, keys.meta(key), String(turn), String(TTL_S)));
    },
    /**
     * Whether the stream's terminal entry is written (its fence is set): one key read, with no
     * entry read. A writer sets the fence with the entry, in the same script.
     */
    async ended(key: string): Promise<boolean> {
      const metas = [keys.meta(key), ...formerMeta(key)];
      if (metas.length === 1) return (await redis.hexists(metas[0]!, 'terminal')) === 1;
      const res = await redis.pipeline(metas.map((m) => ['hexists', m, 'terminal'])).exec();
      return (res ?? []).some(([err, n]) => {
        if (err) throw err;
        return n === 1;
      });
    },
    /** The newest entry of a stream, or null when it is empty or gone. */
    newest,
    /** Deletes a stream and its fences (a job that never started is started afresh); one slot, one command. */
    async drop(key: string): Promise<void> {
      await redis.del(key, keys.meta(key), ...formerMeta(key));
    },
    range,
    follow,
  };
}
export type Streams = ReturnType<typeof createStreams>;
