import { metrics } from '../../src/kernel/metrics.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Redis } from '../../src/kernel/redis.js';
import type { Context } from 'koa';
import type { Config } from '../../src/kernel/config.js';
import { AppError, rateLimited } from '../../src/kernel/errors.js';
import { bestEffort } from '../../src/kernel/best-effort.js';
import type { Logger } from '../../src/kernel/logger.js';

/** One limit: so many points per window. */
export interface Limit {
  points: number;
  durationS: number;
}

/**
 * Rate limiting in Redis (rate-limiter-flexible: atomic, shared by every API instance): per
 * credential (an API key may carry its own admin-set limit), per client address for anonymous
 * callers, and for failed authentications per client address (each bad credential costs a
 * lookup, so guessing is limited before it reaches the store; a credential that authenticates is
 * never refused by it, see api/route.ts). Every limited response carries
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
        storeClient: redis,
        keyPrefix: `${config.REDIS_PREFIX}rl:${name}`,
        points: l.points,
        duration: l.durationS,
        insuranceLimiter: new RateLimiterMemory({ points: l.points, duration: l.durationS }),
      });
      limiters.set(id, rl);
    }
    return rl;
  };
  const standard: Limit = { points: config.RATE_LIMIT_POINTS, durationS: config.RATE_LIMIT_DURATION_S };
  const perWorkspace: Limit = {
    points: config.WORKSPACE_RATE_LIMIT_POINTS ?? 4 * config.RATE_LIMIT_POINTS,
    durationS: config.RATE_LIMIT_DURATION_S,
  };
  const authFailures: Limit = { points: config.AUTH_FAILURES_PER_MINUTE, durationS: 60 };

  const tooManyFailures = (res: RateLimiterRes): AppError => {
    metrics.rateLimited.inc({ reason: 'auth-failures' });
    return new AppError('RATE_LIMIT', 429, 'Too many failed authentication attempts from this address', {
      'Retry-After': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))),
    });
  };

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
    /**
     * Counts one request of a workspace, all its credentials together, against the workspace's
     * share of the API (WORKSPACE_RATE_LIMIT_POINTS): a 429 past it. The RateLimit-* headers stay
     * the credential's own, except on this refusal.
     */
    async consumeWorkspace(ctx: Context, workspaceId: string): Promise<void> {
      try {
        await limiter('ws', perWorkspace).consume(workspaceId);
      } catch (e) {
        if (!(e instanceof RateLimiterRes)) throw e;
        headers(ctx, perWorkspace, e);
        metrics.rateLimited.inc({ reason: 'workspace' });
        throw rateLimited(e.msBeforeNext / 1000);
      }
    },
    /**
     * The 429 for a client address that has failed authentication too often, or undefined while
     * it is within its limit. Callers throw it only for a credential not recently seen valid
     * (api/route.ts): failures slow further failures, never a valid credential.
     */
    async authFailureBlock(ctx: Context): Promise<AppError | undefined> {
      const res = await limiter('authfail', authFailures).get(`ip:${ctx.ip}`);
      return res && res.consumedPoints >= authFailures.points ? tooManyFailures(res) : undefined;
    },
    /** Records one failed authentication of the address; the 429 when that put it over its limit. */
    async recordAuthFailure(ctx: Context): Promise<AppError | undefined> {
      const res = await bestEffort(
        ctx.state.log as Logger | undefined,
        'recording a failed authentication',
        limiter('authfail', authFailures).penalty(`ip:${ctx.ip}`, 1),
      );
      return res && res.consumedPoints > authFailures.points ? tooManyFailures(res) : undefined;
    },
  };
}
export type RateLimit = ReturnType<typeof createRateLimiter>;
