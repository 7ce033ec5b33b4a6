import type { Client, Connection } from '@temporalio/client';
import type { Db, MongoClient } from 'mongodb';
import { createBreakers, pingTimeoutMs, type Breakers, type Dependency } from '../kernel/breakers.js';
import type { Config } from '../kernel/config.js';
import { connectMongo, createStorePing } from '../kernel/store/client.js';
import { createRepos, detectBackend, type Repos } from './stores.js';
import type { Logger } from '../kernel/logger.js';
import { createRedis, pingRedis, redisTarget, type Redis } from '../kernel/redis.js';
import { FeedPartitionsMismatch } from '../kernel/feed.js';
import { createStreams, type Streams } from '../kernel/streams.js';
import { connectTemporal } from '../kernel/temporal/client.js';

/**
 * The one typed bag of dependencies shared by the API and the worker (docs/architecture.md).
 * Built once per process; services take the parts they need.
 */
export interface Deps {
  config: Config;
  log: Logger;
  mongo: MongoClient;
  db: Db;
  redis: Redis;
  streams: Streams;
  repos: Repos;
  temporal: { connection: Connection; client: Client };
  /** One reachability ping per dependency: what the breakers probe and health asks. */
  pings: Record<Dependency, () => Promise<unknown>>;
  /** Closes the store ping's own connection (createStorePing), if a ping made one. */
  closePings: () => Promise<void>;
  /** Probe-driven breakers per dependency (src/kernel/breakers.ts); the API starts them, the worker does not. */
  breakers: Breakers;
}

/**
 * Connects to MongoDB, Redis and Temporal. The store's indexes are created by start-up's upgrade
 * step (src/releases: after the data migrations), which every entry point runs next.
 */
export async function createDeps(config: Config, log: Logger): Promise<Deps> {
  const { client: mongo, db } = await connectMongo(config.MONGODB_URI, config.MONGODB_DB);
  const backend = await detectBackend(db);
  log.info({ backend }, 'document store');
  const redis = createRedis(redisTarget(config), { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS });
  const temporal = await connectTemporal(config);
  // One ping per dependency, for the breakers and for health; the probe's timeout judges it (pingTimeoutMs).
  const keepMs = pingTimeoutMs(config.BREAKER_PROBE_TIMEOUT_MS);
  const storePing = createStorePing(config.MONGODB_URI, config.MONGODB_DB, keepMs);
  const pings: Record<Dependency, () => Promise<unknown>> = {
    mongodb: storePing.ping,
    redis: () => pingRedis(redis),
    temporal: () =>
      temporal.connection.withDeadline(Date.now() + keepMs, () =>
        temporal.connection.workflowService.getSystemInfo({}),
      ),
  };
  const breakers = createBreakers(pings, {
    intervalMs: config.BREAKER_PROBE_INTERVAL_MS,
    timeoutMs: config.BREAKER_PROBE_TIMEOUT_MS,
    log,
  });
  const streams = createStreams(redis, config.REDIS_PREFIX, {
    feedMaxLen: config.RESOURCE_FEED_MAXLEN,
    feedPartitions: config.RESOURCE_FEED_PARTITIONS,
  });
  try {
    await claimFeedPartitions(streams, log);
  } catch (e) {
    await Promise.allSettled([mongo.close(), redis.quit(), temporal.connection.close(), storePing.close()]);
    throw e;
  }
  return {
    config,
    log,
    mongo,
    db,
    redis,
    streams,
    repos: createRepos(db, { backend }),
    temporal,
    pings,
    closePings: storePing.close,
    breakers,
  };
}

/** How long a start waits for Redis to record or confirm the feed's partition count. */
const PARTITIONS_CHECK_MS = 30_000;

/**
 * Every process on one Redis must use the same RESOURCE_FEED_PARTITIONS (docs/scaling.md): the first
 * records its count, the others compare. A mismatch refuses the start (FeedPartitionsMismatch, which
 * the entry points print as one line); a Redis not reachable yet is waited for, up to 30 s.
 */
async function claimFeedPartitions(streams: Streams, log: Logger): Promise<void> {
  const until = Date.now() + PARTITIONS_CHECK_MS;
  for (;;) {
    try {
      return await streams.feed.claimPartitions();
    } catch (e) {
      if (e instanceof FeedPartitionsMismatch || Date.now() > until) throw e;
      log.warn({ err: (e as Error).message }, 'could not check the resource feed partition count in Redis; retrying');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Closes every connection; used by graceful shutdown and test teardown. */
export async function closeDeps(deps: Deps): Promise<void> {
  deps.breakers.stop();
  await Promise.allSettled([
    deps.mongo.close(),
    deps.redis.quit(),
    deps.temporal.connection.close(),
    deps.closePings(),
  ]);
}
