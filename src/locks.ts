import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * A short mutual-exclusion lock in Redis (SET NX PX + compare-and-delete release).
 * Why: FerretDB 1.x applies a filtered update as read-modify-write without re-checking the
 * filter, so concurrent `$inc`s or guarded transitions on one document can lose writes. The
 * few documents that take concurrent writes (a trace's counters, a job's state) are changed
 * under this lock; on MongoDB it costs one round trip. The lease bounds a crashed holder.
 */
export function createLocks(redis: Redis, prefix: string) {
  return async function withLock<T>(name: string, fn: () => Promise<T>, leaseMs = 10_000, waitMs = 10_000): Promise<T> {
    const key = `${prefix}lock:${name}`;
    const token = randomUUID();
    const deadline = Date.now() + waitMs;
    for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
      if ((await redis.set(key, token, 'PX', leaseMs, 'NX')) === 'OK') break;
      if (Date.now() > deadline) throw new Error(`lock ${name} is busy`);
      await new Promise((r) => setTimeout(r, delay));
    }
    try {
      return await fn();
    } finally {
      await redis.eval(RELEASE, 1, key, token).catch(() => undefined);
    }
  };
}
export type WithLock = ReturnType<typeof createLocks>;
