import type { Deps } from '../deps.js';
import { VERSION } from '../config.js';

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

/** Reachability of the three real components; any one down makes the platform unhealthy. */
export function createHealthService({ db, redis, temporal }: Pick<Deps, 'db' | 'redis' | 'temporal'>) {
  return {
    version: VERSION,
    async check(): Promise<{ healthy: boolean; components: Record<'mongodb' | 'redis' | 'temporal', 'up' | 'down'> }> {
      const probe = async (fn: () => Promise<unknown>) => { try { await withTimeout(fn(), 2_000); return 'up' as const; } catch { return 'down' as const; } };
      const [mongodb, r, t] = await Promise.all([
        probe(() => db.command({ ping: 1 })),
        probe(() => redis.ping()),
        probe(() => temporal.connection.workflowService.getSystemInfo({})),
      ]);
      const components = { mongodb, redis: r, temporal: t };
      return { healthy: Object.values(components).every((s) => s === 'up'), components };
    },
  };
}
