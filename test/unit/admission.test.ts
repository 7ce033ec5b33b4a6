import { describe, expect, it } from 'vitest';
import { createAdmission } from '../../api/middleware/admission.js';
import { AppError } from '../../src/errors.js';

const far = () => Date.now() + 60_000;

describe('admission control', () => {
  it('runs up to the bound at once, queues beyond it, and refuses past the queue with a 503', async () => {
    const a = createAdmission({ maxInFlight: 2, maxQueue: 2, maxWaitMs: 10_000 });
    const r1 = await a.acquire('w1', far());
    await a.acquire('w2', far());
    const queued = [a.acquire('w3', far()), a.acquire('w4', far())];
    expect(a.load()).toEqual({ inFlight: 2, queued: 2 });
    const refused = await a.acquire('w5', far()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(503);
    expect((refused as AppError).headers['Retry-After']).toBe('1');
    r1();
    await queued[0];
    expect(a.load()).toEqual({ inFlight: 2, queued: 1 });
  });

  it('serves tenants round robin, so a busy workspace does not starve another', async () => {
    const a = createAdmission({ maxInFlight: 1, maxQueue: 40, maxWaitMs: 10_000 });
    const first = await a.acquire('busy', far());
    const order: string[] = [];
    const releases: (() => void)[] = [first];
    const wait = (who: string) =>
      a.acquire(who.replace(/\d+$/, ''), far()).then((rel) => {
        order.push(who);
        releases.push(rel);
      });
    const waiting = [wait('busy1'), wait('busy2'), wait('busy3'), wait('quiet1')];
    for (let i = 0; i < 4; i++) {
      releases.shift()!();
      await new Promise((r) => setTimeout(r, 0));
    }
    await Promise.all(waiting);
    expect(order).toEqual(['busy1', 'quiet1', 'busy2', 'busy3']);
  });

  it('one tenant may hold at most a quarter of the queue', async () => {
    const a = createAdmission({ maxInFlight: 1, maxQueue: 8, maxWaitMs: 10_000 });
    await a.acquire('x', far());
    const mine = [a.acquire('busy', far()), a.acquire('busy', far())];
    const third = await a.acquire('busy', far()).catch((e: unknown) => e);
    expect((third as AppError).status).toBe(503);
    const other = a.acquire('other', far());
    expect(a.load().queued).toBe(3);
    void mine;
    void other;
  });

  it('one tenant holds at most its share of the running slots: past it, it waits beside free slots another tenant takes', async () => {
    const a = createAdmission({ maxInFlight: 4, maxQueue: 40, maxWaitMs: 10_000, tenantSharePercent: 50 });
    const busy = [await a.acquire('busy', far()), await a.acquire('busy', far())];
    let third = false;
    const waiting = a.acquire('busy', far()).then((rel) => {
      third = true;
      return rel;
    });
    await new Promise((r) => setTimeout(r, 0));
    expect(third).toBe(false);
    expect(a.load()).toEqual({ inFlight: 2, queued: 1 });
    // The quiet tenant finds room at once.
    await a.acquire('quiet', far());
    expect(a.load()).toEqual({ inFlight: 3, queued: 1 });
    // One of the busy tenant's requests ends: its waiter takes the slot.
    busy[0]();
    (await waiting)();
    expect(third).toBe(true);
  });

  it('a queued request waits at most maxWaitMs', async () => {
    const a = createAdmission({ maxInFlight: 1, maxQueue: 8, maxWaitMs: 50 });
    await a.acquire('x', far());
    const t0 = Date.now();
    const e = await a.acquire('y', far()).catch((err: unknown) => err);
    expect((e as AppError).status).toBe(503);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(a.load().queued).toBe(0);
  });
});
