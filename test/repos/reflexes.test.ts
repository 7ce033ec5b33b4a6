/** The reflex repository (src/reflexes/store.mongo.ts): decoded reflexes, workspace scoping, assignments claimed by unique key, paging. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReflexRepo } from '../../src/reflexes/index.js';
import type { Reflex } from '../../src/reflexes/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function reflex(workspaceId: string, name: string, o: Partial<Reflex> = {}): Reflex {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    name,
    type: 'effector',
    description: `does ${name}`,
    tools: [{ integrationId: 'crm', tools: ['lookup'] }],
    metadata: { handler: 'echo', 'x.y': [[1]] },
    isActive: true,
    scope: 'brain',
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

describe.each(h.backends)('reflex repository (%s)', (backend) => {
  const repo: ReflexRepo = h.repos(backend).reflexes;
  const ws = randomUUID();

  it('creates, reads, updates and removes reflexes decoded, only in their workspace', async () => {
    const r = reflex(ws, 'lookup');
    await repo.create(r);
    expect(await repo.findById(ws, r._id)).toMatchObject({ metadata: r.metadata });
    expect(await repo.findById(randomUUID(), r._id)).toBeNull();
    expect(await repo.update(randomUUID(), r._id, { name: 'x' })).toBeNull();
    expect(await repo.update(ws, r._id, { metadata: { server_url: 'https://x' } })).toMatchObject({
      name: 'lookup',
      metadata: { server_url: 'https://x' },
    });
    expect((await repo.findMany(ws, [r._id, randomUUID()])).map((x) => x._id)).toEqual([r._id]);
    await repo.remove(randomUUID(), r._id);
    expect(await repo.findById(ws, r._id)).not.toBeNull();
    await repo.remove(ws, r._id);
    expect(await repo.findById(ws, r._id)).toBeNull();
  });

  it('assigns a reflex to a neuron once (two concurrent assignments: one wins); unassigns', async () => {
    const neuronId = randomUUID();
    const r = reflex(ws, 'assigned');
    await repo.create(r);
    const link = {
      _id: `${neuronId}:${r._id}`,
      workspaceId: ws,
      neuronId,
      reflexId: r._id,
      createdBy: null,
      createdAt: new Date(),
    };
    expect((await Promise.all([repo.link(link), repo.link(link)])).sort()).toEqual([false, true]);
    expect((await repo.linksOfNeuron(ws, neuronId)).map((l) => l.reflexId)).toEqual([r._id]);
    expect(await repo.unlink(randomUUID(), neuronId, r._id)).toBe(false);
    expect(await repo.unlink(ws, neuronId, r._id)).toBe(true);
    await repo.link(link);
    await repo.remove(ws, r._id);
    expect(await repo.linksOfNeuron(ws, neuronId)).toEqual([]);
  });

  it('pages with brain visibility, type and search', async () => {
    const w = randomUUID();
    await repo.create(reflex(w, 'a-mine'));
    await repo.create(reflex(w, 'b-shared', { brainId: 'b2', scope: 'workspace', type: 'sensory' }));
    await repo.create(reflex(w, 'c-hidden', { brainId: 'b2' }));
    const sort = { field: 'name', dir: 1 as const };
    const names = async (where: Parameters<ReflexRepo['page']>[1]) =>
      (await repo.page(w, where, sort, { limit: 10 })).items.map((r) => r.name);
    expect(await names({ brainId: 'b1' })).toEqual(['a-mine', 'b-shared']);
    expect(await names({ type: 'sensory' })).toEqual(['b-shared']);
    expect(await names({ search: 'HIDDEN' })).toEqual(['c-hidden']);
  });
});
