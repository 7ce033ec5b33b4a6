import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Config } from '../../src/config.js';
import { rateLimited } from '../../src/errors.js';

/**
 * Per-credential rate limiting in Redis (rate-limiter-flexible: atomic, shared by every API
 * instance). Anonymous callers are limited per IP. When Redis is unreachable the library's
 * insurance limiter (per process, in memory) takes over, so health can still answer 503.
 */
export function createRateLimiter(redis: Redis, config: Config) {
  const limiter = new RateLimiterRedis({
    storeClient: redis, keyPrefix: `${config.REDIS_PREFIX}rl`, points: config.RATE_LIMIT_POINTS, duration: config.RATE_LIMIT_DURATION_S,
    insuranceLimiter: new RateLimiterMemory({ points: config.RATE_LIMIT_POINTS, duration: config.RATE_LIMIT_DURATION_S }),
  });
  return async (key: string): Promise<void> => {
    try {
      await limiter.consume(key);
    } catch (e) {
      if (e instanceof RateLimiterRes) throw rateLimited(e.msBeforeNext / 1000);
      throw e;
    }
  };
}
export type RateLimit = ReturnType<typeof createRateLimiter>;
