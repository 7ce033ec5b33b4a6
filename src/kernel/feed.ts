import { blockingReader, sameSlot, type BlockingReader, type Redis } from './redis.js';
import { compareIds, parseEntries, type StreamEntry } from './stream-entries.js';

/**
 * The resource feed's append (docs/search.md, Following the feed), on the workspace's partition:
 * the entry carries `seq`, one more than the partition's entry before it (a counter in the
 * partition's meta hash, bumped in the same script), so a reader sees entries it never got
 * (trimmed, or lost by a Redis that restarted without them) as a jump, and a partition that went
 * backwards as a step back; and the workspace's mark (the id of its newest feed entry) is set in
 * the same script, so a search waits only for its own workspace's writes. The three keys share
 * the partition's slot (sameSlot). KEYS: partition, its meta hash, the workspace's mark. ARGV:
 * data, maxlen, ttl.
 */
const FEED_LUA = `
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'data', ARGV[1], 'seq', seq)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[3], id, 'EX', ARGV[3])
return id
`;

interface FeedRedis {
  cortexFeedAppend(
    feed: string,
    meta: string,
    mark: string,
    data: string,
    maxlen: string,
    ttl: string,
  ): Promise<string>;
}

/** Where one partition of the feed stands (Feed.positions). */
export interface FeedPosition {
  /** Its newest entry's id (`0-0` when empty or gone). */
  id: string;
  /** Its counter: the newest entry's `seq` (0 when the partition and its meta hash are gone). */
  seq: number;
  /** The clock of the Redis serving the partition (ms), read with the two above. */
  timeMs: number;
}

/** What a follower read from one partition. */
export interface FeedBatch {
  partition: number;
  entries: StreamEntry[];
}

/** Entries of one partition after a position: a reader's dedicated connection(s) and its read. */
export interface FeedReader {
  /**
   * Blocks up to `blockMs` for entries after `after[p]` in each partition p (at most `count` per
   * partition); returns what came, partition by partition (empty: nothing within the block).
   */
  read(after: readonly string[], blockMs: number, count: number): Promise<FeedBatch[]>;
  /** Disconnects (unblocks a pending read at once). */
  close(): void;
}

/**
 * This process's RESOURCE_FEED_PARTITIONS differs from the count recorded in Redis by the processes
 * that started first: it would put workspaces in other partitions than they do (its searches would
 * wait for marks nobody writes, its writes would go where their searches do not look). The process
 * refuses to start (docs/scaling.md, "The resource feed's partitions").
 */
export class FeedPartitionsMismatch extends Error {
  constructor(
    readonly configured: number,
    readonly recorded: number,
    readonly key: string,
  ) {
    super(
      `RESOURCE_FEED_PARTITIONS is ${configured} here, but the processes on this Redis use ${recorded} ` +
        `(recorded in the key ${key}). Every API and worker must use the same count: start this one ` +
        `with RESOURCE_FEED_PARTITIONS=${recorded}, or, to change the count, stop every API and worker, ` +
        `delete the key (redis-cli DEL ${key}; with -c on a cluster) and start them all with the new value.`,
    );
    this.name = 'FeedPartitionsMismatch';
  }
}

/** FNV-1a (32 bits): a workspace's partition, the same in every process and every release. */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * The platform-wide resource feed, in `partitions` streams (RESOURCE_FEED_PARTITIONS): every
 * resource event of a workspace goes to the workspace's partition, in order, so no single key
 * carries every workspace's writes (on a Redis Cluster the partitions spread over the masters),
 * and a follower that reads every partition sees each resource's events in order. The partitions
 * together keep about `maxLen` entries (RESOURCE_FEED_MAXLEN), each about maxLen / partitions.
 */
