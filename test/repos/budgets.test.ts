/**
 * The budget repository (src/usage/budgets.mongo.ts): one budget per target and terms (a unique
 * key), read, changed and removed only within its workspace, paged oldest first; a target is
 * checked to be the workspace's (a neuron: a live one).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { budgetKey, type BudgetDoc, type BudgetRepo } from '../../src/usage/index.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function budget(workspaceId: string, o: Partial<BudgetDoc> = {}): BudgetDoc {
  const now = new Date();
  const b: BudgetDoc = {
    _id: randomUUID(),
    workspaceId,
    key: '',
    scope: 'workspace',
    targetId: null,
    measure: 'tokens',
    period: 'month',
    limit: 1000,
    policy: 'pause',
    name: null,
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
  return { ...b, key: o.key ?? budgetKey(workspaceId, b.scope, b.targetId, b.measure, b.period) };
}

describe.each(h.backends)('budget repository (%s)', (backend) => {
  const repo: BudgetRepo = h.repos(backend).budgets;

  it('creates one budget per key; reads it by id and key only in its workspace', async () => {
    const ws = randomUUID();
    const b = budget(ws, { limit: 12.5, measure: 'usd', name: 'monthly' });
    expect(await repo.create(b)).toBe(true);
    expect(await repo.create({ ...b, _id: randomUUID() })).toBe(false);
    expect(await repo.get(ws, b._id)).toMatchObject({
      limit: 12.5,
      measure: 'usd',
      name: 'monthly',
      createdAt: b.createdAt,
    });
    expect(await repo.get(randomUUID(), b._id)).toBeNull();
    expect((await repo.byKey(ws, b.key))?._id).toBe(b._id);
    expect(await repo.byKey(randomUUID(), b.key)).toBeNull();
    // Concurrent creations of one key: exactly one wins.
    const k = budget(ws, { period: 'day' });
    const outs = await Promise.all([0, 1, 2].map(() => repo.create({ ...k, _id: randomUUID() })));
    expect(outs.filter(Boolean)).toHaveLength(1);
  });

  it('updates and removes only within the workspace', async () => {
    const ws = randomUUID();
    const b = budget(ws);
    await repo.create(b);
    await repo.update(randomUUID(), b._id, { limit: 1 });
    expect((await repo.get(ws, b._id))?.limit).toBe(1000);
    await repo.update(ws, b._id, { limit: 2000, policy: 'fail' });
    expect(await repo.get(ws, b._id)).toMatchObject({ limit: 2000, policy: 'fail' });
    expect(await repo.remove(randomUUID(), b._id)).toBe(false);
    expect(await repo.remove(ws, b._id)).toBe(true);
    expect(await repo.remove(ws, b._id)).toBe(false);

    const c = budget(ws, { period: 'total' });
    await repo.create(c);
    await repo.removeByKey(randomUUID(), c.key);
    expect(await repo.get(ws, c._id)).not.toBeNull();
    await repo.removeByKey(ws, c.key);
    expect(await repo.get(ws, c._id)).toBeNull();
  });

  it("removes a target's budgets only", async () => {
    const ws = randomUUID();
    const link = randomUUID();
    const a = budget(ws, { scope: 'share_token', targetId: link });
    const b = budget(ws, { scope: 'share_token', targetId: link, period: 'day' });
    const keep = budget(ws, { scope: 'share_token', targetId: randomUUID() });
    for (const x of [a, b, keep]) await repo.create(x);
    await repo.removeFor(randomUUID(), 'share_token', link);
    expect(await repo.ofWorkspace(ws)).toHaveLength(3);
    await repo.removeFor(ws, 'share_token', link);
    expect((await repo.ofWorkspace(ws)).map((x) => x._id)).toEqual([keep._id]);
  });

  it('pages oldest first by cursor, filtered by scope and target', async () => {
    const ws = randomUUID();
    const t = Date.now();
    const r = randomUUID();
    const bs = [
      budget(ws, { createdAt: new Date(t) }),
      budget(ws, { scope: 'receptor', targetId: r, createdAt: new Date(t + 1000) }),
      budget(ws, { scope: 'receptor', targetId: randomUUID(), createdAt: new Date(t + 2000) }),
      budget(ws, { scope: 'receptor', targetId: r, period: 'day', createdAt: new Date(t + 3000) }),
    ];
    for (const b of bs) await repo.create(b);
    await repo.create(budget(randomUUID()));
    const p1 = await repo.page(ws, {}, { limit: 3 });
    expect(p1.items.map((b) => b._id)).toEqual(bs.slice(0, 3).map((b) => b._id));
    expect(p1.hasMore).toBe(true);
    const p2 = await repo.page(ws, {}, { limit: 3, cursor: p1.nextCursor! });
    expect(p2.items.map((b) => b._id)).toEqual([bs[3]._id]);
    expect((await repo.page(ws, { scope: 'receptor' }, { limit: 10 })).total).toBe(3);
    expect((await repo.page(ws, { scope: 'receptor', targetId: r }, { limit: 10 })).items.map((b) => b._id)).toEqual([
      bs[1]._id,
      bs[3]._id,
    ]);
    expect(await repo.ofWorkspace(ws, 2)).toHaveLength(2);
  });

  it("checks a target is the workspace's (a neuron must be live)", async () => {
    const ws = randomUUID();
    const receptor = randomUUID();
    const live = randomUUID();
    const deleted = randomUUID();
    await h.db.collection('receptors').insertOne({ _id: receptor as never, workspaceId: ws });
    await h.db.collection('neurons').insertMany([
      { _id: live as never, workspaceId: ws, deletedAt: null },
      { _id: deleted as never, workspaceId: ws, deletedAt: new Date() },
    ]);
    expect(await repo.targetExists(ws, 'receptor', receptor)).toBe(true);
    expect(await repo.targetExists(randomUUID(), 'receptor', receptor)).toBe(false);
    expect(await repo.targetExists(ws, 'neuron', live)).toBe(true);
    expect(await repo.targetExists(ws, 'neuron', deleted)).toBe(false);
    expect(await repo.targetExists(ws, 'share_token', randomUUID())).toBe(false);
  });
});
