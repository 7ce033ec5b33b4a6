/**
 * The search index's reads (src/search/store.mongo.ts): each kind re-read by key, each key in its
 * own workspace (a key naming another workspace reads as missing, by lookups and by the batch
 * query alike), resources that are not searchable left out, blobs decoded, related names joined
 * only within the workspace, chunks with their vectors; the snapshot walk; the syncer's lease.
 * Rows are seeded in their stored shapes.
 */
import { randomUUID } from 'node:crypto';
import { Binary, type Document } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { vectorToBytes } from '../../src/embeddings/index.js';
import type { SearchSources } from '../../src/search/store.js';
import { openRepoHarness } from '../support/repos.js';

const h = await openRepoHarness();
afterAll(() => h.close());

type Row = Document & { _id: string };
const raw = (name: string) => h.db.collection<Row>(name);

async function walk<R>(it: AsyncIterable<R[]>): Promise<R[]> {
  const out: R[] = [];
  for await (const page of it) out.push(...page);
  return out;
}

describe.each(h.backends)('search sources (%s)', (backend) => {
  const s: SearchSources = h.repos(backend).searchSources;

  it('re-reads neurons by key in their own workspace, deleted ones left out, config decoded', async () => {
    const ws = randomUUID();
    const other = randomUUID();
    const config = { prompt: 'hi', 'a.b': [[1]], $x: null };
    const live = randomUUID();
    const gone = randomUUID();
    await raw('neurons').insertMany([
      { _id: live, workspaceId: ws, name: 'live', config: JSON.stringify(config), deletedAt: null },
      { _id: gone, workspaceId: ws, name: 'gone', config: '{}', deletedAt: new Date() },
    ]);
    const got = await s.neurons.loadMany([
      { workspaceId: ws, id: live },
      { workspaceId: ws, id: gone },
      { workspaceId: ws, id: randomUUID() },
    ]);
    expect([...got.keys()]).toEqual([live]);
    expect(got.get(live)).toMatchObject({ name: 'live', config });
    expect((await s.neurons.loadMany([{ workspaceId: other, id: live }])).size).toBe(0);

    // More keys than the lookups take (64): one batch query, still each key in its own workspace.
    const many = Array.from({ length: 140 }, (_, i) => ({
      _id: randomUUID(),
      workspaceId: i % 2 ? ws : other,
      name: `n${i}`,
      config: '{}',
      deletedAt: null,
    }));
    await raw('neurons').insertMany(many);
    const keys = many.map((n) => ({ workspaceId: ws, id: n._id }));
    const batch = await s.neurons.loadMany(keys);
    expect([...batch.keys()].sort()).toEqual(
      many
        .filter((n) => n.workspaceId === ws)
        .map((n) => n._id)
        .sort(),
    );

    const all = (await walk(s.neurons.all())).filter((n) => n.workspaceId === ws).map((n) => n.name);
    expect(all.sort()).toEqual(['live', ...many.filter((n) => n.workspaceId === ws).map((n) => n.name)].sort());
  });

  it('joins an action plan’s pathway name and receptor slug only from its own workspace', async () => {
    const ws = randomUUID();
    const other = randomUUID();
    const pw = randomUUID();
    const rc = randomUUID();
    const foreignPw = randomUUID();
    await raw('pathways').insertMany([
      { _id: pw, workspaceId: ws, name: 'Onboard', versions: [{ big: true }] },
      { _id: foreignPw, workspaceId: other, name: 'Theirs' },
    ]);
    await raw('receptors').insertOne({ _id: rc, workspaceId: ws, slug: 'inbox', config: '{"k":[[1]]}' });
    const mine = randomUUID();
    const cross = randomUUID();
    await raw('action_plans').insertMany([
      { _id: mine, workspaceId: ws, pathwayId: pw, receptorId: rc, input: '{"q":"a.b"}' },
      { _id: cross, workspaceId: ws, pathwayId: foreignPw, receptorId: randomUUID(), input: 'not json' },
    ]);
    const got = await s.actionPlans.loadMany([
      { workspaceId: ws, id: mine },
      { workspaceId: ws, id: cross },
    ]);
    expect(got.get(mine)).toMatchObject({
      pathwayName: 'Onboard',
      receptorSlug: 'inbox',
      plan: { input: { q: 'a.b' } },
    });
    expect(got.get(cross)).toMatchObject({ pathwayName: null, receptorSlug: null, plan: { input: null } });
    const head = (await s.pathways.loadMany([{ workspaceId: ws, id: pw }])).get(pw);
    expect(head).toMatchObject({ name: 'Onboard' });
    expect(head).not.toHaveProperty('versions');
    expect((await s.receptors.loadMany([{ workspaceId: ws, id: rc }])).get(rc)?.config).toEqual({ k: [[1]] });
  });

  it("reads a stakeholder map with its people's names of its workspace only; meetings and reflexes decoded", async () => {
    const ws = randomUUID();
    const map = randomUUID();
    await raw('stakeholder_maps').insertOne({ _id: map, workspaceId: ws, name: 'Deal' });
    await raw('stakeholder_index').insertMany([
      { _id: randomUUID(), workspaceId: ws, mapId: map, name: 'Ada' },
      { _id: randomUUID(), workspaceId: ws, mapId: map, name: 'Grace' },
      { _id: randomUUID(), workspaceId: randomUUID(), mapId: map, name: 'Mallory' },
    ]);
    const got = (await s.stakeholderMaps.loadMany([{ workspaceId: ws, id: map }])).get(map);
    expect(got?.map.name).toBe('Deal');
    expect(got?.people.sort()).toEqual(['Ada', 'Grace']);

    const meeting = randomUUID();
    await raw('meetings').insertOne({ _id: meeting, workspaceId: ws, title: 'Sync', body: '{"notes":"x\\u0000y"}' });
    expect((await s.meetings.loadMany([{ workspaceId: ws, id: meeting }])).get(meeting)?.body).toEqual({
      notes: 'x\u0000y',
    });
    const reflex = randomUUID();
    await raw('reflexes').insertOne({ _id: reflex, workspaceId: ws, name: 'r' });
    expect((await s.reflexes.loadMany([{ workspaceId: ws, id: reflex }])).get(reflex)?.name).toBe('r');
  });

  it('reads memories and documents with the chunks of every version, vectors decoded; lanes kept apart', async () => {
    const ws = randomUUID();
    const mem = randomUUID();
    const asset = randomUUID();
    const artifact = randomUUID();
    await raw('memories').insertOne({ _id: mem, workspaceId: ws, text: 'remember', metadata: '{"tag":"a.b"}' });
    await raw('documents').insertMany([
      { _id: asset, workspaceId: ws, lane: 'asset', name: 'a.md', content: 'big body', metadata: null },
      { _id: artifact, workspaceId: ws, lane: 'artifact', name: 'b.md', metadata: '{}' },
    ]);
    const vec = new Float32Array([0.5, -1, 2]);
    const chunk = (resourceId: string, kind: string, version: number, index: number, o: Document = {}) => ({
      _id: randomUUID(),
      workspaceId: ws,
      brainId: 'b1',
      resourceKind: kind,
      resourceId,
      version,
      index,
      source: 'body',
      text: `${kind} v${version} #${index}`,
      tokens: 3,
      path: '',
      embedding: null,
      createdAt: new Date(),
      ...o,
    });
    await raw('chunks').insertMany([
      chunk(mem, 'memory', 1, 0, { embedding: { model: 'm1', dimension: 3, vector: new Binary(vectorToBytes(vec)) } }),
      chunk(mem, 'memory', 2, 0),
      chunk(mem, 'memory', 1, 1, { workspaceId: randomUUID() }),
      chunk(asset, 'asset', 1, 0),
    ]);
    const m = (await s.memories.loadMany([{ workspaceId: ws, id: mem }])).get(mem);
    expect(m?.doc).toMatchObject({ text: 'remember', metadata: { tag: 'a.b' } });
    const texts = m?.chunks.map((c) => c.text).sort();
    expect(texts).toEqual(['memory v1 #0', 'memory v2 #0']);
    const withVector = m?.chunks.find((c) => c.version === 1);
    expect(withVector?.vectorModel).toBe('m1');
    expect([...(withVector?.vector ?? [])]).toEqual([0.5, -1, 2]);
    expect(m?.chunks.find((c) => c.version === 2)?.vector).toBeNull();

    const a = (await s.assets.loadMany([{ workspaceId: ws, id: asset }])).get(asset);
    expect(a?.doc).toMatchObject({ name: 'a.md', metadata: {} });
    expect(a?.doc).not.toHaveProperty('content');
    expect(a?.chunks.map((c) => c.text)).toEqual(['asset v1 #0']);
    expect((await s.assets.loadMany([{ workspaceId: ws, id: artifact }])).size).toBe(0);
    expect((await s.artifacts.loadMany([{ workspaceId: ws, id: artifact }])).get(artifact)?.chunks).toEqual([]);

    // A batch past the lookups (64 resources): rows and chunks in one query each, each chunk with its
    // own resource, and none of another workspace's.
    const batch = Array.from({ length: 70 }, () => randomUUID());
    await raw('documents').insertMany(
      batch.map((id, i) => ({ _id: id, workspaceId: ws, lane: 'artifact', name: `d${i}.md`, metadata: '{}' })),
    );
    await raw('chunks').insertMany([
      ...batch.map((id) => chunk(id, 'artifact', 1, 0)),
      chunk(batch[0]!, 'artifact', 1, 1, { workspaceId: randomUUID() }),
    ]);
    const read = await s.artifacts.loadMany(batch.map((id) => ({ workspaceId: ws, id })));
    expect(read.size).toBe(70);
    for (const id of batch) expect(read.get(id)?.chunks.map((c) => c.resourceId)).toEqual([id]);

    const walked = (await walk(s.memories.all())).filter((r) => r.doc.workspaceId === ws);
    expect(walked.map((r) => r.chunks.length)).toEqual([2]);
    const lanes = (await walk(s.artifacts.all())).filter((r) => r.doc.workspaceId === ws).map((r) => r.doc._id);
    expect(lanes.sort()).toEqual([artifact, ...batch].sort());
  });

  it('leases the syncer to one owner; renewed and released only by it; an expired lease is taken over', async () => {
    const key = `index-${randomUUID()}`;
    const outs = await Promise.all([s.syncLease.take(key, 'a', 60_000), s.syncLease.take(key, 'b', 60_000)]);
    expect(outs.filter(Boolean)).toHaveLength(1);
    const [holder, other] = outs[0] ? ['a', 'b'] : ['b', 'a'];
    expect(await s.syncLease.renew(key, other, 60_000)).toBe(false);
    expect(await s.syncLease.renew(key, holder, 60_000)).toBe(true);
    await s.syncLease.release(key, other);
    expect(await s.syncLease.take(key, other, 60_000)).toBe(false);
    await s.syncLease.release(key, holder);
    expect(await s.syncLease.take(key, other, 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(await s.syncLease.take(key, holder, 60_000)).toBe(true);
    expect(await s.syncLease.renew(key, other, 60_000)).toBe(false);
  });
});
