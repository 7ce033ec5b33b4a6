/**
 * The intervention repository (src/interventions/store.mongo.ts): decoded answers and payloads, workspace
 * scoping, lookup by delivery token (new and older token forms), paging newest first under each
 * filter, bounded counts, outcomes and closes recorded only in the workspace.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { newDeliveryToken, tokenKey, type DeliveryDoc, type Intervention } from '../../src/interventions/model.js';
import type { InterventionStore as InterventionRepo } from '../../src/interventions/store.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function delivery(token: string): DeliveryDoc {
  return { id: randomUUID(), channel: 'link', token, status: 'pending', createdAt: new Date(), respondedAt: null };
}

function intervention(workspaceId: string, o: Partial<Intervention> = {}): Intervention {
  const _id = o._id ?? randomUUID();
  const now = new Date();
  return {
    _id,
    workspaceId,
    brainId: 'b1',
    jobId: randomUUID(),
    traceId: null,
    pathwayId: null,
    nodeIndex: 2,
    kind: 'approval',
    title: 'Approve?',
    prompt: 'Ship it?',
    options: ['approve', 'reject'],
    status: 'pending',
    action: null,
    comment: null,
    fields: null,
    payload: { tool: 'send', args: { 'a.b': [[1]], $x: 'y' } },
    respondedBy: null,
    respondedAt: null,
    expiresAt: new Date('2027-02-03T04:05:06.007Z'),
    deliveries: [delivery(newDeliveryToken(_id))],
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

describe.each(h.backends)('intervention repository (%s)', (backend) => {
  const repo: InterventionRepo = h.repos(backend).interventions;

  it('inserts and reads an intervention decoded, only in its workspace; a duplicate id is refused', async () => {
    const ws = randomUUID();
    const i = intervention(ws);
    await repo.insert(i);
    await expect(repo.insert(i)).rejects.toThrow();
    const got = await repo.get(ws, i._id);
    expect(got).toEqual(i);
    expect(await repo.get(randomUUID(), i._id)).toBeNull();
    expect(await repo.get(ws, randomUUID())).toBeNull();
  });

  it('finds an intervention by a delivery token of either form', async () => {
    const ws = randomUUID();
    const i = intervention(ws);
    await repo.insert(i);
    const token = i.deliveries[0].token;
    expect(tokenKey(token)).toBe(i._id);
    expect((await repo.byToken(token))?._id).toBe(i._id);
    expect(await repo.byToken(newDeliveryToken(randomUUID()))).toBeNull();

    const legacy = 'A'.repeat(22) + randomUUID().replace(/-/g, '').slice(0, 10);
    const old = intervention(ws, { deliveries: [delivery(legacy)] });
    await repo.insert(old);
    expect(legacy).toHaveLength(32);
    expect((await repo.byToken(legacy))?._id).toBe(old._id);
    expect(await repo.byToken('B'.repeat(32))).toBeNull();
    expect(await repo.byToken('not a token')).toBeNull();
  });

  it('records an outcome with its answered fields, only in the workspace', async () => {
    const ws = randomUUID();
    const i = intervention(ws);
    await repo.insert(i);
    const at = new Date('2026-06-07T08:09:10.011Z');
    const outcome = {
      status: 'approved' as const,
      action: 'approve',
      comment: 'ok',
      fields: { amount: 3, nested: { 'k.k': [[null]] } },
      respondedBy: 'user-1',
      respondedAt: at,
      deliveries: [{ ...i.deliveries[0], status: 'responded' as const, respondedAt: at }],
      updatedAt: at,
    };
    await repo.recordOutcome(randomUUID(), i._id, outcome);
    expect((await repo.get(ws, i._id))?.status).toBe('pending');
    await repo.recordOutcome(ws, i._id, outcome);
    expect(await repo.get(ws, i._id)).toMatchObject(outcome);
    expect((await repo.get(ws, i._id))?.payload).toEqual(i.payload);
  });

  it("closes an intervention with its deliveries; the job's pending ones are listed", async () => {
    const ws = randomUUID();
    const job = randomUUID();
    const a = intervention(ws, { jobId: job });
    const b = intervention(ws, { jobId: job });
    await repo.insert(a);
    await repo.insert(b);
    await repo.insert(intervention(randomUUID(), { jobId: job }));
    expect((await repo.pendingOfJob(ws, job)).map((i) => i._id).sort()).toEqual([a._id, b._id].sort());
    const closed = a.deliveries.map((d) => ({ ...d, status: 'closed' as const }));
    await repo.close(randomUUID(), a._id, 'cancelled', closed);
    expect((await repo.get(ws, a._id))?.status).toBe('pending');
    await repo.close(ws, a._id, 'cancelled', closed);
    expect(await repo.get(ws, a._id)).toMatchObject({ status: 'cancelled', deliveries: closed });
    expect((await repo.pendingOfJob(ws, job)).map((i) => i._id)).toEqual([b._id]);
  });

  it('pages newest first by cursor under each filter; counts up to the cap', async () => {
    const ws = randomUUID();
    const job = randomUUID();
    const t = Date.now();
    const is = [0, 1, 2, 3, 4].map((n) =>
      intervention(ws, {
        createdAt: new Date(t + n * 1000),
        brainId: n % 2 ? 'b2' : 'b1',
        status: n === 4 ? 'expired' : 'pending',
        jobId: n < 2 ? job : randomUUID(),
        traceId: n === 3 ? 'tr-1' : null,
      }),
    );
    for (const i of is) await repo.insert(i);
    await repo.insert(intervention(randomUUID()));
    const ids = (p: { items: Intervention[] }) => p.items.map((i) => i._id);
    const p1 = await repo.page(ws, {}, { limit: 2 });
    expect(ids(p1)).toEqual([is[4]._id, is[3]._id]);
    const p2 = await repo.page(ws, {}, { limit: 2, cursor: p1.nextCursor! });
    expect(ids(p2)).toEqual([is[2]._id, is[1]._id]);
    const p3 = await repo.page(ws, {}, { limit: 2, cursor: p2.nextCursor! });
    expect(ids(p3)).toEqual([is[0]._id]);
    expect(p3.hasMore).toBe(false);
    expect(ids(await repo.page(ws, { brainId: 'b2' }, { limit: 10 }))).toEqual([is[3]._id, is[1]._id]);
    expect(ids(await repo.page(ws, { status: 'expired' }, { limit: 10 }))).toEqual([is[4]._id]);
    expect(ids(await repo.page(ws, { jobId: job }, { limit: 10 }))).toEqual([is[1]._id, is[0]._id]);
    expect(ids(await repo.page(ws, { traceId: 'tr-1' }, { limit: 10 }))).toEqual([is[3]._id]);
    expect(ids(await repo.page(ws, { brainId: 'b1', status: 'pending' }, { limit: 10 }))).toEqual([
      is[2]._id,
      is[0]._id,
    ]);
    expect((await repo.page(ws, {}, { limit: 2, offset: 4 })).items.map((i) => i.payload)).toEqual([is[0].payload]);
    expect(await repo.countUpTo(ws, { status: 'pending' })).toBe(4);
    expect(await repo.countUpTo(randomUUID(), {})).toBe(0);
  });
});
