import type { Collection, Db, Filter } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import { holding, isDuplicateKey, type HoldDoc } from '../kernel/store/claims.js';
import { escapeRegex, findById } from '../kernel/store/client.js';
import { searchReader } from '../kernel/store/rows.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from '../kernel/store/paging.js';
import {
  PATHWAY_VERSION_CAP,
  type Pathway,
  type PathwayChange,
  type PathwayDoc,
  type PathwayHead,
  type PathwayParticipantDoc,
  type PathwayRole,
  type PathwayVersion,
  type PathwayVersionEntry,
  type PathwayVersionSummary,
} from './model.js';
import type { PathwayChangeOutcome, PathwayListWhere, PathwayPlan, PathwayStore } from './store.js';

/**
 * How long a pathway write lock is honoured. A writer that crashed while holding it blocks others for at most this
 * long; a writer stalled for longer than this may have its lock broken (documented edge of a lease lock).
 */
const PATHWAY_LOCK_LEASE_MS = 10_000;

/** The fields of a neuron doc the pathway validator needs (read-only view of the neurons family's collection). */
interface NeuronRef {
  _id: string;
  workspaceId: string;
  brainId: string;
  scope: 'brain' | 'workspace' | 'core';
  deletedAt?: Date | null;
}

export const pathwayIndexes: IndexSpec[] = [
  // GET /v1/pathways: workspace + brain, sorted by created_at | updated_at | name; the name index also narrows search.
  // Each page is one range of (sort field, _id) (src/kernel/store/paging.ts); a search is checked on the rows read in that order.
  ...pageIndexes('pathways', ['workspaceId', 'brainId'], ['createdAt', 'updatedAt', 'name']),
  // ?createdBy=
  ...pageIndexes('pathways', ['workspaceId', 'brainId', 'createdBy'], ['createdAt', 'updatedAt', 'name']),
  // A pathway named by its slug (execute, the OpenAI-compatible model `pathway:<slug>`).
  { collection: 'pathways', keys: { workspaceId: 1, brainId: 1, slug: 1 }, name: 'ws_brain_slug' },
  { collection: 'pathway_participants', keys: { pathwayId: 1, userId: 1 }, unique: true, name: 'pathway_user_unique' },
  {
    collection: 'pathway_participants',
    keys: { workspaceId: 1, pathwayId: 1, createdAt: 1 },
    name: 'ws_pathway_created',
  },
];

const WITHOUT_HISTORY = { projection: { versions: 0 } } as const;
const EMPTY_GRAPH = { nodes: [], edges: [] };
/** How long a change waits for another change of the same pathway before giving up (busy). */
const LOCK_WAIT_MS = 5_000;

/** The bytes a value takes when stored (free-form client JSON is stored as its JSON text). */
const storedBytes = (value: unknown): number => Buffer.byteLength(encodeBlob(value), 'utf8');
/** Whether two values are stored as the same text (a change that sends what is there changes nothing). */
const sameStored = (a: unknown, b: unknown): boolean => encodeBlob(a) === encodeBlob(b);
const nodeCount = (graph: unknown): number => {
  const nodes = (graph as { nodes?: unknown } | null)?.nodes;
  return Array.isArray(nodes) ? nodes.length : 0;
};

function toPathway(d: PathwayHead | PathwayDoc): Pathway {
  const { versions: _v, ...head } = d as PathwayDoc;
  void _v;
  return {
    ...head,
    graph: decodeBlob<unknown>(head.graph, EMPTY_GRAPH),
    design: decodeBlob<unknown>(head.design, null),
  };
}
const summaryOf = ({ graph: _g, ...summary }: PathwayVersionEntry): PathwayVersionSummary => (void _g, summary);
const versionOf = (e: PathwayVersionEntry): PathwayVersion => ({
  ...e,
  graph: decodeBlob<unknown>(e.graph, EMPTY_GRAPH),
});

/** The stored form of a change: graph and design encoded. */
function encodeChange(set: PathwayChange): Partial<PathwayDoc> {
  const { graph, design, ...rest } = set;
  return {
    ...rest,
    ...(graph !== undefined ? { graph: encodeBlob(graph) } : {}),
    ...(design !== undefined ? { design: encodeBlob(design) } : {}),
  };
}

