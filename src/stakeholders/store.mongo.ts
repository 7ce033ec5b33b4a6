import { randomUUID } from 'node:crypto';
import type { Db } from 'mongodb';
import type { StakeholderOp } from './schemas.js';
import type { Graph } from './graph.js';
import { claim, claimNext, isDuplicateKey, updateHeld, type HoldDoc } from '../kernel/store/claims.js';
import { findById, findByIds, type IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { page, pageIndexes, type Page, type PageQuery } from '../kernel/store/paging.js';
import { createGraphBodies, revisionOps, type GraphBodies } from './graphs.mongo.js';
import type {
  MapKey,
  StakeholderExtraction,
  StakeholderExtractionDoc,
  StakeholderGraphDoc,
  StakeholderIndexDoc,
  StakeholderMap,
  StakeholderMapDoc,
  StakeholderPlace,
  StakeholderRevisionDoc,
  StakeholderVersion,
  StakeholderVersionDoc,
} from './model.js';
import type { StakeholderMapStore } from './store.js';

export const stakeholderMapIndexes: IndexSpec[] = [
  { collection: 'stakeholder_maps', keys: { workspaceId: 1, brainId: 1, createdAt: -1 }, name: 'ws_brain_created' },
  // The map list and a map's version history page by key (src/kernel/store/paging.ts); the newest version is read from the latter.
  ...pageIndexes('stakeholder_maps', ['workspaceId'], ['createdAt']),
  ...pageIndexes('stakeholder_maps', ['workspaceId', 'brainId'], ['createdAt']),
  ...pageIndexes('stakeholder_map_versions', ['workspaceId', 'mapId'], ['version']),
  // A map's newest revision, its revision by idempotency key, and the revisions to prune (workspace in every filter).
  {
    collection: 'stakeholder_map_revisions',
    keys: { workspaceId: 1, mapId: 1, revision: -1 },
    name: 'ws_map_revision',
  },
  { collection: 'stakeholder_map_versions', keys: { mapId: 1, version: 1 }, unique: true, name: 'map_version_unique' },
  { collection: 'stakeholder_index', keys: { workspaceId: 1, mapId: 1 }, name: 'ws_map' },
];

/** Decoded; FerretDB 1.x leaves the null fields of an upsert's `$setOnInsert` out of the stored document, so they read as null. */
const toExtraction = ({ ops, ...rest }: StakeholderExtractionDoc): StakeholderExtraction => ({
  ...rest,
  userId: rest.userId ?? null,
  apiKeyId: rest.apiKeyId ?? null,
  ops: ops == null ? null : decodeBlob<StakeholderOp[]>(ops, []),
  appliedRevision: rest.appliedRevision ?? null,
});

/** Map heads: created, read, listed, and converged after a claimed revision or version. */
function headOps(db: Db) {
  const maps = db.collection<StakeholderMapDoc>('stakeholder_maps');
  const holds = db.collection<HoldDoc>('stakeholder_map_holds');
  return {
    mapHead: (workspaceId: string, id: string): Promise<StakeholderMap | null> => findById(maps, id, { workspaceId }),
    create: async (m: StakeholderMap) => void (await maps.insertOne(m)),
    /** Creates a map whose id is derived (a brain's default map); false when it exists already. */
    claimMap: (m: StakeholderMap): Promise<boolean> => claim(maps, m),
    /** A page of the workspace's maps (of one brain when given), newest first. */
    page: (f: { workspaceId: string; brainId?: string }, q: PageQuery): Promise<Page<StakeholderMap>> =>
      page(
        maps,
        { workspaceId: f.workspaceId, ...(f.brainId ? { brainId: f.brainId } : {}) },
        {
          field: 'createdAt',
          dir: -1,
        },
        q,
      ),
    /**
     * The head follows a claimed revision (unless a newer one got there first). Head updates are
     * made under a hold: a revision's counts and a saved version's number have different writers.
     */
    advanceHead: (
      m: MapKey,
      revision: number,
      set: Pick<StakeholderMap, 'counts' | 'summary' | 'updatedAt'>,
    ): Promise<boolean> =>
      updateHeld(
        holds,
        maps,
        { _id: m._id, workspaceId: m.workspaceId, revision: { $lt: revision } },
        { revision, ...set },
      ),
    /** The head names a newly saved version (unless a newer one got there first). */
    advanceLatestVersion: (m: MapKey, version: number, at: Date): Promise<boolean> =>
      updateHeld(
        holds,
        maps,
        { _id: m._id, workspaceId: m.workspaceId, latestVersion: { $lt: version } },
        { latestVersion: version, updatedAt: at },
      ),
    /** Maps by id in bulk, in any workspace (the search index's re-reads; the caller checks each one's workspace). */
    findMany: (ids: string[]): Promise<StakeholderMap[]> => findByIds(maps, ids),
    /** Every map, a page at a time (the search index's snapshot walk). */
    async *walk(pageSize: number): AsyncIterable<StakeholderMap[]> {
      let batch: StakeholderMap[] = [];
      for await (const m of maps.find({})) {
        batch.push(m);
        if (batch.length >= pageSize) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length) yield batch;
    },
  };
}

/** Saved versions: numbered by claim, each with a body of its own. */
function versionOps(db: Db, bodies: GraphBodies) {
  const versions = db.collection<StakeholderVersionDoc>('stakeholder_map_versions');
  const ofMap = (m: MapKey) => ({ workspaceId: m.workspaceId, mapId: m._id });
  return {
    /**
     * Stores `graph` as the body of the map's next version number (claimed by unique insert:
     * concurrent saves get consecutive numbers).
     */
    async claimNextVersion(
      m: StakeholderMap,
      graph: Graph,
      v: Pick<StakeholderVersion, 'label' | 'revision' | 'counts' | 'createdBy' | 'createdAt'>,
    ): Promise<StakeholderVersion> {
      // The version keeps a body of its own: live bodies are pruned with their revisions.
      const graphId = await bodies.store(m, graph, v.createdAt);
      return (await claimNext(versions, ofMap(m), 'version', (prev) => ({
        _id: randomUUID(),
        mapId: m._id,
        workspaceId: m.workspaceId,
        brainId: m.brainId,
        version: (prev?.version ?? 0) + 1,
        label: v.label,
        revision: v.revision,
        graphId,
        counts: v.counts,
        createdBy: v.createdBy,
        createdAt: v.createdAt,
      })))!;
    },
    version: (m: MapKey, n: number): Promise<StakeholderVersion | null> =>
      versions.findOne({ ...ofMap(m), version: n }),
    versionById: (workspaceId: string, id: string): Promise<StakeholderVersion | null> =>
      findById(versions, id, { workspaceId }),
    /** A page of the map's saved versions, newest first. */
    pageVersions: (m: MapKey, q: PageQuery): Promise<Page<StakeholderVersion>> =>
      page(versions, ofMap(m), { field: 'version', dir: -1 }, q),
  };
}

/** Where each stakeholder lives. */
function placeOps(db: Db) {
  const index = db.collection<StakeholderIndexDoc>('stakeholder_index');
  return {
    /** Records the map each stakeholder is on (idempotent upserts; two writers racing to insert one id: the second becomes an update). */
    async placeStakeholders(m: StakeholderMap, list: { id: string; name: string }[]): Promise<void> {
      if (!list.length) return;
      const write = () =>
        index.bulkWrite(
          list.map((s) => ({
            updateOne: {
              filter: { _id: s.id, workspaceId: m.workspaceId },
              update: { $set: { brainId: m.brainId, mapId: m._id, name: s.name } },
              upsert: true,
            },
          })),
          { ordered: false },
        );
      try {
        await write();
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        await write();
      }
    },
    stakeholderPlace: (workspaceId: string, id: string): Promise<StakeholderPlace | null> =>
      findById(index, id, { workspaceId }),
    /** Names of the stakeholders on these maps, in any workspace (the search index; the caller checks workspaces). */
    stakeholderNames: (mapIds: string[]): Promise<Pick<StakeholderPlace, '_id' | 'name' | 'mapId' | 'workspaceId'>[]> =>
      index.find({ mapId: { $in: mapIds } }, { projection: { name: 1, mapId: 1, workspaceId: 1 } }).toArray(),
  };
}

/** Extractions: an input recorded before its job starts, the ops the model's answer became, the revision they made. */
function extractionOps(db: Db) {
  const extractions = db.collection<StakeholderExtractionDoc>('stakeholder_extractions');
  return {
    /** Records an extraction under its job id, once (a second record of the same job keeps the first). */
    recordExtraction: async (x: Omit<StakeholderExtraction, 'ops' | 'appliedRevision'>): Promise<void> => {
      const { _id, workspaceId, createdAt, ...rest } = x;
      await extractions.updateOne(
        { _id, workspaceId },
        { $setOnInsert: { ...rest, ops: null, appliedRevision: null, createdAt } },
        { upsert: true },
      );
    },
    extraction: async (workspaceId: string, jobId: string): Promise<StakeholderExtraction | null> => {
      const x = await findById(extractions, jobId, { workspaceId });
      return x ? toExtraction(x) : null;
    },
    /** Stores the ops of an extraction that has none yet (a retried step keeps the first answer's). */
    setExtractionOps: async (x: Pick<StakeholderExtraction, '_id' | 'workspaceId'>, ops: StakeholderOp[]) =>
      void (await extractions.updateOne(
        { _id: x._id, workspaceId: x.workspaceId, ops: null },
        { $set: { ops: encodeBlob(ops) } },
      )),
    setExtractionApplied: async (x: Pick<StakeholderExtraction, '_id' | 'workspaceId'>, revision: number) =>
      void (await extractions.updateOne(
        { _id: x._id, workspaceId: x.workspaceId },
        { $set: { appliedRevision: revision } },
      )),
  };
}

/** Stakeholder maps: heads, the live graph's revisions and bodies, saved versions, stakeholder places, extractions. */
export function createStakeholderMapRepo(db: Db): StakeholderMapStore {
  const bodies = createGraphBodies(db.collection<StakeholderGraphDoc>('stakeholder_map_graphs'));
  return {
    ...headOps(db),
    /** A graph body by id (decoded; cached, bodies never change). */
    graph: (m: MapKey, id: string): Promise<Graph> => bodies.read(m, id),
    ...revisionOps(db.collection<StakeholderRevisionDoc>('stakeholder_map_revisions'), bodies),
    ...versionOps(db, bodies),
    ...placeOps(db),
    ...extractionOps(db),
  };
}
