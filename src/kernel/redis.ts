import { Cluster, Redis as SingleRedis, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';

/**
 * A Redis client of either topology: one server (`REDIS_URL`) or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`, or `REDIS_URL=redis+cluster://…`; docs/scaling.md). Both speak the same
 * commands; on a cluster every command, script and transaction must keep its keys in one hash
 * slot, which the key builders see to (src/kernel/streams.ts, src/kernel/feed.ts, src/usage/counters.ts).
 * Only this module creates clients.
 */
export type Redis = SingleRedis | Cluster;

/** Where Redis is: one server by URL, or the seed nodes of a cluster (any few nodes; the rest are discovered). */
export type RedisTarget =
  | { topology: 'single'; url: string }
  | {
      topology: 'cluster';
      nodes: { host: string; port: number }[];
      username?: string;
      password?: string;
      tls: boolean;
    };

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/?$/;

/** `host:port`, `[v6]:port`: a seed node. */
function node(spec: string, from: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(spec.trim());
  if (!m) throw new Error(`${from}: "${spec}" is not host:port`);
  return { host: m[1], port: Number(m[2]) };
}

/**
 * The topology the configuration names: REDIS_CLUSTER_NODES (comma-separated host:port) wins; a
 * `redis+cluster://[user:password@]host:port,host:port` URL (`rediss+cluster://` for TLS) is a
 * cluster too; anything else is one server.
 */
export function redisTarget(c: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>): RedisTarget {
  if (c.REDIS_CLUSTER_NODES) {
    const nodes = c.REDIS_CLUSTER_NODES.split(',')
      .filter((s) => s.trim())
      .map((s) => node(s, 'REDIS_CLUSTER_NODES'));
    if (!nodes.length) throw new Error('REDIS_CLUSTER_NODES: name at least one host:port');
    return { topology: 'cluster', nodes, tls: false };
  }
  const m = CLUSTER_URL.exec(c.REDIS_URL);
  if (!m) {
    if (/^\w+\+cluster:/.test(c.REDIS_URL))
      throw new Error('REDIS_URL: a cluster URL is redis+cluster://[user:password@]host:port,host:port');
    return { topology: 'single', url: c.REDIS_URL };
  }
  const [, scheme, user, password, hosts] = m;
  return {
    topology: 'cluster',
    nodes: hosts.split(',').map((s) => node(s, 'REDIS_URL')),
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password !== undefined ? { password: decodeURIComponent(password) } : {}),
    tls: scheme === 'rediss',
  };
}

/**
 * One command connection per process (a cluster client keeps one per node). A command not
 * answered within `commandTimeoutMs` fails (queued ones too, while the connection is down), so no
 * caller waits on Redis longer than that.
 */
export function createRedis(target: RedisTarget, o: { commandTimeoutMs?: number } = {}): Redis {
  const common: RedisOptions = {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    commandTimeout: o.commandTimeoutMs,
  };
  if (target.topology === 'single') return new SingleRedis(target.url, common);
  return new Cluster(target.nodes, {
    redisOptions: {
      ...common,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
    enableOfflineQueue: true,
    // A cluster that says it is down fails the command at once (ioredis would retry it 16 times over
    // about 1.7 s, for each of a request's Redis calls): the request is answered 503 with Retry-After,
    // and the breaker, which reads each master's cluster_state, answers the next ones at once.
    retryDelayOnClusterDown: 0,
    // Keep the slot table current (a failover or a resharding) even while no command meets a MOVED.
    slotsRefreshInterval: 5000,
  });
}

/**
 * The cluster slot of a key, as Redis computes it: CRC16 (XMODEM) of the key's hash tag (what is
 * inside its first `{…}`, when not empty) or of the whole key, modulo 16384.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc & 16383;
}

/** A reply to a blocking read: per key, its entries (`[id, [field, value, …]]`); null when the block passed empty. */
type XReadReply = [string, [string, string[]][]][] | null;

/**
 * A connection of its own for a blocking reader (XREAD BLOCK) of `key` (on one server, of any keys).
 * Made per SSE request, per MCP wait and per feed partition of a follower; disconnect() unblocks a
 * pending read at once.
 */
export interface BlockingReader {
  /** `XREAD <args>` (COUNT, BLOCK, STREAMS …) on the reader's own connection; no command timeout, the block bounds it. */
  xread(...args: (string | number)[]): Promise<XReadReply>;
  /** Closes the connection (unblocking a pending read at once). */
  disconnect(): void;
  /**
   * Done with it: on one server an idle connection is kept for the next reader (at most
   * IDLE_READERS per client), so a follow does not pay a connection, its handshake and its ready
   * check; a connection with a read pending, or not ready, is closed. On a cluster it is closed.
   */
  release(): void;
  /** Disconnected: make a new reader to read again. */
  readonly ended: boolean;
}

/** Where a Redis Cluster sends a command instead (`MOVED <slot> <host>:<port>`, `ASK <slot> <host>:<port>`), or null. */
export function redirection(err: unknown): { kind: 'MOVED' | 'ASK'; host: string; port: number } | null {
  const m = /^(MOVED|ASK) \d+ \[?([^\]\s]+?)\]?:(\d+)$/.exec(String((err as Error | undefined)?.message ?? ''));
  return m ? { kind: m[1] as 'MOVED' | 'ASK', host: m[2], port: Number(m[3]) } : null;
}

