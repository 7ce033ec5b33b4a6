/** The neuron repository (src/neurons/store.mongo.ts): decoded heads and versions, workspace scoping, version claims, paging. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { NeuronRepo } from '../../src/neurons/index.js';
import type { Neuron } from '../../src/neurons/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

function neuron(workspaceId: string, brainId: string, name: string, o: Partial<Neuron> = {}): Neuron {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId,
    name,
    description: `about ${name}`,
    config: { system_prompt: `You are ${name}.`, sub_neuron_ids: [] },
    isActive: true,
    scope: 'brain',
    version: 1,
    deletedAt: null,
    createdBy: 'u1',
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

describe.each(h.backends)('neuron repository (%s)', (backend) => {
  const repo: NeuronRepo = h.repos(backend).neurons;
  const ws = randomUUID();
  const brain = randomUUID();

  it('creates a neuron with version 1 and reads it back decoded, only in its workspace', async () => {
    const n = neuron(ws, brain, 'reader');
    expect(await repo.create(n, 'created')).toBe(true);
    expect(await repo.create({ ...n, _id: randomUUID() }, 'created')).toBe(false); // same name in the brain
    expect(await repo.findById(ws, n._id)).toMatchObject({ name: 'reader', config: n.config, version: 1 });
    expect(await repo.findById(randomUUID(), n._id)).toBeNull();
    expect(await repo.exists(ws, n._id, { live: true })).toBe(true);
    expect(await repo.exists(randomUUID(), n._id)).toBe(false);
    const v1 = await repo.findVersion(ws, n._id, 1);
    expect(v1?.snapshot).toMatchObject({ id: n._id, version: 1, name: 'reader', neuron_config: n.config });
    expect(await repo.findVersion(randomUUID(), n._id, 1)).toBeNull();
    expect(await repo.namesOf(ws, [n._id, randomUUID()])).toEqual(new Map([[n._id, 'reader']]));
  });

  it('records concurrent changes as consecutive versions; the head converges to the newest', async () => {
    const n = neuron(ws, brain, 'busy');
    await repo.create(n, 'created');
    const outs = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        repo.recordVersion(ws, n._id, { set: { description: `change ${i}` }, note: 'updated', createdBy: 'u2' }),
      ),
    );
    const made = outs.map((o) => (typeof o === 'string' ? 0 : o.made.version)).sort();
    expect(made).toEqual([2, 3, 4, 5]);
    const head = await repo.findById(ws, n._id);
    expect(head?.version).toBe(5);
    const versions = await repo.listVersions(ws, n._id);
    expect(versions.map((v) => v.version)).toEqual([5, 4, 3, 2, 1]);
    expect(versions[0].snapshot?.description).toBe(head?.description);
  });

  it('refuses a change in another workspace, in the wrong deleted state, or to a taken name', async () => {
    const a = neuron(ws, brain, 'alpha');
    const b = neuron(ws, brain, 'beta');
    await repo.create(a, 'created');
    await repo.create(b, 'created');
    const change = { set: { isActive: false }, note: 'updated', createdBy: null };
    expect(await repo.recordVersion(randomUUID(), a._id, change)).toBe('missing');
    expect(await repo.recordVersion(ws, a._id, { ...change, deleted: true })).toBe('missing');
    expect(await repo.nameTaken(ws, brain, 'beta', a._id)).toBe(true);
    expect(await repo.nameTaken(ws, brain, 'alpha', a._id)).toBe(false);
    expect(await repo.recordVersion(ws, a._id, { set: { name: 'beta' }, note: 'updated', createdBy: null })).toBe(
      'name_taken',
    );
  });

  it('soft-deletes and restores; removes versions and head', async () => {
    const n = neuron(ws, brain, 'gone');
    await repo.create(n, 'created');
    expect(await repo.softDelete(randomUUID(), n._id)).toBeNull();
    expect((await repo.softDelete(ws, n._id))?.deletedAt).toBeInstanceOf(Date);
    expect(await repo.findById(ws, n._id, { live: true })).toBeNull();
    const restored = await repo.recordVersion(ws, n._id, {
      set: { deletedAt: null },
      note: 'restored',
      createdBy: null,
      deleted: true,
    });
    expect(typeof restored === 'object' && restored.head).toMatchObject({ deletedAt: null, version: 2 });
    await repo.remove(ws, n._id);
    expect(await repo.findById(ws, n._id)).toBeNull();
    expect(await repo.listVersions(ws, n._id)).toEqual([]);
  });

  it('pages in sort order with brain visibility and search; resolves names and visible ids', async () => {
    const w = randomUUID();
    const other = randomUUID();
    const mine = neuron(w, brain, 'mine-a');
    const shared = neuron(w, other, 'shared-b', { scope: 'workspace' });
    const hidden = neuron(w, other, 'hidden-c');
    for (const n of [mine, shared, hidden]) await repo.create(n, 'created');
    const p = await repo.page(w, { brainId: brain, includeDeleted: false }, { field: 'name', dir: 1 }, { limit: 10 });
    expect(p.items.map((n) => n.name)).toEqual(['mine-a', 'shared-b']);
    expect(p.items[0].config).toEqual(mine.config);
    const s = await repo.page(w, { search: 'HIDDEN', includeDeleted: false }, { field: 'name', dir: 1 }, { limit: 10 });
    expect(s.items.map((n) => n.name)).toEqual(['hidden-c']);
    expect((await repo.findByName(w, 'hidden-c', brain)).length).toBe(0);
    expect((await repo.findByName(w, 'hidden-c')).map((n) => n._id)).toEqual([hidden._id]);
    const visible = await repo.findManyVisible(w, [mine._id, shared._id, hidden._id], brain);
    expect(visible.map((n) => n._id).sort()).toEqual([mine._id, shared._id].sort());
  });
});
