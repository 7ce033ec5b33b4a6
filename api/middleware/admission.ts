import { unavailable } from '../../src/errors.js';
import { metrics } from '../../src/metrics.js';

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
 * Streams and health probes never pass through here.
 */
export function createAdmission(o: { maxInFlight: number; maxQueue: number; maxWaitMs: number }) {
  let inFlight = 0;
  let queued = 0;
  const queues = new Map<string, Waiter[]>();
  const order: string[] = []; // tenants with waiters, in round-robin order
  const perTenantMax = Math.max(1, Math.ceil(o.maxQueue / 4));

  const busy = () => unavailable('The API is at capacity; retry shortly', 1);

  function release(): void {
    inFlight--;
    // Hand the slot to the next tenant in turn.
    while (order.length) {
      const tenant = order.shift()!;
      const q = queues.get(tenant)!;
      const w = q.shift()!;
      if (q.length) order.push(tenant);
      else queues.delete(tenant);
      queued--;
      clearTimeout(w.timer);
      inFlight++;
      w.admit();
      break;
    }
    metrics.admissionInFlight.set(inFlight);
    metrics.admissionQueued.set(queued);
  }

  return {
    /**
     * Waits for a slot for `tenant` (at most `maxWaitMs`, and never past `deadline`); resolves with
     * the release to call when the request ends, or rejects with a 503.
     */
    acquire(tenant: string, deadline: number): Promise<() => void> {
      let released = false;
      const done = () => {
        if (!released) {
          released = true;
          release();
        }
      };
      if (inFlight < o.maxInFlight && queued === 0) {
        inFlight++;
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
