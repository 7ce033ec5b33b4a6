import { unavailable } from '../../src/kernel/errors.js';
import { shareOf } from '../../src/kernel/limits.js';
import { metrics } from '../../src/kernel/metrics.js';

interface Waiter {
  admit: () => void;
  refuse: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Admission control for non-streaming requests: at most `maxInFlight` run at once; beyond that a
 * request waits in a bounded queue for at most `maxWaitMs`, and past either bound it is answered
 * 503 with Retry-After at once, before it has done anything. The queue is fair between tenants:
 * each tenant (a workspace; anonymous callers by address) has its own FIFO, served round robin,
 * and may hold at most a quarter of the queue, so one busy workspace cannot starve the others.
 * A tenant also holds at most `tenantSharePercent` of the running slots: past its share its
 * requests wait in its queue even while slots are free, so the others always find room. While
 * another tenant has asked within the last minute, that share shrinks to `sharedSlots`.
 * Streams and health probes never pass through here.
 */
export function createAdmission(o: {
  maxInFlight: number;
  maxQueue: number;
  maxWaitMs: number;
  tenantSharePercent?: number;
  /**
   * While another tenant was admitted within `sharedWindowMs`, a tenant holds at most this many
   * running slots (and its share otherwise): a burst of one workspace stays a short line in the
   * store and the worker instead of a long one every other workspace's request waits behind.
   */
  sharedSlots?: number;
  sharedWindowMs?: number;
  now?: () => number;
}) {
  let inFlight = 0;
  let queued = 0;
  const running = new Map<string, number>(); // running slots per tenant
  const queues = new Map<string, Waiter[]>();
  const order: string[] = []; // tenants with waiters, in round-robin order
  const perTenantMax = Math.max(1, Math.ceil(o.maxQueue / 4));
  const perTenantRunning = shareOf(o.maxInFlight, o.tenantSharePercent ?? 100);
  const sharedRunning = Math.min(perTenantRunning, Math.max(1, o.sharedSlots ?? perTenantRunning));
  const sharedWindowMs = o.sharedWindowMs ?? 60_000;
  const now = o.now ?? Date.now;
  // The two tenants admitted last (distinct), and when: the newest tenant other than any given one is one of them.
  let last = { tenant: '', at: -Infinity };
  let before = { tenant: '', at: -Infinity };
  const seen = (tenant: string) => {
    const at = now();
    if (tenant === last.tenant) last.at = at;
    else {
      before = last;
      last = { tenant, at };
    }
  };
  /** The running slots `tenant` may hold now: fewer while another tenant is active. */
  const capOf = (tenant: string): number => {
    if (sharedRunning === perTenantRunning) return perTenantRunning;
    const other = last.tenant === tenant ? before : last;
    return other.tenant !== '' && other.at > now() - sharedWindowMs ? sharedRunning : perTenantRunning;
  };

  const busy = () => unavailable('The API is at capacity; retry shortly', 1);
  const runningOf = (tenant: string) => running.get(tenant) ?? 0;
  const take = (tenant: string) => {
    inFlight++;
    running.set(tenant, runningOf(tenant) + 1);
  };

  /** Hands free slots to waiting tenants in turn, skipping any tenant at its share. */
  function dispatch(): void {
    while (inFlight < o.maxInFlight) {
      const i = order.findIndex((t) => runningOf(t) < capOf(t));
      if (i < 0) break;
      const tenant = order.splice(i, 1)[0];
      const q = queues.get(tenant)!;
      const w = q.shift()!;
      if (q.length) order.push(tenant);
      else queues.delete(tenant);
      queued--;
      clearTimeout(w.timer);
      take(tenant);
      w.admit();
    }
    metrics.admissionInFlight.set(inFlight);
    metrics.admissionQueued.set(queued);
  }

  function release(tenant: string): void {
    inFlight--;
    const n = runningOf(tenant) - 1;
    if (n > 0) running.set(tenant, n);
    else running.delete(tenant);
    dispatch();
  }

  return {
    /**
     * Waits for a slot for `tenant` (at most `maxWaitMs`, and never past `deadline`); resolves with
     * the release to call when the request ends, or rejects with a 503.
     */
    acquire(tenant: string, deadline: number): Promise<() => void> {
      seen(tenant);
      let released = false;
      const done = () => {
        if (!released) {
          released = true;
          release(tenant);
        }
      };
      // A waiter below its share never waits beside a free slot (dispatch), so a free slot and room
      // in the tenant's share admit at once.
      if (inFlight < o.maxInFlight && runningOf(tenant) < capOf(tenant) && !queues.has(tenant)) {
        take(tenant);
        metrics.admissionInFlight.set(inFlight);
        return Promise.resolve(done);
      }
      const q = queues.get(tenant) ?? [];
      if (queued >= o.maxQueue || q.length >= perTenantMax) {
        metrics.requestsShed.inc({ reason: 'capacity' });
        return Promise.reject(busy());
      }
      return new Promise((resolve, reject) => {
        const wait = Math.max(0, Math.min(o.maxWaitMs, deadline - Date.now()));
        const w: Waiter = {
          admit: () => resolve(done),
          refuse: reject,
          timer: setTimeout(() => {
            const list = queues.get(tenant);
            const i = list?.indexOf(w) ?? -1;
            if (i < 0) return;
            list!.splice(i, 1);
            queued--;
            if (!list!.length) {
              queues.delete(tenant);
              order.splice(order.indexOf(tenant), 1);
            }
            metrics.admissionQueued.set(queued);
            metrics.requestsShed.inc({ reason: 'queue-wait' });
            reject(busy());
          }, wait),
        };
        if (!queues.has(tenant)) {
          queues.set(tenant, q);
          order.push(tenant);
        }
        q.push(w);
        queued++;
        metrics.admissionQueued.set(queued);
      });
    },
    /** Running and waiting requests (for tests and health). */
    load: () => ({ inFlight, queued }),
  };
}
export type Admission = ReturnType<typeof createAdmission>;
