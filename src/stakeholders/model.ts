import type { Blob } from '../kernel/store/codec.js';
import type { StakeholderOp } from './schemas.js';

interface GraphCounts {
  stakeholders: number;
  interactions: number;
  edges: number;
  risks: number;
}

/**
 * One state of the live graph, claimed by unique `_id` `<map>:<revision>` (src/kernel/store/claims.ts): a
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
/** A revision as services see it (it holds no client JSON: the stored shape). */
export type StakeholderRevision = StakeholderRevisionDoc;

/** A graph body (JSON through the codec), immutable, read by `_id` only. */
export interface StakeholderGraphDoc {
  _id: string;
  mapId: string;
  workspaceId: string;
  graph: Blob;
  createdAt: Date;
}

/** The map a graph body or a revision belongs to. */
export interface MapKey {
  _id: string;
  workspaceId: string;
}

/** The fields of a revision a writer chooses (the rest follow from the map and the stored body). */
export type RevisionDraft = Pick<StakeholderRevision, 'revision' | 'counts' | 'opKey' | 'createdBy' | 'createdAt'>;

/**
 * A stakeholder map's head (a resource of kind stakeholder_map): a projection of its newest
 * revision and version, converged by writers after they claim (src/kernel/store/claims.ts).
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
/** A map head as services see it (it holds no client JSON: the stored shape). */
export type StakeholderMap = StakeholderMapDoc;

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
export type StakeholderVersion = StakeholderVersionDoc;

/** Where a stakeholder lives (briefings name a stakeholder by id alone). */
export interface StakeholderIndexDoc {
  _id: string;
  workspaceId: string;
  brainId: string;
  mapId: string;
  name: string;
}
export type StakeholderPlace = StakeholderIndexDoc;

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
/** An extraction as services see it: its ops decoded. */
export type StakeholderExtraction = Omit<StakeholderExtractionDoc, 'ops'> & { ops: StakeholderOp[] | null };