export function createFeed(redis: Redis, prefix: string, o: { partitions: number; maxLen: number; ttlS: number }) {
  const n = o.partitions;
  const key = (p: number) => `${prefix}stream:resource-feed:${p}`;
  const keys = {
    partition: key,
    /** The partition count every process on this Redis uses, recorded by the first to start (no expiry). */
    count: `${prefix}resource-feed:partitions`,
    meta: (p: number) => sameSlot(key(p), 'meta'),
    /** The id of a workspace's newest feed entry (what its searches wait for), in its partition's slot. */
    mark: (p: number, workspaceId: string) => sameSlot(key(p), `mark:${workspaceId}`),
  };
  if (!('cortexFeedAppend' in redis)) redis.defineCommand('cortexFeedAppend', { numberOfKeys: 3, lua: FEED_LUA });
  const fenced = redis as unknown as FeedRedis;
  const maxLen = String(Math.max(1, Math.ceil(o.maxLen / n)));
  const partitionOf = (workspaceId: string) => hash32(workspaceId) % n;

  /** One partition's position, read atomically (one transaction in the partition's slot). */
  async function position(p: number): Promise<FeedPosition> {
    const res = await redis.multi().xrevrange(key(p), '+', '-', 'COUNT', 1).hget(keys.meta(p), 'seq').time().exec();
    if (!res) throw new Error('feed position: transaction aborted');
    for (const [err] of res) if (err) throw err;
    const last = parseEntries(res[0][1] as [string, string[]][])[0];
    const time = res[2][1] as [string, string];
    return {
      id: last?.id ?? '0-0',
      seq: Number(res[1][1] ?? 0),
      timeMs: Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000),
    };
  }

  /** One server: one connection, one XREAD over every partition. */
  function singleReader(): FeedReader {
    const reader = blockingReader(redis, key(0));
    return {
      async read(after, blockMs, count) {
        const res = await reader.xread(
          'COUNT',
          count,
          'BLOCK',
          blockMs,
          'STREAMS',
          ...after.map((_, p) => key(p)),
          ...after,
        );
        return (res ?? []).map(([k, raw]) => ({
          partition: Number(k.slice(k.lastIndexOf(':') + 1)),
          entries: parseEntries(raw),
        }));
      },
      close: () => reader.disconnect(),
    };
  }

  /**
   * A cluster: a multi-key XREAD must stay in one slot, so each partition is read on a connection
   * of its own. A read returns what the partitions that answered first brought; the others' reads
   * stay pending for the next call (a result read from an older position is cut to what lies
   * after the caller's position, which is still contiguous).
   */
  function clusterReader(): FeedReader {
    const conns: (BlockingReader | undefined)[] = new Array<BlockingReader | undefined>(n);
    interface Pending {
      from: string;
      settled: boolean;
      value?: StreamEntry[];
      error?: unknown;
      done: Promise<void>;
    }
    const pending = new Map<number, Pending>();
    let closed = false;
    const start = (p: number, from: string, blockMs: number, count: number) => {
      if (!conns[p] || conns[p].ended) conns[p] = blockingReader(redis, key(p));
      const conn = conns[p];
      const x: Pending = { from, settled: false, done: Promise.resolve() };
      x.done = conn.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key(p), from).then(
        (res) => {
          x.value = res?.[0] ? parseEntries(res[0][1]) : [];
          x.settled = true;
        },
        (err: unknown) => {
          x.error = err;
          x.settled = true;
        },
      );
      pending.set(p, x);
    };
    return {
      async read(after, blockMs, count) {
        if (closed) throw new Error('feed reader closed');
        for (let p = 0; p < n; p++) if (!pending.has(p)) start(p, after[p], blockMs, count);
        await Promise.race([...pending.values()].map((x) => x.done));
        const out: FeedBatch[] = [];
        let failure: unknown;
        for (const [p, x] of [...pending]) {
          if (!x.settled) continue;
          pending.delete(p);
          if (x.error !== undefined) {
            // A fresh connection for the next read of this partition.
            conns[p]?.disconnect();
            conns[p] = undefined;
            failure ??= x.error;
            continue;
          }
          // Read from an older position: keep what lies after the caller's; from a newer one: read again.
          const c = compareIds(x.from, after[p]);
          if (c > 0) continue;
          const entries = c === 0 ? x.value! : x.value!.filter((e) => compareIds(e.id, after[p]) > 0);
          if (entries.length) out.push({ partition: p, entries });
        }
        if (failure !== undefined && out.length === 0) throw failure;
        return out;
      },
      close() {
        closed = true;
        for (const c of conns) c?.disconnect();
      },
    };
  }

  return {
    partitions: n,
    keys,
    partitionOf,
    /**
     * Records this process's partition count if none is recorded yet (SET NX, no expiry), and
     * throws FeedPartitionsMismatch when another count is: processes with different counts would
     * not find each other's feed entries and marks. Called once at start (createDeps).
     */
    async claimPartitions(): Promise<void> {
      const set = await redis.set(keys.count, String(n), 'NX');
      if (set === 'OK') return;
      const recorded = await redis.get(keys.count);
      // Deleted between the two commands (an operator changing the count): claim it again.
      if (recorded === null) return this.claimPartitions();
      if (Number(recorded) !== n) throw new FeedPartitionsMismatch(n, Number(recorded), keys.count);
    },
    /**
     * Appends one entry to the workspace's partition (trimmed to its share of RESOURCE_FEED_MAXLEN)
     * with its `seq`, and marks it as the workspace's newest; returns its partition and id.
     */
    async append(workspaceId: string, event: Record<string, unknown>): Promise<{ partition: number; id: string }> {
      const p = partitionOf(workspaceId);
      const id = await fenced.cortexFeedAppend(
        key(p),
        keys.meta(p),
        keys.mark(p, workspaceId),
        JSON.stringify(event),
        maxLen,
        String(o.ttlS),
      );
      return { partition: p, id };
    },
    /** The workspace's newest feed entry (its partition and id), or null when it wrote none this week. */
    async mark(workspaceId: string): Promise<{ partition: number; id: string } | null> {
      const p = partitionOf(workspaceId);
      const id = await redis.get(keys.mark(p, workspaceId));
      return id ? { partition: p, id } : null;
    },
    /** Where every partition stands, each read atomically (its newest entry, its counter, its server's clock). */
    positions: (): Promise<FeedPosition[]> => Promise.all(Array.from({ length: n }, (_, p) => position(p))),
    /** A reader with its own connection(s), for one follower; close it when done. */
    reader: (): FeedReader => (redis.isCluster ? clusterReader() : singleReader()),
  };
}
