import type { Deps } from './deps.js';
import { VERSION } from '../kernel/config.js';
import { DEPENDENCIES, withinProbeTimeout, type Dependency } from '../kernel/breakers.js';

/**
 * Reachability of the three real components; any one down makes the platform unhealthy. A
 * dependency whose breaker is open (src/kernel/breakers.ts) is down at once, without waiting on it; the
 * others are pinged (the breakers' own pings), each within the probe timeout, so health answers within
 * about a second even while a component stalls.
 */
export function createHealthService({ pings, breakers, config }: Pick<Deps, 'pings' | 'breakers' | 'config'>) {
  return {
    version: VERSION,
    async check(): Promise<{ healthy: boolean; components: Record<Dependency, 'up' | 'down'> }> {
      const probe = async (dep: Dependency) => {
        if (breakers.isOpen(dep)) return 'down' as const;
        try {
          await withinProbeTimeout(pings[dep](), config.BREAKER_PROBE_TIMEOUT_MS);
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
