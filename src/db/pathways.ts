import type { Db, Filter } from 'mongodb';
import type { IndexSpec } from './client.js';
import type { Blob } from './codec.js';
import type { HoldDoc } from './claims.js';
import { findById } from './client.js';
import { page, pageIndexes, type Page, type PageQuery, type PageSort } from './paging.js';

/**
 * How many version entries a pathway keeps on its head record (the history is capped). When a new version
 * would exceed it, the oldest entries are dropped; `latestVersion` keeps counting, so version numbers are never
 * reused and a dropped version reads as 404. 50 × the graph size cap (see PATHWAY_GRAPH_MAX_BYTES in
 * src/services/pathways.ts) keeps the head record well under the 16 MB document limit.
 */
export const PATHWAY_VERSION_CAP = 50;

/**
 * How long a pathway write lock is honoured. A writer that crashed while holding it blocks others for at most this
 * long; a writer stalled for longer than this may have its lock broken (documented edge of a lease lock).
 */
export const PATHWAY_LOCK_LEASE_MS = 10_000;

/** A pathway participant's role; owner ⊇ editor ⊇ viewer. */
export type PathwayRole = 'owner' | 'editor' | 'viewer';

/** One entry of a pathway's capped history: the versioned content (graph, name, description) at that version. */
export interface PathwayVersionEntry {
  version: number;
  createdAt: Date;
  /** userId for a JWT, apiKeyId for an API key, null for system work. */
  createdBy: string | null;
  /** What made this version: 'created', 'updated: graph, name', 'promoted from v3'. */
  note: string | null;
  /** The id-based pathway_graph of this version (blob: client JSON, stored through src/db/codec.ts). */
  graph: Blob;
  name: string;
  description: string;
  /** Number of graph nodes, kept so summaries need not decode every graph. */
  nodeCount: number;
}

/**
 * The head of a pathway. `graph` (pathway_graph, id-based) and `design` (pathway_data, the editor's design graph)
 * are blobs stored exactly as the client sent them (design holds null until pathway_data is first sent).
 * `versions` is the capped history, oldest first; its last entry always equals the head's graph/name/description at `latestVersion`.
 */
export interface PathwayDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string;
  description: string;
  graph: Blob;
  design: Blob;
  isActive: boolean;
  latestVersion: number;
  versions: PathwayVersionEntry[];
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A pathway head read without its history (lists and single reads never load the 50 stored graphs). */
export type PathwayHead = Omit<PathwayDoc, 'versions'>;

/** A user's role on one pathway; unique per (pathwayId, userId). */
export interface PathwayParticipantDoc {
  _id: string;
  workspaceId: string;
  pathwayId: string;
  userId: string;
  role: PathwayRole;
  addedBy: string | null;
  createdAt: Date;
}

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
  // Each page is one range of (sort field, _id) (src/db/paging.ts); a search is checked on the rows read in that order.
  ...pageIndexes('pathways', ['workspaceId', 'brainId'], ['createdAt', 'updatedAt', 'name']),
  // ?createdBy=
  ...pageIndexes('pathways', ['workspaceId', 'brainId', 'createdBy'], ['createdAt', 'updatedAt', 'name']),
  { collection: 'pathway_participants', keys: { pathwayId: 1, userId: 1 }, unique: true, name: 'pathway_user_unique' },
  {
    collection: 'pathway_participants',
    keys: { workspaceId: 1, pathwayId: 1, createdAt: 1 },
    name: 'ws_pathway_created',
  },
];

const WITHOUT_HISTORY = { projection: { versions: 0 } } as const;

/** Pathway heads and participants; every query filters by workspace. */
export function createPathwayRepo(db: Db) {
  const pathways = db.collection<PathwayDoc>('pathways');
  const participants = db.collection<PathwayParticipantDoc>('pathway_participants');
  const neurons = db.collection<NeuronRef>('neurons');
  /**
   * Write holds on pathway heads (`_id` = pathway id, src/db/claims.ts): FerretDB 1.x applies an update as read,
   * modify, write back without re-checking the filter, so two concurrent saves could both "win" and drop a version.
   */
  const locks = db.collection<HoldDoc>('pathway_locks');
  return {
    pathways,
    participants,
    locks,
    /** The head without its history. */
    findHead: (workspaceId: string, id: string) =>
      pathways.findOne<PathwayHead>({ _id: id, workspaceId }, WITHOUT_HISTORY),
    /** The head with its capped history. */
    findFull: (workspaceId: string, id: string) => findById(pathways, id, { workspaceId }),
    list: async (
      filter: Filter<PathwayDoc> & { workspaceId: string },
      sort: PageSort,
      q: PageQuery,
    ): Promise<Page<PathwayHead>> => page(pathways, filter, sort, q, WITHOUT_HISTORY),
    /**
     * Writes a new head state if the tip is still `expectedVersion` (a second guard behind the write lock; FerretDB
     * ignores $push's $slice, so the capped history is rewritten whole).
     */
    async writeIfVersion(
      workspaceId: string,
      id: string,
      expectedVersion: number,
      set: Partial<PathwayDoc>,
    ): Promise<boolean> {
      const r = await pathways.updateOne({ _id: id, workspaceId, latestVersion: expectedVersion }, { $set: set });
      return r.matchedCount === 1;
    },
    async remove(workspaceId: string, id: string): Promise<boolean> {
      const r = await pathways.deleteOne({ _id: id, workspaceId });
      await participants.deleteMany({ workspaceId, pathwayId: id });
      return r.deletedCount === 1;
    },
    listParticipants: (workspaceId: string, pathwayId: string) =>
      participants.find({ workspaceId, pathwayId }).sort({ createdAt: 1, _id: 1 }).toArray(),
    findParticipant: (workspaceId: string, id: string) => findById(participants, id, { workspaceId }),
    findParticipantByUser: (workspaceId: string, pathwayId: string, userId: string) =>
      participants.findOne({ workspaceId, pathwayId, userId }),
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
    /** Every pathway of every workspace, its id, workspace, brain, name and whether it is active (start-up repairs). */
    allSummaries: () =>
      pathways
        .find<Pick<PathwayDoc, '_id' | 'workspaceId' | 'brainId' | 'name' | 'isActive'>>(
          {},
          { projection: { _id: 1, workspaceId: 1, brainId: 1, name: 1, isActive: 1 } },
        )
        .toArray(),
  };
}
export type PathwayRepo = ReturnType<typeof createPathwayRepo>;