/** How many redirections one read follows before it fails (a slot moves once; more is a cluster in flux). */
const MAX_HOPS = 5;

/**
 * A blocking reader of `key`. On one server, a duplicate of the command connection. On a cluster,
 * one connection to the master that holds the key's slot (a cluster client of its own would connect
 * to every master and fetch the slot table first, per SSE request), placed by the key's slot
 * (`keySlot`, Redis's CRC16) in the cluster client's slot table. When the slot moves under it (a
 * resharding, a failover), Redis answers the read, pending or new, with `MOVED` (the slot has a new
 * master) or `ASK` (the slot is migrating and the key has already left): the reader then connects to
 * the node named and reads there again from the same position (after `ASKING` while the slot is
 * still being imported), so its caller sees every entry once and in order, without a reconnect.
 * Before the cluster client knows its slots, a cluster client is the fallback (it follows redirections itself).
 */
export function blockingReader(redis: Redis, key: string): BlockingReader {
  if (!(redis instanceof Cluster)) {
    const conn = takeIdleReader(redis);
    let pending = 0;
    // Set by disconnect(): the connection closes asynchronously (its status reads `ready` a moment
    // longer), so a reader closed between two reads must not be handed on by release().
    let closed = false;
    return {
      // Lower case: ioredis applies the reply's transformation (RESP3 maps to arrays) by that name.
      xread: async (...args) => {
        pending++;
        try {
          return (await conn.call('xread', ...args)) as XReadReply;
        } finally {
          pending--;
        }
      },
      disconnect: () => {
        closed = true;
        conn.disconnect();
      },
      release: () => {
        if (pending === 0 && !closed) keepIdleReader(redis, conn);
        else conn.disconnect();
      },
      get ended() {
        return conn.status === 'end';
      },
    };
  }
  const options = { ...redis.options.redisOptions, commandTimeout: undefined };
  const connect = (to: string) => {
    const at = /^\[?(.*?)\]?:(\d+)$/.exec(to);
    return new SingleRedis({ ...options, ...(at ? { host: at[1], port: Number(at[2]) } : {}) });
  };
  const owner = redis.slots[keySlot(key)]?.[0];
  let conn: Redis = owner ? connect(owner) : redis.duplicate([], { redisOptions: options });
  // Set after an ASK: the slot is being imported by the node read now, which serves it only after ASKING.
  let asking = false;
  let closed = false;
  return {
    async xread(...args) {
      for (let hop = 0; ; hop++) {
        const c = conn;
        try {
          if (asking) await c.call('asking');
          return (await c.call('xread', ...args)) as XReadReply;
        } catch (err) {
          const to = redirection(err);
          if (!to || closed || hop >= MAX_HOPS) throw err;
          c.disconnect();
          conn = connect(`${to.host}:${to.port}`);
          asking = to.kind === 'ASK';
        }
      }
    },
    disconnect() {
      closed = true;
      conn.disconnect();
    },
    release() {
      this.disconnect();
    },
    get ended() {
      return closed;
    },
  };
}

/** Idle blocking connections kept per command client (a follow ended; the next takes one). */
const idleReaders = new WeakMap<SingleRedis, SingleRedis[]>();
/** At most this many idle blocking connections per client: a burst of followers ending closes the rest. */
const IDLE_READERS = 32;

