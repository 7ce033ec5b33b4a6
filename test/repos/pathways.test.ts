/** The pathway repository (src/pathways/store.mongo.ts): decoded heads and versions, versions recorded under the write hold, scoping, participants, values measured and compared as stored. */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { PathwayRepo } from '../../src/pathways/index.js';
import type { Pathway } from '../../src/pathways/model.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

const graph = (n: number) => ({
  nodes: Array.from({ length: n }, (_, i) => ({ id: `n${i}`, type: 'end', data: { 'a.b': [[i]] } })),
  edges: [],
});

function pathway(workspaceId: string, brainId: string, name: string): Pathway {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId,
    name,
    description: '',
    graph: graph(1),
    design: null,
    isActive: true,
    latestVersion: 1,
    createdBy: 'u1',
    createdAt: now,
    updatedAt: now,
  };
}

describe.each(h.backends)('pathway repository (%s)', (backend) => {
  const repo: PathwayRepo = h.repos(backend).pathways;
  const ws = randomUUID();
  const brain = randomUUID();

  it('creates a pathway with version 1 and reads head, history and versions decoded, only in its workspace', async () => {
    const p = pathway(ws, brain, 'flow');
    await repo.create(p, 'created');
    expect(await repo.findHead(ws, p._id)).toMatchObject({ graph: p.graph, design: null, latestVersion: 1 });
    expect(await repo.findHead(randomUUID(), p._id)).toBeNull();
    const history = await repo.history(ws, p._id);
    expect(history?.versions).toEqual([expect.objectContaining({ version: 1, note: 'created', nodeCount: 1 })]);
    expect(history?.versions[0]).not.toHaveProperty('graph');
    expect((await repo.findVersion(ws, p._id, 1))?.entry?.graph).toEqual(p.graph);
    expect((await repo.findVersion(ws, p._id, 7))?.entry).toBeNull();
    expect(await repo.findVersion(randomUUID(), p._id, 1)).toBeNull();
    expect(await repo.namesOf(ws, [p._id])).toEqual(new Map([[p._id, 'flow']]));
  });

  it('records concurrent changes as distinct consecutive versions (none lost)', async () => {
    const p = pathway(ws, brain, 'contended');
    await repo.create(p, 'created');
    const outs = await Promise.all(
      [2, 3, 4, 5].map((n) =>
        repo.recordVersion(ws, p._id, {
          createdBy: 'u2',
          plan: () => ({ set: { graph: graph(n) }, note: `updated: graph ${n}` }),
        }),
      ),
    );
    expect(outs.every((o) => typeof o === 'object')).toBe(true);
    const history = await repo.history(ws, p._id);
    expect(history?.head.latestVersion).toBe(5);
    expect(history?.versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5]);
    const tip = await repo.findVersion(ws, p._id, 5);
    expect(tip?.entry?.graph).toEqual(tip?.head.graph);
    expect(tip?.entry?.nodeCount).toBe((tip?.head.graph as { nodes: unknown[] }).nodes.length);
  });

  it('promotes a kept version, changes the head alone without a note, and refuses other workspaces and brains', async () => {
    const p = pathway(ws, brain, 'promoted');
    await repo.create(p, 'created');
    await repo.recordVersion(ws, p._id, { createdBy: null, plan: () => ({ set: { graph: graph(3) }, note: 'v2' }) });
    const promoted = await repo.recordVersion(ws, p._id, {
      createdBy: null,
      plan: (_head, kept) => ({ set: { graph: kept(1)!.graph }, note: 'promoted from v1' }),
    });
    expect(promoted).toMatchObject({ latestVersion: 3, graph: p.graph });
    const headOnly = await repo.recordVersion(ws, p._id, {
      createdBy: null,
      plan: () => ({ set: { design: { layout: [[1]] }, isActive: false } }),
    });
    expect(headOnly).toMatchObject({ latestVersion: 3, design: { layout: [[1]] }, isActive: false });
    const plan = () => ({ set: { name: 'x' }, note: 'updated: name' });
    expect(await repo.recordVersion(randomUUID(), p._id, { createdBy: null, plan })).toBe('missing');
    expect(await repo.recordVersion(ws, p._id, { brainId: randomUUID(), createdBy: null, plan })).toBe('missing');
  });

  it('measures a value as stored and tells values stored alike (what size limits and unchanged graphs are judged by)', () => {
    const g = graph(2);
    expect(repo.storedBytes(g)).toBe(Buffer.byteLength(JSON.stringify(g), 'utf8'));
    expect(repo.storedBytes({ name: 'é' })).toBe(13); // UTF-8 bytes, not characters
    expect(repo.storedBytes(undefined)).toBe(4); // stored as null
    expect(repo.sameStored(g, JSON.parse(JSON.stringify(g)))).toBe(true);
    expect(repo.sameStored(g, graph(3))).toBe(false);
    expect(repo.sameStored({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false); // stored text: key order counts
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(() => repo.storedBytes(deep)).toThrow(/nested deeper than/);
  });

  it('pages one brain by name with search; manages participants', async () => {
    const b = randomUUID();
    for (const name of ['beta', 'alpha', 'gamma']) await repo.create(pathway(ws, b, name), 'created');
    const p = await repo.page(ws, { brainId: b }, { field: 'name', dir: 1 }, { limit: 10 });
    expect(p.items.map((x) => x.name)).toEqual(['alpha', 'beta', 'gamma']);
    expect(p.items[0].graph).toEqual(graph(1));
    const s = await repo.page(ws, { brainId: b, search: 'AMM' }, { field: 'name', dir: 1 }, { limit: 10 });
    expect(s.items.map((x) => x.name)).toEqual(['gamma']);
    const id = p.items[0]._id;
    const part = {
      _id: randomUUID(),
      workspaceId: ws,
      pathwayId: id,
      userId: 'u9',
      role: 'viewer' as const,
      addedBy: null,
      createdAt: new Date(),
    };
    expect(await repo.addParticipant(part)).toBe(true);
    expect(await repo.addParticipant({ ...part, _id: randomUUID() })).toBe(false);
    await repo.setParticipantRole(ws, part._id, 'editor');
    expect((await repo.findParticipantByUser(ws, id, 'u9'))?.role).toBe('editor');
    expect(await repo.removeParticipantByUser(randomUUID(), id, 'u9')).toBe(false);
    expect(await repo.removeParticipant(ws, part._id)).toBe(true);
    expect(await repo.remove(ws, id)).toBe(true);
    expect(await repo.findHead(ws, id)).toBeNull();
  });
});
