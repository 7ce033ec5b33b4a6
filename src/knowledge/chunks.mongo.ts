import { Binary, type Collection, type Db } from 'mongodb';
import { vectorToBytes } from '../embeddings/index.js';
import { findById } from '../kernel/store/client.js';
import type {
  Chunk,
  ChunkDoc,
  ChunkedKind,
  DocumentDoc,
  ChunkVector,
  IngestState,
  Ingestible,
  MemoryDoc,
} from './model.js';
import { heldUpdate, knowledgeCollections, toChunk, toDocument, toMemory } from './rows.mongo.js';
import { page, type PageQuery } from '../kernel/store/paging.js';
import type { ChunkStore, IngestStore } from './store.js';

/** Chunks are written in bulk batches of at most this many. */
const WRITE_BATCH = 500;

/**
 * Chunks of resource versions (docs/knowledge.md). Counts that the ingest steps and recounts
 * make filter by resource and version only: chunk `_id`s are `<resource>:<version>:<index>` of a
 * resource its caller read in its workspace, and that filter is the one FerretDB counts from
 * the index without reading a row.
 */
export function createChunkOps(db: Db): ChunkStore {
  const c = knowledgeCollections(db);
  const ofVersion = (workspaceId: string, resourceId: string, version: number) => ({
    workspaceId,
    resourceId,
    version,
  });
  return {
    get: async (workspaceId: string, id: string): Promise<Chunk | null> => {
      const r = await findById(c.chunks, id, { workspaceId });
      return r && toChunk(r);
    },
    /** Chunks of a resource's live version (the newest one chunked), in order, paged by (index, _id). */
    async page(workspaceId: string, resourceId: string, source: string | undefined, q: PageQuery) {
      const newest = await c.chunks
        .find({ resourceId }, { projection: { version: 1 } })
        .sort({ version: -1 })
        .limit(1)
        .next();
      const filter = { workspaceId, resourceId, version: newest?.version ?? 0, ...(source ? { source } : {}) };
      const p = await page(c.chunks, filter, { field: 'index', dir: 1 }, q);
      return { ...p, items: p.items.map(toChunk) };
    },
    /** Deletes a resource's chunks (of one source, when given); how many went. */
    removeFor: async (workspaceId: string, resourceId: string, source?: string): Promise<number> =>
      (await c.chunks.deleteMany({ workspaceId, resourceId, ...(source ? { source } : {}) })).deletedCount,
    /** A moved resource's chunks carry its new folder path. */
    setPath: async (workspaceId: string, resourceId: string, path: string): Promise<void> => {
      await c.chunks.updateMany({ resourceId, workspaceId }, { $set: { path } });
    },
    /** Embedding turned off: the resource's chunks lose their vectors. */
    dropVectors: async (workspaceId: string, resourceId: string): Promise<void> => {
      await c.chunks.updateMany({ resourceId, workspaceId }, { $set: { embedding: null } });
    },
    /** All of a resource's chunks, and those with a vector. */
    async counts(resourceId: string): Promise<{ chunkCount: number; embeddedCount: number }> {
      const [chunkCount, embeddedCount] = await Promise.all([
        c.chunks.countDocuments({ resourceId }),
        c.chunks.countDocuments({ resourceId, embedding: { $ne: null } }),
      ]);
      return { chunkCount, embeddedCount };
    },
    /** Chunks of some resources of a brain, and those with a vector (a recollection's stats). */
    async countIn(workspaceId: string, brainId: string, resourceIds: string[]) {
      const live = { workspaceId, brainId, resourceId: { $in: resourceIds } };
      const [chunkCount, embeddedCount] = await Promise.all([
        c.chunks.countDocuments(live),
        c.chunks.countDocuments({ ...live, embedding: { $ne: null } }),
      ]);
      return { chunkCount, embeddedCount };
    },

    // ---- the ingest steps ----
    /** The text of each stored chunk of a version, by chunk id. */
    textsOf: async (workspaceId: string, resourceId: string, version: number): Promise<Map<string, string>> =>
      new Map(
        (await c.chunks.find(ofVersion(workspaceId, resourceId, version), { projection: { text: 1 } }).toArray()).map(
          (x) => [x._id, x.text],
        ),
      ),
    /** Writes chunks by `_id` (a retried step writes the same ids again, never a second copy). */
    async write(chunks: Chunk[]): Promise<void> {
      const writes = chunks.map((x) => ({
        replaceOne: { filter: { _id: x._id }, replacement: { ...x, embedding: null } as ChunkDoc, upsert: true },
      }));
      for (let k = 0; k < writes.length; k += WRITE_BATCH)
        await c.chunks.bulkWrite(writes.slice(k, k + WRITE_BATCH), { ordered: false });
    },
    /** A re-chunk with fewer parts leaves no stale tail: removes chunks from index `count` on. */
    trim: async (workspaceId: string, resourceId: string, version: number, count: number): Promise<void> => {
      await c.chunks.deleteMany({ ...ofVersion(workspaceId, resourceId, version), index: { $gte: count } });
    },
    /** Chunks [from, to) of a version, in order. */
    range: async (workspaceId: string, resourceId: string, version: number, from: number, to: number) =>
      (
        await c.chunks
          .find({ ...ofVersion(workspaceId, resourceId, version), index: { $gte: from, $lt: to } })
          .sort({ index: 1 })
          .toArray()
      ).map(toChunk),
    /** Stores the vectors of chunks (one bulk write). */
    async setVectors(rows: ChunkVector[]): Promise<void> {
      if (!rows.length) return;
      await c.chunks.bulkWrite(
        rows.map((r) => ({
          updateOne: {
            filter: { _id: r.id },
            update: {
              $set: {
                embedding: { model: r.model, dimension: r.dimension, vector: new Binary(vectorToBytes(r.vector)) },
              },
            },
          },
        })),
        { ordered: false },
      );
    },
    /** A version's chunks, and those with a vector of `model`. */
    async versionCounts(resourceId: string, version: number, model: string) {
      const [chunkCount, embeddedCount] = await Promise.all([
        c.chunks.countDocuments({ resourceId, version }),
        c.chunks.countDocuments({ resourceId, version, 'embedding.model': model }),
      ]);
      return { chunkCount, embeddedCount };
    },
    removeVersion: async (workspaceId: string, resourceId: string, version: number): Promise<void> => {
      await c.chunks.deleteMany(ofVersion(workspaceId, resourceId, version));
    },
    /** The versions before `version` go once it is live. */
    removeOlder: async (workspaceId: string, resourceId: string, version: number): Promise<void> => {
      await c.chunks.deleteMany({ workspaceId, resourceId, version: { $lt: version } });
    },
    /** Resources of the workspace with chunks that have no vector of `model` (from at most `scan` chunks), in the order found. */
    async staleResources(workspaceId: string, model: string, scan: number): Promise<Map<string, ChunkedKind>> {
      const rows = await c.chunks
        .find({ workspaceId, 'embedding.model': { $ne: model } }, { projection: { resourceId: 1, resourceKind: 1 } })
        .limit(scan)
        .toArray();
      return new Map(rows.map((r) => [r.resourceId, r.resourceKind]));
    },
  };
}