class Busy extends Error {}

/** The collections the pathway store reads and writes, shared by its groups. */
interface PathwayStoreContext {
  pathways: Collection<PathwayDoc>;
  participants: Collection<PathwayParticipantDoc>;
  neurons: Collection<NeuronRef>;
  /**
   * Write holds on pathway heads (`_id` = pathway id, src/kernel/store/claims.ts): FerretDB 1.x applies an update as read,
   * modify, write back without re-checking the filter, so two concurrent saves could both "win" and drop a version.
   */
  locks: Collection<HoldDoc>;
}

/** The next head state for a change planned on `doc` (a new version entry when the plan has a note). */
function nextState(doc: PathwayDoc, plan: PathwayPlan, createdBy: string | null): Partial<PathwayDoc> {
  const kept = (v: number) => {
    const e = (doc.versions ?? []).find((x) => x.version === v);
    return e && versionOf(e);
  };
  const { set, note } = plan(toPathway(doc), kept);
  const now = new Date();
  const next: Partial<PathwayDoc> = { ...encodeChange(set), updatedAt: now };
  if (note === undefined) return next;
  const merged = { ...doc, ...next };
  const entry: PathwayVersionEntry = {
    version: doc.latestVersion + 1,
    createdAt: now,
    createdBy,
    note,
    graph: merged.graph,
    name: merged.name,
    description: merged.description,
    nodeCount: nodeCount(set.graph !== undefined ? set.graph : decodeBlob<unknown>(doc.graph, EMPTY_GRAPH)),
    savedBy: merged.graphSavedBy ?? null,
    savedByAdmin: merged.graphSavedByAdmin ?? false,
  };
  // FerretDB ignores $push's $slice, so the capped history is rewritten whole.
  return {
    ...next,
    latestVersion: entry.version,
    versions: [...(doc.versions ?? []), entry].slice(-PATHWAY_VERSION_CAP),
  };
}

/** Writes the next state if the tip is still the one read (a second guard behind the write hold). */
async function apply(
  { pathways }: PathwayStoreContext,
  workspaceId: string,
  brainId: string | undefined,
  id: string,
  plan: PathwayPlan,
  by: string | null,
) {
  const doc = await findById(pathways, id, { workspaceId });
  if (!doc || (brainId && doc.brainId !== brainId)) return 'missing';
  const next = nextState(doc, plan, by);
  const r = await pathways.updateOne({ _id: id, workspaceId, latestVersion: doc.latestVersion }, { $set: next });
  if (r.matchedCount === 1) return toPathway({ ...doc, ...next });
  // Only reachable when a stalled writer's hold was broken, or the pathway was deleted meanwhile.
  return (await findById(pathways, id, { workspaceId }, WITHOUT_HISTORY)) ? 'raced' : 'missing';
}

/** Reads of pathway heads and their kept history. */
function createPathwayReads({
  pathways,
}: PathwayStoreContext): Pick<
  PathwayStore,
  | 'storedBytes'
  | 'sameStored'
  | 'findHead'
  | 'history'
  | 'findVersion'
  | 'namesOf'
  | 'page'
  | 'searchRows'
  | 'allSearchRows'
