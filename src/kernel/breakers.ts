import type { Logger } from './logger.js';
import { metrics } from './metrics.js';

/** The platform's dependencies that a request can wait on. */
export type Dependency = 'mongodb' | 'redis' | 'temporal';
export const DEPENDENCIES: readonly Dependency[] = ['mongodb', 'redis', 'temporal'];

/**
 * `p`, or a rejection when it has not settled within `ms`, judged fairly on a busy event loop. A
 * timer that expires while the loop is busy fires in the loop's timers phase, before the poll phase
 * reads the sockets, so an answer that arrived in time would still lose to it: one burst of other
 * work over `ms` made every in-flight ping "time out" and opened the store's breaker for every
 * tenant. The verdict therefore waits one turn of I/O (`setImmediate` runs after the poll phase):
 * an answer already received settles `p` first and wins the race.
 */
export function withinProbeTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  let i: NodeJS.Immediate | undefined;
  const late = new Promise<never>((_, reject) => {
    t = setTimeout(() => {
      i = setImmediate(() => reject(new Error(`no answer within ${ms} ms`)));
    }, ms);
  });
  late.catch(() => undefined); // raced below: only no unhandled rejection once `p` has won
  return Promise.race([p, late]).finally(() => {
    clearTimeout(t);
    if (i) clearImmediate(i);
  });
}

/**
 * How long a dependency's own client may keep a ping the probe has given up on: twice the probe's
 * timeout, so the verdict is the probe's (withinProbeTimeout), and a ping of a stalled dependency is
 * still dropped in the end instead of piling up.
 */
export const pingTimeoutMs = (probeTimeoutMs: number): number => 2 * probeTimeoutMs;

export interface BreakerState {
  open: boolean;
  since: number;
  reason: string | null;
}

/**
 * A breaker per dependency, driven by probes: each dependency is pinged every `intervalMs`; a ping
 * that fails or is not answered within `timeoutMs` (withinProbeTimeout: an answer the busy event loop
 * has received but not yet read still counts) opens its breaker at once, the next answered
 * ping closes it. While a breaker is open, requests that need the dependency are answered 503 at
 * once instead of queueing behind it, and requests already waiting on it are abandoned (listeners),
 * so a stalled or missing store, Redis or Temporal is met with 503s within about
 * `intervalMs + timeoutMs`, not with requests that hang.
 */
export function createBreakers(
  probes: Record<Dependency, () => Promise<unknown>>,
  o: { intervalMs: number; timeoutMs: number; log?: Logger },
) {
  const state = Object.fromEntries(
    DEPENDENCIES.map((d) => [d, { open: false, since: Date.now(), reason: null }]),
  ) as Record<Dependency, BreakerState>;
  const listeners = new Set<(dep: Dependency) => void>();
  const inFlight = new Set<Dependency>();
  let timer: NodeJS.Timeout | undefined;

  const set = (dep: Dependency, open: boolean, reason: string | null) => {
    const s = state[dep];
    if (s.open === open) return;
    state[dep] = { open, since: Date.now(), reason };
    metrics.breakerOpen.set({ dependency: dep }, open ? 1 : 0);
    if (open) {
      o.log?.warn({ dependency: dep, reason }, 'dependency breaker opened: requests that need it answer 503');
      for (const l of listeners) l(dep);
    } else {
      o.log?.info({ dependency: dep }, 'dependency breaker closed');
    }
  };

  async function probe(dep: Dependency): Promise<void> {
    if (inFlight.has(dep)) {
      // The previous ping is still unanswered: past the timeout that is a stall.
      return;
    }
    inFlight.add(dep);
    try {
      await withinProbeTimeout(probes[dep](), o.timeoutMs);
      set(dep, false, null);
    } catch (e) {
      set(dep, true, e instanceof Error ? e.message : String(e));
    } finally {
      inFlight.delete(dep);
    }
  }

  const tick = () => {
    for (const dep of DEPENDENCIES) void probe(dep);
  };

  return {
    /** Starts probing (idempotent); the timer never keeps the process alive. */
    start(): void {
      if (timer) return;
      tick();
      timer = setInterval(tick, o.intervalMs);
      timer.unref();
    },
    stop(): void {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
    isOpen: (dep: Dependency): boolean => state[dep].open,
    state: (dep: Dependency): BreakerState => state[dep],
    /** The first open dependency of `deps`, if any. */
    firstOpen: (deps: readonly Dependency[]): Dependency | undefined => deps.find((d) => state[d].open),
    /** Called with the dependency whenever a breaker opens. Returns the unsubscribe. */
    onOpen(fn: (dep: Dependency) => void): () => void {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    /** Probes now (a request saw a timeout): the breaker reflects it without waiting for the next tick. */
    probeNow: (dep: Dependency): Promise<void> => probe(dep),
  };
}
export type Breakers = ReturnType<typeof createBreakers>;
