import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import { emptyGraph, type Graph } from './graph.js';
import { claim, newest } from '../kernel/store/claims.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import type {
  MapKey,
  RevisionDraft,
  StakeholderGraphDoc,
  StakeholderRevision,
  StakeholderRevisionDoc,
} from './model.js';

/** JSON characters of decoded graph bodies each process keeps in memory (a full map is ~2 MB). */
const GRAPH_CACHE_CHARS = 24_000_000;

/**
 * Graph bodies: immutable, so each process keeps the newest ones it read or wrote, decoded (up to
 * GRAPH_CACHE_CHARS of their JSON): a live read is then a small record lookup.
 */
export function createGraphBodies(graphs: Collection<StakeholderGraphDoc>) {
  const cache = new Map<string, { graph: Graph; size: number }>();
  let cached = 0;
  const remember = (id: string, graph: Graph, size: number) => {
    if (size > GRAPH_CACHE_CHARS) return;
    cache.delete(id);
    cache.set(id, { graph, size });
    cached += size;
    for (const [k, v] of cache) {
      if (cached <= GRAPH_CACHE_CHARS) break;
      cache.delete(k);
      cached -= v.size;
    }
  };
  const forget = (id: string) => {
    const hit = cache.get(id);
    if (hit) {
      cache.delete(id);
      cached -= hit.size;
    }
  };
  /** Cached bodies are keyed by workspace too: a hit is scoped as the read it stands for. */
  const keyOf = (m: MapKey, id: string) => `${m.workspaceId}:${id}`;
  return {
    async read(m: MapKey, id: string): Promise<Graph> {
      const hit = cache.get(keyOf(m, id));
      if (hit) return hit.graph;
      const doc = await graphs.findOne({ _id: id, workspaceId: m.workspaceId });
      if (!doc) throw new Error(`stakeholder graph body ${id} is missing`);
      const graph = decodeBlob<Graph>(doc.graph, emptyGraph());
      remember(keyOf(m, id), graph, doc.graph.length);
      return graph;
    },
    async store(m: MapKey, graph: Graph, at: Date): Promise<string> {
      const id = randomUUID();
      const body = encodeBlob(graph);
      await graphs.insertOne({ _id: id, mapId: m._id, workspaceId: m.workspaceId, graph: body, createdAt: at });
      remember(keyOf(m, id), graph, body.length);
      return id;
    },
    async drop(m: MapKey, id: string): Promise<void> {
      forget(keyOf(m, id));
      await graphs.deleteOne({ _id: id, workspaceId: m.workspaceId });
    },
  };
}
export type GraphBodies = ReturnType<typeof createGraphBodies>;

/** The live graph's revisions: claimed by unique insert, the newest few kept. */
export function revisionOps(revisions: Collection<StakeholderRevisionDoc>, bodies: GraphBodies) {
  const ofMap = (m: MapKey) => ({ workspaceId: m.workspaceId, mapId: m._id });
  return {
    /** The live graph's newest revision, or null before the first change. */
    newestRevision: (m: MapKey): Promise<StakeholderRevision | null> => newest(revisions, ofMap(m), 'revision'),
    /** The revision a change with this idempotency key made, if it was applied. */
    revisionWithOpKey: (m: MapKey, opKey: string): Promise<StakeholderRevision | null> =>
      revisions.findOne({ ...ofMap(m), opKey }),
    /**
     * Stores `graph` and claims revision `draft.revision` for it (src/kernel/store/claims.ts). Null when
     * another writer claimed that number first: the body is dropped and the caller re-applies its
     * change to the newer graph.
     */
    async claimRevision(m: MapKey, draft: RevisionDraft, graph: Graph): Promise<StakeholderRevision | null> {
      const graphId = await bodies.store(m, graph, draft.createdAt);
      const doc: StakeholderRevisionDoc = {
        _id: `${m._id}:${draft.revision}`,
        mapId: m._id,
        workspaceId: m.workspaceId,
        revision: draft.revision,
        graphId,
        counts: draft.counts,
        opKey: draft.opKey,
        createdBy: draft.createdBy,
        createdAt: draft.createdAt,
      };
      if (await claim(revisions, doc)) return doc;
      await bodies.drop(m, graphId);
      return null;
    },
    /** Removes the revisions numbered `upTo` and below, with their bodies. */
    async pruneRevisions(m: MapKey, upTo: number): Promise<void> {
      const old = await revisions
        .find({ ...ofMap(m), revision: { $lte: upTo } }, { projection: { graphId: 1 } })
        .toArray();
      // One by id (usually one per patch): FerretDB finds a document by _id without reading the others.
      for (const r of old) {
        await bodies.drop(m, r.graphId);
        await revisions.deleteOne({ _id: r._id, workspaceId: m.workspaceId });
      }
    },
  };
}
