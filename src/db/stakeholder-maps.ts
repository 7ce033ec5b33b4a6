import type { Db, Filter } from 'mongodb';
import { updateHeld, type HoldDoc } from './claims.js';
import type { Blob } from './codec.js';
import type { IndexSpec } from './client.js';
import { pageIndexes } from './paging.js';

export interface GraphCounts {
  stakeholders: number;
  interactions: number;
  edges: number;
  risks: number;
}

/**
 * A stakeholder map's head (a resource of kind stakeholder_map): a projection of its newest
 * revision and version, converged by writers after they claim (src/db/claims.ts).
 */
export interface StakeholderMapDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  name: string;
  description: string | null;
  /** The brain's default map (its id is derived from the brain, so it is created once). */
  isDefault: boolean;
  revision: number;
  latestVersion: number;
  counts: GraphCounts;
  summary: string;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * One state of the live graph, claimed by unique `_id` `<map>:<revision>` (src/db/claims.ts): a
 * small record pointing at the graph's body (`graphId` in stakeholder_map_graphs), so the
 * queries that scan revisions and versions never read graph bodies. Only the newest revisions
 * (and their bodies) are kept.
 */
export interface StakeholderRevisionDoc {
  _id: string;
  mapId: string;
  workspaceId: string;
  revision: number;
  graphId: string;
  counts: GraphCounts;
  /** Idempotency key of the change (an extraction job applies once). */
  opKey: string | null;
  createdBy: string | null;
  createdAt: Date;
}

/** A graph body (JSON through the codec), immutable, read by `_id` only. */
export interface StakeholderGraphDoc {
  _id: string;
  mapId: string;
  workspaceId: string;
  graph: Blob;
  createdAt: Date;
}

/** A saved version: a numbered snapshot of the live graph (unique per map and number), with its own body. */
export interface StakeholderVersionDoc {
  _id: string;
  mapId: string;
  workspaceId: string;
  brainId: string;
  version: number;
  label: string | null;
  revision: number;
  graphId: string;
  counts: GraphCounts;
  createdBy: string | null;
  createdAt: Date;
}

/** Where a stakeholder lives (briefings name a stakeholder by id alone). */
export interface StakeholderIndexDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  mapId: string;
  name: string;
}

/** An extraction's input and outcome, keyed by its job id (the workflow carries ids only). */
export interface StakeholderExtractionDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  mapId: string;
  model: string;
  source: { type: 'text' | 'meeting'; id: string | null };
  text: string;
  truncated: boolean;
  occurredAt: Date;
  userId: string | null;
  apiKeyId: string | null;
  /** The ops the model's answer became (JSON), stored before they are applied. */
  ops: Blob | null;
  appliedRevision: number | null;
  createdAt: Date;
}

export const stakeholderMapIndexes: IndexSpec[] = [
  { collection: 'stakeholder_maps', keys: { workspaceId: 1, brainId: 1, createdAt: -1 }, name: 'ws_brain_created' },
  // The map list and a map's version history page by key (src/db/paging.ts).
  ...pageIndexes('stakeholder_maps', ['workspaceId'], ['createdAt']),
  ...pageIndexes('stakeholder_maps', ['workspaceId', 'brainId'], ['createdAt']),
  ...pageIndexes('stakeholder_map_versions', ['workspaceId', 'mapId'], ['version']),
  { collection: 'stakeholder_map_revisions', keys: { mapId: 1, revision: -1 }, name: 'map_revision' },
  { collection: 'stakeholder_map_versions', keys: { mapId: 1, version: 1 }, unique: true, name: 'map_version_unique' },
  { collection: 'stakeholder_index', keys: { workspaceId: 1, mapId: 1 }, name: 'ws_map' },
];

export function createStakeholderMapRepo(db: Db) {
  const maps = db.collection<StakeholderMapDoc>('stakeholder_maps');
  const holds = db.collection<HoldDoc>('stakeholder_map_holds');
  return {
    maps,
    /** Every update of a map head goes through here: a revision's counts and a saved version's number are written by different writers (src/db/claims.ts). */
    updateHead: (filter: Filter<StakeholderMapDoc> & { _id: string }, set: Partial<StakeholderMapDoc>) =>
      updateHeld(holds, maps, filter, set),
    revisions: db.collection<StakeholderRevisionDoc>('stakeholder_map_revisions'),
    graphs: db.collection<StakeholderGraphDoc>('stakeholder_map_graphs'),
    versions: db.collection<StakeholderVersionDoc>('stakeholder_map_versions'),
    index: db.collection<StakeholderIndexDoc>('stakeholder_index'),
    extractions: db.collection<StakeholderExtractionDoc>('stakeholder_extractions'),
  };
}
export type StakeholderMapRepo = ReturnType<typeof createStakeholderMapRepo>;
