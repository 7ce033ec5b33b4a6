/**
 * The receptor repository (src/receptors/store.mongo.ts, src/receptors/firings.mongo.ts): decoded receptors,
 * firings, bindings and action plans, workspace scoping, claims by unique key, paging.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReceptorRepo } from '../../src/receptors/index.js';
import type { ActionPlan, ChannelBinding, Firing, Receptor } from '../../src/receptors/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function receptor(workspaceId: string, slug: string, o: Partial<Receptor> = {}): Receptor {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    slug,
    activeChannels: ['http'],
    config: { name: slug, 'a.b': [[1]] },
    isActive: true,
    scope: 'brain',
    sourceConfig: { stimulus_keys: [], activation: 'event' },
    executableTarget: { kind: 'neuron', id: randomUUID() },
    sensoryReflexId: null,
    createdAt: now,
    updatedAt: now,
    origin: 'target',
    stimulusKeys: [],
    activation: null,
    timing: null,
    schedulePause: null,
    createdBy: null,
    ...o,
  };
}

describe.each(h.backends)('receptor repository (%s)', (backend) => {
  const repo: ReceptorRepo = h.repos(backend).receptors;
  const ws = randomUUID();

  it('creates receptors (a taken slug refused) and reads them decoded, only in their workspace', async () => {
    const r = receptor(ws, 'alpha');
    expect(await repo.create(r)).toBe(true);
    expect(await repo.create({ ...r, _id: randomUUID() })).toBe(false);
    expect(await repo.findById(ws, r._id)).toMatchObject({
      slug: 'alpha',
      config: r.config,
      sourceConfig: r.sourceConfig,
    });
    expect(await repo.findBySlug(ws, 'alpha')).toMatchObject({ _id: r._id });
    expect(await repo.findById(randomUUID(), r._id)).toBeNull();
    expect(await repo.exists(ws, r._id)).toBe(true);
    expect(await repo.labelsOf(ws, [r._id])).toEqual(new Map([[r._id, { slug: 'alpha', kind: 'neuron' }]]));
    await repo.update(ws, r._id, { config: { changed: true }, isActive: false });
    await repo.update(randomUUID(), r._id, { isActive: true });
    expect(await repo.findById(ws, r._id)).toMatchObject({ config: { changed: true }, isActive: false });
  });

  it("finds a target's own receptor and every receptor of a target; removes one with its bindings", async () => {
    const target = { kind: 'pathway' as const, id: randomUUID() };
    const own = receptor(ws, `own-${target.id}`, { executableTarget: target });
    const sub = receptor(ws, `sub-${target.id}`, { executableTarget: target, origin: 'subscription' });
    await repo.create(own);
    await repo.create(sub);
    expect((await repo.ownReceptorOf(ws, 'pathway', target.id))?._id).toBe(own._id);
    expect((await repo.allForTarget(ws, 'pathway', target.id)).map((r) => r._id).sort()).toEqual(
      [own._id, sub._id].sort(),
    );
    expect(await repo.allForTarget(randomUUID(), 'pathway', target.id)).toEqual([]);
    const b = binding(ws, own._id);
    expect(await repo.createBinding(b)).toBe(true);
    await repo.remove(ws, own._id);
    expect(await repo.findById(ws, own._id)).toBeNull();
    expect(await repo.findBinding(ws, b._id)).toBeNull();
  });

  it('pages with brain visibility, target kind and ids; finds event subscribers', async () => {
    const w = randomUUID();
    const a = receptor(w, 'a-one');
    const b = receptor(w, 'b-two', { brainId: 'b2', scope: 'workspace' });
    const c = receptor(w, 'c-three', { brainId: 'b2' });
    const s = receptor(w, 'd-stim', {
      activeChannels: ['stimulus'],
      activation: 'event',
      stimulusKeys: ['job.completed'],
    });
    for (const r of [a, b, c, s]) await repo.create(r);
    const p = await repo.page(w, { brainId: 'b1' }, { field: 'slug', dir: 1 }, { limit: 2 });
    expect(p.items.map((r) => r.slug)).toEqual(['a-one', 'b-two']);
    expect(p.hasMore).toBe(true);
    const next = await repo.page(w, { brainId: 'b1' }, { field: 'slug', dir: 1 }, { limit: 2, cursor: p.nextCursor! });
    expect(next.items.map((r) => r.slug)).toEqual(['d-stim']);
    const ids = await repo.page(w, { ids: [c._id] }, { field: 'slug', dir: 1 }, { limit: 10 });
    expect(ids.items.map((r) => r.slug)).toEqual(['c-three']);
    expect((await repo.subscribers(w, ['job.completed', 'job.*'])).map((r) => r._id)).toEqual([s._id]);
    expect(await repo.subscribers(randomUUID(), ['job.completed'])).toEqual([]);
  });

  it('records a firing once (two concurrent records: one wins) and keeps its outcome', async () => {
    const r = receptor(ws, `fired-${randomUUID().slice(0, 8)}`);
    const f: Firing = {
      _id: `fire-${randomUUID()}`,
      workspaceId: ws,
      receptorId: r._id,
      jobId: randomUUID(),
      source: 'http',
      eventId: null,
      stimulusKey: null,
      trigger: { payload: { message: 'hi', 'k.$': [[1]] } },
      status: 'pending',
      reason: null,
      firedAt: new Date(),
      startedAt: null,
      finishedAt: null,
    };
    expect((await Promise.all([repo.recordFiring(f), repo.recordFiring(f)])).sort()).toEqual([false, true]);
    expect((await repo.findFiring(ws, f._id))?.trigger).toEqual(f.trigger);
    expect(await repo.findFiring(randomUUID(), f._id)).toBeNull();
    await repo.markFiringRunning(ws, f._id);
    expect((await repo.findFiring(ws, f._id))?.status).toBe('running');
    await repo.finishFiring(f._id, 'completed', null);
    const later = { ...f, _id: `fire-${randomUUID()}`, firedAt: new Date(Date.now() + 1000) };
    await repo.recordFiring(later);
    const recent = await repo.recentFirings(ws, r._id, 10);
    expect(recent.map((x) => [x._id, x.status])).toEqual([
      [later._id, 'pending'],
      [f._id, 'completed'],
    ]);
  });

  it('binds a conversation once across workspaces; updates, pages and removes bindings in their workspace', async () => {
    const b = binding(ws, randomUUID());
    expect(await repo.createBinding(b)).toBe(true);
    expect(await repo.createBinding({ ...binding(randomUUID(), randomUUID()), externalId: b.externalId })).toBe(false);
    expect(await repo.bindingFor('slack', b.externalId)).toMatchObject({ _id: b._id, metadata: b.metadata });
    expect(await repo.findBinding(randomUUID(), b._id)).toBeNull();
    const other = binding(ws, b.receptorId);
    await repo.createBinding(other);
    expect(await repo.updateBinding(ws, other._id, { externalId: b.externalId })).toBe(false);
    expect(await repo.updateBinding(ws, other._id, { metadata: { team: 't2' }, secretVersion: 2 })).toBe(true);
    expect(await repo.findBinding(ws, other._id)).toMatchObject({ metadata: { team: 't2' }, secretVersion: 2 });
    const p = await repo.pageBindings(ws, { receptorId: b.receptorId }, { limit: 10 });
    expect(p.items.map((x) => x._id).sort()).toEqual([b._id, other._id].sort());
    await repo.removeBinding(randomUUID(), b._id);
    expect(await repo.findBinding(ws, b._id)).not.toBeNull();
    await repo.removeBinding(ws, b._id);
    expect(await repo.findBinding(ws, b._id)).toBeNull();
  });

  it('proposes an action plan once and marks it executed in its workspace', async () => {
    const now = new Date();
    const plan: ActionPlan = {
      _id: randomUUID(),
      workspaceId: ws,
      brainId: 'b1',
      receptorId: randomUUID(),
      pathwayId: randomUUID(),
      jobId: randomUUID(),
      input: { order: [[1, 2]] },
      status: 'proposed',
      executionJobId: null,
      createdAt: now,
      updatedAt: now,
    };
    expect(await repo.proposePlan(plan)).toBe(true);
    expect(await repo.proposePlan(plan)).toBe(false);
    expect(await repo.markPlanExecuted(randomUUID(), plan._id)).toBeNull();
    await repo.setPlanExecution(ws, plan._id, 'job-2');
    expect(await repo.markPlanExecuted(ws, plan._id)).toMatchObject({ input: plan.input, executionJobId: 'job-2' });
    expect((await repo.planSearchRows([plan._id]))[0]).toMatchObject({ status: 'executed' });
  });
});

function binding(workspaceId: string, receptorId: string): ChannelBinding {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    receptorId,
    channel: 'slack',
    externalId: `C-${randomUUID()}`,
    traceId: randomUUID(),
    metadata: { team: 't1' },
    isActive: true,
    secretVersion: 1,
    createdBy: null,
    createdAt: now,
    updatedAt: now,
  };
}
