import { Cluster, Redis as SingleRedis, type RedisOptions } from 'ioredis';
import type { Config } from './config.js';

/**
 * A Redis client of either topology: one server (`REDIS_URL`) or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`, or `REDIS_URL=redis+cluster://…`; docs/scaling.md). Both speak the same
 * commands; on a cluster every command, script and transaction must keep its keys in one hash
 * slot, which the key builders see to (src/streams.ts, src/feed.ts, src/db/usage-counters.ts).
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

/**
 * A connection of its own for a blocking reader (XREAD BLOCK) of `key`: no command timeout, the
 * block bounds it. On a cluster it is one connection to the master that holds the key's slot (a
 * reader is made per SSE request: a cluster client of its own would connect to every master and
 * fetch the slot table first). If the slot moves (a failover, a resharding), its reads fail with
 * MOVED and the reader is made again: an SSE client reconnects with its cursor, the feed's
 * followers retry. Before the cluster client knows its slots, a cluster client is the fallback.
 */
export function blockingReader(redis: Redis, key: string): Redis {
  if (!(redis instanceof Cluster)) return redis.duplicate({ commandTimeout: undefined });
  const owner = redis.slots[keySlot(key)]?.[0];
  const at = owner ? /^(.*):(\d+)$/.exec(owner) : null;
  if (!at) return redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, commandTimeout: undefined } });
  return new SingleRedis({
    ...redis.options.redisOptions,
    host: at[1],
    port: Number(at[2]),
    commandTimeout: undefined,
  });
}

/** The masters a cluster client knows (after its first slot refresh); the client itself for one server. */
function servers(redis: Redis): SingleRedis[] {
  if (!(redis instanceof Cluster)) return [redis];
  return redis.nodes('master');
}

/**
 * Reachability for health and the breaker: one server answers PING; on a cluster every master does
 * (a master down leaves its slots unserved, so requests that need them would fail).
 */
export async function pingRedis(redis: Redis): Promise<void> {
  const all = servers(redis);
  if (redis instanceof Cluster && all.length === 0) await redis.ping();
  else await Promise.all(all.map((s) => s.ping()));
}

/**
 * Who is serving: the server's `run_id`, on a cluster the masters' run ids. It changes when a
 * server restarts or a replica takes over, either of which may have lost the newest writes that
 * nobody had read yet (the search index re-syncs then; src/services/search-index.ts).
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
