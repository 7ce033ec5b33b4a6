/**
 * The pathway model: a pathway's head and its capped version history, stored and decoded, its
 * participants, and the trails its runs record. store.ts (the contracts) and the adapters
 * (store.mongo.ts, trails.mongo.ts) import it.
 */
import type { Blob } from '../kernel/store/codec.js';

/**
 * How many version entries a pathway keeps on its head record (the history is capped). When a new version
 * would exceed it, the oldest entries are dropped; `latestVersion` keeps counting, so version numbers are never
 * reused and a dropped version reads as 404. 50 × the graph size cap (see PATHWAY_GRAPH_MAX_BYTES in
 * src/pathways/service.ts) keeps the head record well under the 16 MB document limit.
 */
export const PATHWAY_VERSION_CAP = 50;

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
  /** The id-based pathway_graph of this version (blob: client JSON, stored through src/kernel/store/codec.ts). */
  graph: Blob;
  name: string;
  description: string;
  /** Number of graph nodes, kept so summaries need not decode every graph. */
  nodeCount: number;
  /**
   * Who saved this version's graph (a user id, or an API key id for platform keys) and whether
   * they were a workspace admin then: what the graph's secrets and connections are checked against
   * when it runs (src/expressions/credentials.ts). Absent on versions recorded before: nobody, not an admin.
   */
  savedBy?: string | null;
  savedByAdmin?: boolean;
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
  /**
   * The name as a slug (src/neurons/service.ts toNeuronSlug), kept in step with the name: how
   * execute and the OpenAI model `pathway:<slug>` name a pathway of a brain. Not unique; missing on
   * pathways stored before slugs until the API's start-up fills it in.
   */
  slug?: string;
  description: string;
  graph: Blob;
  design: Blob;
  isActive: boolean;
  latestVersion: number;
  versions: PathwayVersionEntry[];
  /** Who saved the head's graph and whether they were an admin (as the version entries record it). */
  graphSavedBy?: string | null;
  graphSavedByAdmin?: boolean;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A pathway head read without its history (lists and single reads never load the 50 stored graphs). */
export type PathwayHead = Omit<PathwayDoc, 'versions'>;

/** A pathway head as the repository returns it: graph and design decoded (design null until first sent). */
export type Pathway = Omit<PathwayHead, 'graph' | 'design'> & { graph: unknown; design: unknown };
/** A kept version without its graph (history lists). */
export type PathwayVersionSummary = Omit<PathwayVersionEntry, 'graph'>;
/** A kept version with its graph decoded. */
export type PathwayVersion = PathwayVersionSummary & { graph: unknown };
/** The head fields a change may set. */
export type PathwayChange = Partial<
  Pick<
    Pathway,
    'graph' | 'design' | 'name' | 'slug' | 'description' | 'isActive' | 'graphSavedBy' | 'graphSavedByAdmin'
  >
>;
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

/** One node visit of a pathway run, in visiting order: the node (its index), its value and the handle it took. */
export interface TrailVisit {
  at: number;
  value: unknown;
  handle?: string;
  /** The visit had not ended when the run did. */
  pending?: boolean;
}

/**
 * What a pathway run recorded of its node visits when it ended (completed, failed or cancelled):
 * the values a replay (POST /v1/jobs/:id/replay) takes instead of running those nodes again.
 * One document per job, `_id` the job id; its values are free-form JSON, so stored as one blob.
 */
export interface PathwayTrailDoc {
  _id: string;
  workspaceId: string;
  visits: Blob;
  createdAt: Date;
}
