import { describe, expect, it } from 'vitest';
import { createAdmission } from '../../api/middleware/admission.js';
import { AppError } from '../../src/kernel/errors.js';

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

  it('while another tenant is active, a tenant holds only the shared slots; alone again, its whole share', async () => {
    let clock = 1_000_000;
    const a = createAdmission({
      maxInFlight: 10,
      maxQueue: 40,
      maxWaitMs: 10_000,
      tenantSharePercent: 100,
      sharedSlots: 2,
      sharedWindowMs: 60_000,
      now: () => clock,
    });
    // Alone, the busy tenant runs up to its share.
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await a.acquire('busy', far()));
    expect(a.load()).toEqual({ inFlight: 4, queued: 0 });
    // Another tenant asks: from now on the busy one's new requests wait until it holds fewer than 2.
    held.push(await a.acquire('quiet', far()));
    let admitted = 0;
    const waiting = [a.acquire('busy', far()), a.acquire('busy', far())].map((p) =>
      p.then((rel) => {
        admitted++;
        return rel;
      }),
    );
    await new Promise((r) => setTimeout(r, 0));
    expect(a.load()).toEqual({ inFlight: 5, queued: 2 });
    held[0]();
    held[1]();
    held[2]();
    await new Promise((r) => setTimeout(r, 0));
    // Down to one running: one waiter may run (two in all), not both.
    expect(admitted).toBe(1);
    // The quiet tenant has not asked for a minute: the busy one has its whole share again.
    clock += 61_000;
    held[3]();
    await Promise.all(waiting);
    expect(admitted).toBe(2);
    // The quiet tenant itself is never held to fewer than the shared slots.
    expect(a.load().queued).toBe(0);
  });
});
