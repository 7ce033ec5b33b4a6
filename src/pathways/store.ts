import type { Page, PageQuery, PageSort } from '../kernel/store/paging.js';
import type {
  Pathway,
  PathwayChange,
  PathwayDoc,
  PathwayParticipantDoc,
  PathwayRole,
  PathwayVersion,
  PathwayVersionSummary,
  TrailVisit,
} from './model.js';

export type { Page } from '../kernel/store/paging.js';

/**
 * What a change does, decided under the write hold from the head and its kept versions: the fields
 * to set and, with a note, a new version recording the tip's graph, name and description.
 */
export type PathwayPlan = (
  head: Pathway,
  kept: (version: number) => PathwayVersion | undefined,
) => { set: PathwayChange; note?: string };
/** The outcome of a change: the head after it, or why it was not made. */
export type PathwayChangeOutcome = Pathway | 'missing' | 'busy' | 'raced';
/** What a list shows: one brain's pathways, optionally by creator and matching `search` in the name. */
export interface PathwayListWhere {
  brainId: string;
  createdBy?: string;
  search?: string;
}

/**
 * What the pathway service asks of its store, in domain terms (store.mongo.ts is the MongoDB and
 * FerretDB adapter): pathway heads with their capped history, and their participants. Every tenant
 * operation takes the workspace; the search index's reads and the start-up repairs work across
 * workspaces.
 */
export interface PathwayStore {
  /**
   * The UTF-8 bytes a client value (a graph, a design) takes as stored: what its size limits are
   * checked against. A value nested deeper than the store keeps is refused (400, as on a write).
   */
  storedBytes(value: unknown): number;
  /** Whether two values are stored as the same text (a change that sends what is there changes nothing). */
  sameStored(a: unknown, b: unknown): boolean;
  /** The head without its history. */
  findHead(workspaceId: string, id: string): Promise<Pathway | null>;
  /** The head and its kept history (without graphs), or null. */
  history(workspaceId: string, id: string): Promise<{ head: Pathway; versions: PathwayVersionSummary[] } | null>;
  /** The head and one kept version with its graph (null when it is not kept), or null without the pathway. */
  findVersion(
    workspaceId: string,
    id: string,
    version: number,
  ): Promise<{ head: Pathway; entry: PathwayVersion | null } | null>;
  /** Names by id (usage reports). */
  namesOf(workspaceId: string, ids: string[]): Promise<Map<string, string>>;
  /** A page of one brain's pathways (heads without their history); a search is checked on the rows read in the sort's order. */
  page(workspaceId: string, where: PathwayListWhere, sort: PageSort, q: PageQuery): Promise<Page<Pathway>>;
  /** A new pathway with its version 1 (`note`). */
  create(p: Pathway, note: string): Promise<void>;
  /**
   * Applies a change planned on the current head under the pathway's write hold, so concurrent
   * saves never drop a version. With a note the change records the next version, dropping the
   * oldest past PATHWAY_VERSION_CAP. `brainId`: the pathway must be in that brain (else missing).
   */
  recordVersion(
    workspaceId: string,
    id: string,
    o: { brainId?: string; createdBy: string | null; plan: PathwayPlan },
  ): Promise<PathwayChangeOutcome>;
  /** Removes the pathway and its participants; false when the workspace had no such pathway. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** The search index's read: heads by id (any workspace). */
  searchRows(ids: string[]): Promise<Pathway[]>;
  /** The search index's walk of every head, a page at a time. */
  allSearchRows(): AsyncIterable<Pathway[]>;
  /** The pathway's participants, oldest first. */
  listParticipants(workspaceId: string, pathwayId: string): Promise<PathwayParticipantDoc[]>;
  /** The participant of that id in the workspace, or null. */
  findParticipant(workspaceId: string, id: string): Promise<PathwayParticipantDoc | null>;
  /** The user's participation in the pathway, or null. */
  findParticipantByUser(workspaceId: string, pathwayId: string, userId: string): Promise<PathwayParticipantDoc | null>;
  /** Adds a participant; false when the user is one already. */
  addParticipant(p: PathwayParticipantDoc): Promise<boolean>;
  /** Sets a participant's role. */
  setParticipantRole(workspaceId: string, id: string, role: PathwayRole): Promise<void>;
  /** Removes a participant; false when there was none. */
  removeParticipant(workspaceId: string, id: string): Promise<boolean>;
  /** Removes a user's participation; false when there was none. */
  removeParticipantByUser(workspaceId: string, pathwayId: string, userId: string): Promise<boolean>;
  /**
   * Neurons a pathway node may reference: not soft-deleted, and in `brainId` or workspace/core scoped; without a
   * brain, every neuron of the workspace. Read-only; the neurons area owns them.
   */
  neuronIds(workspaceId: string, brainId?: string): Promise<string[]>;
  /** Pathways a pathway or map node may run: those of `brainId`; without a brain, every pathway of the workspace. */
  pathwayIds(workspaceId: string, brainId?: string): Promise<string[]>;
  /** Ids of the brain's pathways with this slug (at most `limit`: two tell a name apart from an ambiguous one). */
  idsBySlug(workspaceId: string, brainId: string, slug: string, limit?: number): Promise<string[]>;
  /** Sets the slug of a pathway stored before slugs (start-up); false when it has one by now. */
  fillSlug(workspaceId: string, id: string, slug: string): Promise<boolean>;
  /** Every pathway of every workspace, its id, workspace, brain, name, slug and whether it is active (start-up repairs). */
  allSummaries(): Promise<Pick<PathwayDoc, '_id' | 'workspaceId' | 'brainId' | 'name' | 'slug' | 'isActive'>[]>;
}

/** What pathway runs ask of the trail store: the node visits a run recorded when it ended (replays take them). */
export interface PathwayTrailStore {
  /** Records the run's visits (a retried activity writes the same document again). */
  put(workspaceId: string, jobId: string, visits: TrailVisit[]): Promise<void>;
  /** The run's visits, or null when it recorded none (a run that has not ended, or ended before trails). */
  get(workspaceId: string, jobId: string): Promise<TrailVisit[] | null>;
}
