/**
 * The stakeholder maps repository's operations (docs/architecture.md, "Storage boundary"): heads,
 * claimed revisions with decoded graph bodies, saved versions, stakeholder places and
 * extractions, each scoped by its workspace in the filter.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreBackend } from '../../src/compose/stores.js';
import type { StakeholderMap } from '../../src/stakeholders/index.js';
import { emptyGraph, type Graph } from '../../src/stakeholders/graph.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const counts = { stakeholders: 0, interactions: 0, edges: 0, risks: 0 };
const mapOf = (workspaceId: string, o: Partial<StakeholderMap> = {}): StakeholderMap => {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'brain-1',
    name: 'Map',
    description: null,
    isDefault: false,
    revision: 0,
    latestVersion: 0,
    counts,
    summary: '',
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
};
const graphWith = (summary: string): Graph => ({ ...emptyGraph(), summary: `${summary} {"$x.y": [[1]]}` });
const draft = (revision: number, opKey: string | null = null) => ({
  revision,
  counts,
  opKey,
  createdBy: null,
  createdAt: new Date(),
});

describe.each([['ferretdb'], ['mongodb']] as [StoreBackend][])('stakeholder maps repository (%s form)', (backend) => {
  const skip = () => !h.backends.includes(backend);
  const repo = () => h.repos(backend).stakeholderMaps;
  const ws = `ws-${backend}-${randomUUID().slice(0, 6)}`;
  const other = `other-${backend}-${randomUUID().slice(0, 6)}`;

  it('creates heads, claims a derived id once and reads heads only in their workspace', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    expect(await repo().mapHead(ws, m._id)).toEqual(m);
    expect(await repo().mapHead(other, m._id)).toBeNull();
    const d = mapOf(ws, { isDefault: true });
    const wins = await Promise.all([repo().claimMap(d), repo().claimMap({ ...d, name: 'second' })]);
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('pages maps newest first, by brain', async () => {
    if (skip()) return;
    const w = `page-${backend}-${randomUUID().slice(0, 6)}`;
    const t0 = Date.now();
    const ms = [0, 1, 2].map((i) => mapOf(w, { brainId: i === 1 ? 'b' : 'a', createdAt: new Date(t0 + i * 1000) }));
    for (const m of ms) await repo().create(m);
    const p = await repo().page({ workspaceId: w }, { limit: 2 });
    expect(p.items.map((m) => m._id)).toEqual([ms[2]._id, ms[1]._id]);
    expect((await repo().page({ workspaceId: w }, { limit: 2, cursor: p.nextCursor! })).items).toHaveLength(1);
    expect((await repo().page({ workspaceId: w, brainId: 'b' }, { limit: 5 })).items.map((m) => m._id)).toEqual([
      ms[1]._id,
    ]);
  });

  it('claims each revision once, with its graph decoded; the loser stores nothing', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    expect(await repo().newestRevision(m)).toBeNull();
    const [a, b] = await Promise.all([
      repo().claimRevision(m, draft(1), graphWith('a')),
      repo().claimRevision(m, draft(1), graphWith('b')),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    const won = (a ?? b)!;
    expect(await repo().newestRevision(m)).toEqual(won);
    expect(await repo().newestRevision({ _id: m._id, workspaceId: other })).toBeNull();
    expect((await repo().graph(m, won.graphId)).summary).toBe(a ? graphWith('a').summary : graphWith('b').summary);
    expect(await h.db.collection('stakeholder_map_graphs').countDocuments({ mapId: m._id })).toBe(1);
    // A fresh repository (no cache) decodes the stored body.
    const fresh = h.repos(backend).stakeholderMaps;
    expect(await fresh.graph(m, won.graphId)).toEqual(a ? graphWith('a') : graphWith('b'));
    await expect(fresh.graph({ _id: m._id, workspaceId: other }, won.graphId)).rejects.toThrow(/missing/);
  });

  it('finds a revision by its idempotency key and prunes old revisions with their bodies', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    for (let n = 1; n <= 4; n++) await repo().claimRevision(m, draft(n, `op-${n}`), graphWith(String(n)));
    expect((await repo().revisionWithOpKey(m, 'op-3'))?.revision).toBe(3);
    expect(await repo().revisionWithOpKey({ _id: m._id, workspaceId: other }, 'op-3')).toBeNull();
    await repo().pruneRevisions({ _id: m._id, workspaceId: other }, 4);
    expect(await h.db.collection('stakeholder_map_revisions').countDocuments({ mapId: m._id })).toBe(4);
    await repo().pruneRevisions(m, 2);
    expect(await h.db.collection('stakeholder_map_revisions').countDocuments({ mapId: m._id })).toBe(2);
    expect(await h.db.collection('stakeholder_map_graphs').countDocuments({ mapId: m._id })).toBe(2);
    expect((await repo().newestRevision(m))?.revision).toBe(4);
  });

  it('advances the head only forward, under concurrent writers of different fields', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    const at = new Date();
    await Promise.all([
      repo().advanceHead(m, 2, { counts: { ...counts, stakeholders: 2 }, summary: 'two', updatedAt: at }),
      repo().advanceLatestVersion(m, 3, at),
    ]);
    expect(await repo().advanceHead(m, 1, { counts, summary: 'one', updatedAt: at })).toBe(false);
    expect(await repo().advanceLatestVersion({ _id: m._id, workspaceId: other }, 9, at)).toBe(false);
    expect(await repo().mapHead(ws, m._id)).toMatchObject({ revision: 2, summary: 'two', latestVersion: 3 });
  });

  it('numbers concurrent saved versions consecutively and pages them newest first', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    const fields = { label: null, revision: 0, counts, createdBy: null, createdAt: new Date() };
    const vs = await Promise.all([0, 1, 2].map(() => repo().claimNextVersion(m, graphWith('v'), fields)));
    expect(vs.map((v) => v.version).sort()).toEqual([1, 2, 3]);
    const v2 = (await repo().version(m, 2))!;
    expect(await repo().graph(m, v2.graphId)).toEqual(graphWith('v'));
    expect(await repo().version({ _id: m._id, workspaceId: other }, 2)).toBeNull();
    expect((await repo().versionById(ws, v2._id))?.version).toBe(2);
    expect(await repo().versionById(other, v2._id)).toBeNull();
    const p = await repo().pageVersions(m, { limit: 2 });
    expect(p.items.map((v) => v.version)).toEqual([3, 2]);
    expect((await repo().pageVersions({ _id: m._id, workspaceId: other }, { limit: 2 })).items).toEqual([]);
  });

  it('places stakeholders (idempotently, concurrently) and finds them by id in their workspace', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    const id = randomUUID();
    await Promise.all([
      repo().placeStakeholders(m, [{ id, name: 'Pat' }]),
      repo().placeStakeholders(m, [{ id, name: 'Pat' }]),
    ]);
    await repo().placeStakeholders(m, [{ id, name: 'Pat Lee' }]);
    expect(await repo().stakeholderPlace(ws, id)).toEqual({
      _id: id,
      workspaceId: ws,
      brainId: m.brainId,
      mapId: m._id,
      name: 'Pat Lee',
    });
    expect(await repo().stakeholderPlace(other, id)).toBeNull();
    expect((await repo().stakeholderNames([m._id])).map((p) => p.name)).toEqual(['Pat Lee']);
  });

  it('records an extraction once, stores its ops once (decoded on read) and its applied revision', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    const x = {
      _id: randomUUID(),
      workspaceId: ws,
      brainId: m.brainId,
      mapId: m._id,
      model: 'openai/gpt',
      source: { type: 'text' as const, id: null },
      text: 'Pat signs',
      truncated: false,
      occurredAt: new Date(),
      userId: 'u1',
      apiKeyId: null,
      createdAt: new Date(),
    };
    await repo().recordExtraction(x);
    await repo().recordExtraction({ ...x, text: 'second' });
    expect(await repo().extraction(ws, x._id)).toEqual({ ...x, ops: null, appliedRevision: null });
    expect(await repo().extraction(other, x._id)).toBeNull();
    const ops = [{ op: 'upsert_stakeholder' as const, name: 'Pat', role: 'a.b $c' }];
    await repo().setExtractionOps(x, ops);
    await repo().setExtractionOps(x, []);
    await repo().setExtractionApplied({ _id: x._id, workspaceId: other }, 9);
    await repo().setExtractionApplied(x, 4);
    expect(await repo().extraction(ws, x._id)).toMatchObject({ ops, appliedRevision: 4 });
  });

  it('reads maps in bulk and walks them all for the search index', async () => {
    if (skip()) return;
    const m = mapOf(ws);
    await repo().create(m);
    expect(await repo().findMany([m._id, 'missing'])).toEqual([m]);
    let seen: StakeholderMap | undefined;
    for await (const batch of repo().walk(3)) seen ??= batch.find((x) => x._id === m._id);
    expect(seen).toEqual(m);
  });
});