type IngestibleDoc = (DocumentDoc | MemoryDoc) & { ingest: IngestState };

/** The ingest state of chunked resources (asset and artifact rows, memories), each update under the row's hold. */
export function createIngestOps(db: Db): IngestStore {
  const c = knowledgeCollections(db);
  const update = heldUpdate(c.holds);
  const collOf = (kind: ChunkedKind) =>
    (kind === 'memory' ? c.memories : c.documents) as unknown as Collection<IngestibleDoc>;
  const dotted = (patch: Partial<IngestState>) =>
    Object.fromEntries(Object.entries(patch).map(([k, v]) => [`ingest.${k}`, v]));
  return {
    async load(kind: ChunkedKind, workspaceId: string, id: string): Promise<Ingestible | null> {
      const r = await findById(collOf(kind), id, { workspaceId });
      if (!r) return null;
      return kind === 'memory' ? toMemory(r as MemoryDoc) : toDocument(r as DocumentDoc);
    },
    /** Writes the ingest state while `jobId` owns the resource's current version. */
    setState: (kind: ChunkedKind, workspaceId: string, id: string, jobId: string, patch: Partial<IngestState>) =>
      update(collOf(kind), { _id: id, workspaceId, 'ingest.jobId': jobId }, dotted(patch)),
    /** The body's type as the full body tells it. */
    setContentType: (kind: ChunkedKind, workspaceId: string, id: string, contentType: string) =>
      update(collOf(kind), { _id: id, workspaceId }, { contentType }),
    /** Hands the resource's version to a new job while `previousJobId` still owns it; false when another took it. */
    claimJob: (kind: ChunkedKind, workspaceId: string, id: string, previousJobId: string | null, jobId: string) =>
      update(
        collOf(kind),
        { _id: id, workspaceId, 'ingest.jobId': previousJobId },
        { 'ingest.jobId': jobId, 'ingest.status': 'pending' },
      ),
    /** The chunk counts of a resource (read from its chunks after a removal). */
    setCounts: (
      kind: ChunkedKind,
      workspaceId: string,
      id: string,
      counts: { chunkCount: number; embeddedCount: number },
    ) => update(collOf(kind), { _id: id, workspaceId }, dotted(counts)),
  };
}