/** An idle blocking connection of `redis` that is ready, or a new one (a duplicate without command timeout). */
function takeIdleReader(redis: SingleRedis): SingleRedis {
  const idle = idleReaders.get(redis);
  while (idle?.length) {
    const c = idle.pop()!;
    if (c.status === 'ready') return c;
    c.disconnect();
  }
  return redis.duplicate({ commandTimeout: undefined });
}

/** Keeps a ready, idle blocking connection for the next reader; closes it past IDLE_READERS or once its client has ended. */
function keepIdleReader(redis: SingleRedis, conn: SingleRedis): void {
  let idle = idleReaders.get(redis);
  if (!idle) {
    const list: SingleRedis[] = [];
    idle = list;
    idleReaders.set(redis, list);
    // The command client closed (shutdown, a test's teardown): its idle readers go with it.
    redis.once('end', () => {
      for (const c of list.splice(0)) c.disconnect();
    });
  }
  if (conn.status !== 'ready' || redis.status === 'end' || idle.length >= IDLE_READERS) return void conn.disconnect();
  idle.push(conn);
}

/** The masters a cluster client knows (after its first slot refresh); the client itself for one server. */
function servers(redis: Redis): SingleRedis[] {
  if (!(redis instanceof Cluster)) return [redis];
  return redis.nodes('master');
}

/**
 * Reachability for health and the breaker: one server answers PING; on a cluster every master
 * answers `CLUSTER INFO` with `cluster_state:ok`. A master that is down leaves its slots unserved,
 * and a master that says the cluster is down (a slot no master serves, a master it lost) answers
 * every key command with `CLUSTERDOWN` though it still answers PING: either way requests that need
 * Redis would fail, so the breaker opens and they are answered 503 at once.
 */
export async function pingRedis(redis: Redis): Promise<void> {
  const all = servers(redis);
  if (!(redis instanceof Cluster)) {
    await Promise.all(all.map((s) => s.ping()));
    return;
  }
  if (all.length === 0) {
    await redis.ping();
    return;
  }
  await Promise.all(
    all.map(async (s) => {
      const state = /cluster_state:(\w+)/.exec(String(await s.call('CLUSTER', 'INFO')))?.[1];
      if (state !== 'ok')
        throw new Error(`CLUSTERDOWN: ${s.options.host}:${s.options.port} reports cluster_state:${state ?? '?'}`);
    }),
  );
}

/**
 * Who is serving: the server's `run_id`, on a cluster the masters' run ids. It changes when a
 * server restarts or a replica takes over, either of which may have lost the newest writes that
 * nobody had read yet (the search index re-syncs then; src/search/indexer.ts).
 */
export async function serverIdentity(redis: Redis): Promise<string | null> {
  const all = servers(redis);
  if (!all.length) return null;
  const ids = await Promise.all(all.map(async (s) => /run_id:(\w+)/.exec(await s.info('server'))?.[1] ?? '?'));
  return ids.sort().join(',');
}

/**
 * Every key under `pattern` (SCAN, so the server is never blocked; on a cluster each master's keys).
 * For tools and tests that clean up after themselves; the platform never scans.
 */
export async function* scanKeys(redis: Redis, pattern: string): AsyncGenerator<string[]> {
  if (redis instanceof Cluster) await redis.ping(); // the first slot refresh: the masters are known
  for (const s of servers(redis)) {
    for await (const keys of s.scanStream({ match: pattern, count: 500 }) as AsyncIterable<string[]>)
      if (keys.length) yield keys;
  }
}

/** Deletes keys one command per key: on a cluster keys of one call may live on different nodes. */
export async function deleteKeys(redis: Redis, keys: string[]): Promise<void> {
  await Promise.all(keys.map((k) => redis.del(k)));
}

/**
 * A key that lives in the same cluster slot as `key` (which has no hash tag of its own): Redis
 * hashes only what is inside the first `{…}`, so `{<key>}:<name>` hashes like `<key>` itself. A
 * script or transaction may then touch both on a cluster, and `key` keeps the name it always had.
 */
export function sameSlot(key: string, name: string): string {
  if (/[{}]/.test(key)) throw new Error(`sameSlot: "${key}" has a hash tag of its own`);
  return `{${key}}:${name}`;
}
