/**
 * The knowledge repository (docs/architecture.md, "Storage boundary"; the contract KnowledgeStore in
 * src/knowledge/store.ts, the adapter src/knowledge/store.mongo.ts): documents and their
 * versions, memories, recollections, chunks and the ingest state, with decoded values, scoped by
 * workspace in every operation; and the search index's reads.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreBackend } from '../../src/compose/stores.js';
import type { Chunk, DocumentVersion, KnowledgeDocument, Memory } from '../../src/knowledge/model.js';
import { openRepoHarness, type RepoHarness } from '../support/repos.js';

let h: RepoHarness;
beforeAll(async () => {
  h = await openRepoHarness();
});
afterAll(async () => {
  await h.close();
});

const META = { nested: [[1, 2]], 'a.b': true, $x: 'y' };
const ingest = (jobId: string | null = null) => ({
  status: 'pending' as const,
  jobId,
  version: 1,
  chunkCount: 0,
  embeddedCount: 0,
  embeddingModel: null,
  error: null,
});

function artifact(workspaceId: string, o: Partial<KnowledgeDocument> = {}): KnowledgeDocument {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    lane: 'artifact',
    name: 'Doc',
    path: 'projects/alpha',
    metadata: META,
    skipEmbedding: false,
    contentType: 'text/markdown',
    size: 3,
    sha256: null,
    blobKey: null,
    source: { type: 'artifact', value: null },
    version: 1,
    content: 'one',
    ingest: ingest(),
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

function memory(workspaceId: string, o: Partial<Memory> = {}): Memory {
  const now = new Date();
  return {
    _id: randomUUID(),
    workspaceId,
    brainId: 'b1',
    name: 'Mem',
    description: null,
    sourceType: 'text',
    ownerType: null,
    ownerId: null,
    tags: ['t'],
    metadata: META,
    contentType: 'text/plain',
    size: 3,
    blobKey: null,
    fileName: null,
    skipEmbedding: false,
    titleSource: 'pending',
    titleModel: null,
    ingest: ingest('job-1'),
    createdBy: null,
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

const versionOf = (d: KnowledgeDocument, version: number): DocumentVersion => ({
  _id: `${d._id}:${version}`,
  documentId: d._id,
  workspaceId: d.workspaceId,
  lane: d.lane,
  version,
  name: d.name,
  path: d.path,
  metadata: d.metadata,
  skipEmbedding: d.skipEmbedding,
  changes: ['created'],
  content: d.content,
  contentType: d.contentType,
  size: d.size,
  createdBy: null,
  createdAt: new Date(),
});

const chunk = (d: { _id: string; workspaceId: string }, version: number, index: number): Chunk => ({
  _id: `${d._id}:${version}:${index}`,
  workspaceId: d.workspaceId,
  brainId: 'b1',
  resourceKind: 'artifact',
  resourceId: d._id,
  version,
  index,
  source: 'body',
  text: `text ${index}`,
  tokens: 2,
  path: 'projects/alpha',
  embedding: null,
  createdAt: new Date(),
});

describe.each([['ferretdb'], ['mongodb']] as [StoreBackend][])('knowledge repository (%s form)', (backend) => {
  const repo = () => h.repos(backend).knowledge;
  const run = (fn: () => Promise<void>) => async () => {
    if (!h.backends.includes(backend)) return;
    await fn();
  };

  it(
    'a document round-trips with its metadata decoded; stored as text; another workspace sees nothing',
    run(async () => {
      const ws = randomUUID();
      const d = artifact(ws);
      await repo().documents.insert(d);
      expect((await repo().documents.get(ws, d._id))?.metadata).toEqual(META);
      const raw = await h.db.collection('documents').findOne({ _id: d._id as never });
      expect(typeof raw?.metadata).toBe('string');
      expect(await repo().documents.get(randomUUID(), d._id)).toBeNull();
      expect(await repo().documents.setHead(randomUUID(), d._id, { name: 'x' })).toBe(false);
      await repo().documents.recordVersion(versionOf(d, 1));
      expect((await repo().documents.version(ws, d._id, 1))?.metadata).toEqual(META);
      expect(await repo().documents.version(randomUUID(), d._id, 1)).toBeNull();
    }),
  );

  it(
    'a head is written only over an older version',
    run(async () => {
      const ws = randomUUID();
      const d = artifact(ws);
      await repo().documents.insert(d);
      expect(await repo().documents.setHead(ws, d._id, { version: 3, metadata: { v: 3 } })).toBe(true);
      expect(await repo().documents.setHead(ws, d._id, { version: 2, name: 'old' })).toBe(false);
      const got = await repo().documents.get(ws, d._id);
      expect(got).toMatchObject({ version: 3, name: 'Doc', metadata: { v: 3 } });
    }),
  );

  it(
    'concurrent version claims get distinct numbers; a build that changes nothing claims none',
    run(async () => {
      const ws = randomUUID();
      const d = artifact(ws);
      await repo().documents.insert(d);
      await repo().documents.recordVersion(versionOf(d, 1));
      const claims = await Promise.all(
        [0, 1, 2].map(() => repo().documents.claimVersion(d._id, (prev) => versionOf(d, (prev?.version ?? 0) + 1))),
      );
      expect(claims.map((c) => c?.version).sort()).toEqual([2, 3, 4]);
      expect(await repo().documents.claimVersion(d._id, () => null)).toBeNull();
      expect((await repo().documents.versions(ws, d._id)).map((v) => v.version)).toEqual([4, 3, 2, 1]);
      expect(await repo().documents.versions(randomUUID(), d._id)).toEqual([]);
    }),
  );

  it(
    'pages a lane newest first, a cursor continuing; a folder prefix takes sub-folders, not siblings',
    run(async () => {
      const ws = randomUUID();
      const t = Date.now();
      const docs = [0, 1, 2].map((i) =>
        artifact(ws, { createdAt: new Date(t + i * 1000), path: ['a', 'a/b', 'ab'][i] }),
      );
      for (const d of docs) await repo().documents.insert(d);
      const sort = { field: 'createdAt' as const, dir: -1 as const };
      const first = await repo().documents.page(ws, { lane: 'artifact' }, sort, { limit: 2 });
      expect(first.items.map((x) => x._id)).toEqual([docs[2]._id, docs[1]._id]);
      expect(first.items[0].metadata).toEqual(META);
      const next = await repo().documents.page(ws, { lane: 'artifact' }, sort, { limit: 2, cursor: first.nextCursor! });
      expect(next.items.map((x) => x._id)).toEqual([docs[0]._id]);
      const under = await repo().documents.page(ws, { pathPrefix: 'a' }, sort, { limit: 10 });
      expect(under.items.map((x) => x.path).sort()).toEqual(['a', 'a/b']);
      expect((await repo().documents.page(randomUUID(), {}, sort, { limit: 10 })).items).toEqual([]);
    }),
  );

  it(
    'memories: decoded, scoped, removed once; the title is set only while it is pending',
    run(async () => {
      const ws = randomUUID();
      const m = memory(ws);
      await repo().memories.insert(m);
      expect((await repo().memories.get(ws, m._id))?.metadata).toEqual(META);
      expect(await repo().memories.findMany(randomUUID(), [m._id])).toEqual([]);
      expect(
        await repo().memories.setHead(ws, m._id, { name: 'A', titleSource: 'model' }, { titleSource: 'pending' }),
      ).toBe(true);
      expect(await repo().memories.setHead(ws, m._id, { name: 'B' }, { titleSource: 'pending' })).toBe(false);
      expect((await repo().memories.get(ws, m._id))?.name).toBe('A');
      expect(await repo().memories.remove(randomUUID(), m._id)).toBe(false);
      expect(await repo().memories.remove(ws, m._id)).toBe(true);
      expect(await repo().memories.remove(ws, m._id)).toBe(false);
    }),
  );

  it(
    'recollection members: idempotent adds, in order, removals; scoped',
    run(async () => {
      const ws = randomUUID();
      const r = {
        _id: randomUUID(),
        workspaceId: ws,
        brainId: 'b1',
        name: 'R',
        description: null,
        createdBy: null,
        createdAt: new Date(),
        updatedAt: new Date(),
      };
      await repo().recollections.insert(r);
      await repo().recollections.addMembers(ws, r._id, new Map([['m1', 'memory' as const]]), new Date(1000));
      const both = new Map([
        ['m1', 'memory' as const],
        ['d1', 'artifact' as const],
      ]);
      await repo().recollections.addMembers(ws, r._id, both, new Date(2000));
      const members = await repo().recollections.members(ws, r._id);
      expect(members.map((x) => [x.resourceId, x.resourceKind, x.addedAt.getTime()])).toEqual([
        ['m1', 'memory', 1000],
        ['d1', 'artifact', 2000],
      ]);
      expect(await repo().recollections.members(randomUUID(), r._id)).toEqual([]);
      await repo().recollections.removeMembers(ws, r._id, ['m1']);
      expect(await repo().recollections.memberIds(ws, r._id)).toEqual(['d1']);
      await repo().recollections.remove(ws, r._id);
      expect(await repo().recollections.get(ws, r._id)).toBeNull();
      expect(await repo().recollections.memberIds(ws, r._id)).toEqual([]);
    }),
  );

  it(
    'chunks: the live version pages in order; vectors are stored and counted; removal is scoped',
    run(async () => {
      const ws = randomUUID();
      const d = artifact(ws);
      await repo().chunks.write([chunk(d, 1, 0), chunk(d, 2, 1), chunk(d, 2, 0), chunk(d, 2, 2)]);
      const p = await repo().chunks.page(ws, d._id, undefined, { limit: 10 });
      expect(p.items.map((c) => c._id)).toEqual([0, 1, 2].map((i) => `${d._id}:2:${i}`));
      expect(await repo().chunks.get(randomUUID(), `${d._id}:2:0`)).toBeNull();
      await repo().chunks.setVectors([
        { id: `${d._id}:2:0`, model: 'm', dimension: 2, vector: new Float32Array([1, 2]) },
      ]);
      expect((await repo().chunks.get(ws, `${d._id}:2:0`))?.embedding).toEqual({ model: 'm', dimension: 2 });
      expect(await repo().chunks.versionCounts(d._id, 2, 'm')).toEqual({ chunkCount: 3, embeddedCount: 1 });
      expect([...(await repo().chunks.staleResources(ws, 'm', 100))]).toEqual([[d._id, 'artifact']]);
      await repo().chunks.trim(ws, d._id, 2, 2);
      await repo().chunks.removeOlder(ws, d._id, 2);
      expect(await repo().chunks.counts(d._id)).toEqual({ chunkCount: 2, embeddedCount: 1 });
      expect(await repo().chunks.removeFor(randomUUID(), d._id)).toBe(0);
      expect(await repo().chunks.removeFor(ws, d._id)).toBe(2);
    }),
  );

  it(
    'ingest state: only the owning job writes it; of two concurrent job claims exactly one wins',
    run(async () => {
      const ws = randomUUID();
      const m = memory(ws);
      await repo().memories.insert(m);
      expect(await repo().ingest.setState('memory', ws, m._id, 'other-job', { status: 'running' })).toBe(false);
      expect(await repo().ingest.setState('memory', ws, m._id, 'job-1', { status: 'ready', chunkCount: 4 })).toBe(true);
      const claims = await Promise.all(
        ['job-a', 'job-b'].map((j) => repo().ingest.claimJob('memory', ws, m._id, 'job-1', j)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      const got = await repo().ingest.load('memory', ws, m._id);
      expect(got?.ingest).toMatchObject({ status: 'pending', chunkCount: 4, jobId: claims[0] ? 'job-a' : 'job-b' });
      expect(got?.metadata).toEqual(META);
      expect(await repo().ingest.load('memory', randomUUID(), m._id)).toBeNull();
    }),
  );

  it(
    "owners: a neuron or trace of the workspace exists; another workspace's does not",
    run(async () => {
      const ws = randomUUID();
      const id = randomUUID();
      await h.db.collection('neurons').insertOne({ _id: id as never, workspaceId: ws });
      expect(await repo().owners.exists(ws, 'neuron', id)).toBe(true);
      expect(await repo().owners.exists(randomUUID(), 'neuron', id)).toBe(false);
      await h.db.collection('traces').insertOne({ _id: randomUUID() as never, workspaceId: ws, traceId: 'tr-1' });
      expect(await repo().owners.exists(ws, 'trace', 'tr-1')).toBe(true);
      expect(await repo().owners.exists(randomUUID(), 'trace', 'tr-1')).toBe(false);
    }),
  );

  it(
    "search reads: a re-read decodes, bundles chunks with vectors and leaves out another workspace's key",
    run(async () => {
      const ws = randomUUID();
      const d = artifact(ws);
      await repo().documents.insert(d);
      await repo().chunks.write([chunk(d, 1, 0)]);
      await repo().chunks.setVectors([
        { id: `${d._id}:1:0`, model: 'm', dimension: 2, vector: new Float32Array([3, 4]) },
      ]);
      const reads = h.repos(backend).searchSources;
      const got = await reads.artifacts.loadMany([
        { workspaceId: ws, id: d._id },
        { workspaceId: randomUUID(), id: randomUUID() },
      ]);
      expect([...got.keys()]).toEqual([d._id]);
      const rec = got.get(d._id)!;
      expect(rec.doc.metadata).toEqual(META);
      expect(rec.chunks.map((c) => [c.id, [...(c.vector ?? [])]])).toEqual([[`${d._id}:1:0`, [3, 4]]]);
      expect((await reads.artifacts.loadMany([{ workspaceId: randomUUID(), id: d._id }])).size).toBe(0);
      expect((await reads.assets.loadMany([{ workspaceId: ws, id: d._id }])).size).toBe(0);
    }),
  );
});