> {
  const search = searchReader(pathways, toPathway, WITHOUT_HISTORY);
  return {
    /** The stored size of a client value (its JSON text), and whether two values are stored alike. */
    storedBytes,
    sameStored,
    /** The head without its history. */
    findHead: async (workspaceId: string, id: string): Promise<Pathway | null> => {
      const d = await pathways.findOne<PathwayHead>({ _id: id, workspaceId }, WITHOUT_HISTORY);
      return d && toPathway(d);
    },
    /** The head and its kept history (without graphs), or null. */
    history: async (workspaceId: string, id: string) => {
      const d = await findById(pathways, id, { workspaceId });
      return d && { head: toPathway(d), versions: (d.versions ?? []).map(summaryOf) };
    },
    /** The head and one kept version with its graph (null when it is not kept), or null without the pathway. */
    findVersion: async (workspaceId: string, id: string, version: number) => {
      const d = await findById(pathways, id, { workspaceId });
      const entry = d && (d.versions ?? []).find((v) => v.version === version);
      return d && { head: toPathway(d), entry: entry ? versionOf(entry) : null };
    },
    /** Names by id (usage reports). */
    namesOf: async (workspaceId: string, ids: string[]): Promise<Map<string, string>> =>
      new Map(
        ids.length === 0
          ? []
          : (
              await pathways.find({ workspaceId, _id: { $in: ids } }, { projection: { _id: 1, name: 1 } }).toArray()
            ).map((p) => [p._id, p.name]),
      ),
    page: async (
      workspaceId: string,
      where: PathwayListWhere,
      sort: PageSort,
      q: PageQuery,
    ): Promise<Page<Pathway>> => {
      const filter: Filter<PathwayDoc> = { workspaceId, brainId: where.brainId };
      if (where.createdBy) filter.createdBy = where.createdBy;
      if (where.search) filter.name = { $regex: escapeRegex(where.search), $options: 'i' };
      const p = await page(pathways, filter, sort, q, WITHOUT_HISTORY);
      return { ...p, items: p.items.map(toPathway) };
    },
    /** The search index's reads: heads by id (any workspace) and a walk of them all. */
    searchRows: search.byIds,
    allSearchRows: search.all,
  };
}

/** Writes of pathway heads: a new pathway, a change under the write hold (with its version), a removal. */
function createPathwayWrites(ctx: PathwayStoreContext): Pick<PathwayStore, 'create' | 'recordVersion' | 'remove'> {
  const { pathways, participants, locks } = ctx;
  return {
    /** A new pathway with its version 1 (`note`). */
    async create(p: Pathway, note: string): Promise<void> {
      const graph = encodeBlob(p.graph);
      const first: PathwayVersionEntry = {
        version: 1,
        createdAt: p.createdAt,
        createdBy: p.createdBy,
        note,
        graph,
        name: p.name,
        description: p.description,
        nodeCount: nodeCount(p.graph),
        savedBy: p.graphSavedBy ?? null,
        savedByAdmin: p.graphSavedByAdmin ?? false,
      };
      await pathways.insertOne({ ...p, graph, design: encodeBlob(p.design), latestVersion: 1, versions: [first] });
    },
    /**
     * Applies a change planned on the current head under the pathway's write hold (`holding`,
     * src/kernel/store/claims.ts): FerretDB 1.x applies an update as read, modify, write back without
     * re-checking the filter, so two concurrent saves could both "win" and drop a version. With a
     * note the change records the next version, dropping the oldest past PATHWAY_VERSION_CAP.
     * `brainId`: the pathway must be in that brain (else missing).
     */
    async recordVersion(
      workspaceId: string,
      id: string,
      o: { brainId?: string; createdBy: string | null; plan: PathwayPlan },
    ): Promise<PathwayChangeOutcome> {
      try {
        return await holding(locks, id, () => apply(ctx, workspaceId, o.brainId, id, o.plan, o.createdBy), {
          leaseMs: PATHWAY_LOCK_LEASE_MS,
          waitMs: LOCK_WAIT_MS,
          busy: () => new Busy(),
        });
      } catch (e) {
        if (e instanceof Busy) return 'busy';
        throw e;
      }
    },
    async remove(workspaceId: string, id: string): Promise<boolean> {
      const r = await pathways.deleteOne({ _id: id, workspaceId });
      await participants.deleteMany({ workspaceId, pathwayId: id });
      return r.deletedCount === 1;
    },
  };
}

/** A pathway's participants. */
function createPathwayParticipants({
  participants,
}: PathwayStoreContext): Pick<
  PathwayStore,
  | 'listParticipants'
  | 'findParticipant'
  | 'findParticipantByUser'
  | 'addParticipant'
  | 'setParticipantRole'
  | 'removeParticipant'
  | 'removeParticipantByUser'
