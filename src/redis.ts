import { Redis } from 'ioredis';

/**
 * One command connection per process. A command not answered within `commandTimeoutMs` fails
 * (queued ones too, while the connection is down), so no caller waits on Redis longer than that.
 */
export function createRedis(url: string, o: { commandTimeoutMs?: number } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    commandTimeout: o.commandTimeoutMs,
  });
}

/** A connection of its own for a blocking reader (XREAD BLOCK): no command timeout, the block bounds it. */
export const blockingReader = (redis: Redis): Redis => redis.duplicate({ commandTimeout: undefined });
export type { Redis };
