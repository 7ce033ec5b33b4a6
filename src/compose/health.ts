import type { Deps } from './deps.js';
import { VERSION } from '../kernel/config.js';
import { DEPENDENCIES, type Dependency } from '../kernel/breakers.js';
import { pingRedis } from '../kernel/redis.js';

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

/**
 * Reachability of the three real components; any one down makes the platform unhealthy. A
 * dependency whose breaker is open (src/kernel/breakers.ts) is down at once, without waiting on it; the
 * others are pinged, each within the probe timeout, so health answers within about a second even
 * while a component stalls.
 */
export function createHealthService({
  db,
  redis,
  temporal,
  breakers,
  config,
}: Pick<Deps, 'db' | 'redis' | 'temporal' | 'breakers' | 'config'>) {
  const pings: Record<Dependency, () => Promise<unknown>> = {
    mongodb: () => db.command({ ping: 1 }, { timeoutMS: config.BREAKER_PROBE_TIMEOUT_MS }),
    redis: () => pingRedis(redis),
    temporal: () =>
      temporal.connection.withDeadline(Date.now() + config.BREAKER_PROBE_TIMEOUT_MS, () =>
        temporal.connection.workflowService.getSystemInfo({}),
      ),
  };
  return {
    version: VERSION,
    async check(): Promise<{ healthy: boolean; components: Record<Dependency, 'up' | 'down'> }> {
      const probe = async (dep: Dependency) => {
        if (breakers.isOpen(dep)) return 'down' as const;
        try {
          await withTimeout(pings[dep](), config.BREAKER_PROBE_TIMEOUT_MS);
          return 'up' as const;
        } catch {
          return 'down' as const;
        }
      };
      const states = await Promise.all(DEPENDENCIES.map(probe));
      const components = Object.fromEntries(DEPENDENCIES.map((d, i) => [d, states[i]!])) as Record<
        Dependency,
        'up' | 'down'
      >;
      return { healthy: states.every((s) => s === 'up'), components };
    },
  };
}
