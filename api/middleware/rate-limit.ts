import { metrics } from '../../src/metrics.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Context } from 'koa';
import type { Config } from '../../src/config.js';
import { AppError, rateLimited } from '../../src/errors.js';

/** One limit: so many points per window. */
export interface Limit { points: number; durationS: number }

/**
 * Rate limiting in Redis (rate-limiter-flexible: atomic, shared by every API instance): per
 * credential (an API key may carry its own admin-set limit), per client address for anonymous
 * callers, and for failed authentications per client address (each bad credential costs a
 * lookup, so guessing is limited before it reaches the store). Every limited response carries
 * the standard `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` headers; a 429
 * carries `Retry-After`. When Redis is unreachable the library's insurance limiter (per
 * process, in memory) takes over, so health can still answer 503.
 */
export function createRateLimiter(redis: Redis, config: Config) {
  const limiters = new Map<string, RateLimiterRedis>();
  const limiter = (name: string, l: Limit) => {
    const id = `${name}:${l.points}:${l.durationS}`;
    let rl = limiters.get(id);
    if (!rl) {
      rl = new RateLimiterRedis({
        storeClient: redis, keyPrefix: `${config.REDIS_PREFIX}rl:${name}`, points: l.points, duration: l.durationS,
        insuranceLimiter: new RateLimiterMemory({ points: l.points, duration: l.durationS }),
      });
      limiters.set(id, rl);
    }
    return rl;
  };
  const standard: Limit = { points: config.RATE_LIMIT_POINTS, durationS: config.RATE_LIMIT_DURATION_S };
  const authFailures: Limit = { points: config.AUTH_FAILURES_PER_MINUTE, durationS: 60 };

  const headers = (ctx: Context, l: Limit, res: RateLimiterRes) => {
    ctx.set('RateLimit-Limit', String(l.points));
    ctx.set('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)));
    ctx.set('RateLimit-Reset', String(Math.ceil(res.msBeforeNext / 1000)));
  };

  return {
    /** Counts one request of `key` (a credential or an address) against its limit. */
    async consume(ctx: Context, key: string, own?: Limit): Promise<void> {
      const l = own ?? standard;
      try {
        headers(ctx, l, await limiter('req', l).consume(key));
      } catch (e) {
        if (!(e instanceof RateLimiterRes)) throw e;
        headers(ctx, l, e);
        metrics.rateLimited.inc({ reason: key.split(':')[0] });
        throw rateLimited(e.msBeforeNext / 1000);
      }
    },
    /** 429 while the address has failed authentication too often (checked before any lookup). */
    async checkAuthFailures(ctx: Context): Promise<void> {
      const res = await limiter('authfail', authFailures).get(`ip:${ctx.ip}`);
      if (res && res.consumedPoints >= authFailures.points) {
        metrics.rateLimited.inc({ reason: 'auth-failures' });
        throw new AppError('RATE_LIMIT', 429, 'Too many failed authentication attempts from this address', { 'Retry-After': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))) });
      }
    },
    /** Records one failed authentication of the address. */
    async recordAuthFailure(ctx: Context): Promise<void> {
      await limiter('authfail', authFailures).penalty(`ip:${ctx.ip}`, 1).catch(() => undefined);
    },
  };
}
export type RateLimit = ReturnType<typeof createRateLimiter>;