> {
  return {
    listParticipants: (workspaceId: string, pathwayId: string) =>
      participants.find({ workspaceId, pathwayId }).sort({ createdAt: 1, _id: 1 }).toArray(),
    findParticipant: (workspaceId: string, id: string) => findById(participants, id, { workspaceId }),
    findParticipantByUser: (workspaceId: string, pathwayId: string, userId: string) =>
      participants.findOne({ workspaceId, pathwayId, userId }),
    /** Adds a participant; false when the user is one already. */
    async addParticipant(p: PathwayParticipantDoc): Promise<boolean> {
      try {
        await participants.insertOne(p);
        return true;
      } catch (e) {
        if (isDuplicateKey(e)) return false;
        throw e;
      }
    },
    async setParticipantRole(workspaceId: string, id: string, role: PathwayRole): Promise<void> {
      await participants.updateOne({ _id: id, workspaceId }, { $set: { role } });
    },
    /** Removes a participant; false when there was none. */
    removeParticipant: async (workspaceId: string, id: string) =>
      (await participants.deleteOne({ _id: id, workspaceId })).deletedCount === 1,
    /** Removes a user's participation; false when there was none. */
    removeParticipantByUser: async (workspaceId: string, pathwayId: string, userId: string) =>
      (await participants.deleteOne({ workspaceId, pathwayId, userId })).deletedCount === 1,
  };
}

/** What a graph may reference (neurons, pathways), pathways by slug, and the start-up repairs' reads and writes. */
function createPathwayReferences({
  pathways,
  neurons,
}: PathwayStoreContext): Pick<PathwayStore, 'neuronIds' | 'pathwayIds' | 'idsBySlug' | 'fillSlug' | 'allSummaries'> {
  return {
    /**
     * Neurons a pathway node may reference: not soft-deleted, and in `brainId` or workspace/core scoped; without a
     * brain, every neuron of the workspace. Read-only; the neurons family owns the collection.
     */
    async neuronIds(workspaceId: string, brainId?: string): Promise<string[]> {
      const filter: Filter<NeuronRef> = brainId
        ? { workspaceId, $or: [{ brainId }, { scope: { $in: ['workspace', 'core'] } }] }
        : { workspaceId };
      const docs = await neurons.find(filter, { projection: { _id: 1, deletedAt: 1 } }).toArray();
      return docs.filter((d) => !d.deletedAt).map((d) => d._id);
    },
    /** Pathways a pathway or map node may run: those of `brainId`; without a brain, every pathway of the workspace. */
    async pathwayIds(workspaceId: string, brainId?: string): Promise<string[]> {
      const filter: Filter<PathwayDoc> = brainId ? { workspaceId, brainId } : { workspaceId };
      return (await pathways.find(filter, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
    },
    /** Ids of the brain's pathways with this slug (at most `limit`: two tell a name apart from an ambiguous one). */
    idsBySlug: async (workspaceId: string, brainId: string, slug: string, limit = 2): Promise<string[]> =>
      (await pathways.find({ workspaceId, brainId, slug }, { projection: { _id: 1 }, limit }).toArray()).map(
        (d) => d._id,
      ),
    /** Sets the slug of a pathway stored before slugs (start-up); false when it has one by now. */
    fillSlug: async (workspaceId: string, id: string, slug: string): Promise<boolean> =>
      (await pathways.updateOne({ _id: id, workspaceId, slug: { $exists: false } }, { $set: { slug } }))
        .modifiedCount === 1,
    /** Every pathway of every workspace, its id, workspace, brain, name, slug and whether it is active (start-up repairs). */
    allSummaries: () =>
      pathways
        .find<Pick<PathwayDoc, '_id' | 'workspaceId' | 'brainId' | 'name' | 'slug' | 'isActive'>>(
          {},
          { projection: { _id: 1, workspaceId: 1, brainId: 1, name: 1, slug: 1, isActive: 1 } },
        )
        .toArray(),
  };
}

/** The pathway store on MongoDB (and FerretDB): heads and participants; every query filters by workspace. */
export function createPathwayRepo(db: Db): PathwayStore {
  const ctx: PathwayStoreContext = {
    pathways: db.collection<PathwayDoc>('pathways'),
    participants: db.collection<PathwayParticipantDoc>('pathway_participants'),
    neurons: db.collection<NeuronRef>('neurons'),
    locks: db.collection<HoldDoc>('pathway_locks'),
  };
  return {
    ...createPathwayReads(ctx),
    ...createPathwayWrites(ctx),
    ...createPathwayParticipants(ctx),
    ...createPathwayReferences(ctx),
  };
}
