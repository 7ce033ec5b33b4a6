import type { Page, PageQuery } from '../kernel/store/paging.js';
import type { Graph } from './graph.js';
import type {
  MapKey,
  RevisionDraft,
  StakeholderExtraction,
  StakeholderMap,
  StakeholderPlace,
  StakeholderRevision,
  StakeholderVersion,
} from './model.js';
import type { StakeholderOp } from './schemas.js';

/**
 * What the stakeholder map services ask of their store, in domain terms (store.mongo.ts is the
 * MongoDB and FerretDB adapter, the live graph's revisions and bodies in graphs.mongo.ts): map
 * heads, the live graph's revisions and bodies, saved versions, stakeholder places, extractions.
 * Every tenant operation takes the workspace (or a map key holding it); the search index's
 * re-reads, walk and names work across workspaces.
 */
export interface StakeholderMapStore {
  /** A map head of the workspace, or null. */
  mapHead(workspaceId: string, id: string): Promise<StakeholderMap | null>;
  /** Stores a new map head. */
  create(m: StakeholderMap): Promise<void>;
  /** Creates a map whose id is derived (a brain's default map); false when it exists already. */
  claimMap(m: StakeholderMap): Promise<boolean>;
  /** A page of the workspace's maps (of one brain when given), newest first. */
  page(f: { workspaceId: string; brainId?: string }, q: PageQuery): Promise<Page<StakeholderMap>>;
  /** The head follows a claimed revision (unless a newer one got there first); true when it moved. */
  advanceHead(
    m: MapKey,
    revision: number,
    set: Pick<StakeholderMap, 'counts' | 'summary' | 'updatedAt'>,
  ): Promise<boolean>;
  /** The head names a newly saved version (unless a newer one got there first); true when it moved. */
  advanceLatestVersion(m: MapKey, version: number, at: Date): Promise<boolean>;
  /** Maps by id in bulk, in any workspace (the search index's re-reads; the caller checks each one's workspace). */
  findMany(ids: string[]): Promise<StakeholderMap[]>;
  /** Every map, a page at a time (the search index's snapshot walk). */
  walk(pageSize: number): AsyncIterable<StakeholderMap[]>;
  /** A graph body by id (decoded; cached, bodies never change). */
  graph(m: MapKey, id: string): Promise<Graph>;
  /** The live graph's newest revision, or null before the first change. */
  newestRevision(m: MapKey): Promise<StakeholderRevision | null>;
  /** The revision a change with this idempotency key made, if it was applied. */
  revisionWithOpKey(m: MapKey, opKey: string): Promise<StakeholderRevision | null>;
  /**
   * Stores `graph` and claims revision `draft.revision` for it. Null when another writer claimed
   * that number first: the caller re-applies its change to the newer graph.
   */
  claimRevision(m: MapKey, draft: RevisionDraft, graph: Graph): Promise<StakeholderRevision | null>;
  /** Removes the revisions numbered `upTo` and below, with their bodies. */
  pruneRevisions(m: MapKey, upTo: number): Promise<void>;
  /**
   * Stores `graph` as the body of the map's next version number (claimed: concurrent saves get
   * consecutive numbers).
   */
  claimNextVersion(
    m: StakeholderMap,
    graph: Graph,
    v: Pick<StakeholderVersion, 'label' | 'revision' | 'counts' | 'createdBy' | 'createdAt'>,
  ): Promise<StakeholderVersion>;
  /** The map's saved version of that number, or null. */
  version(m: MapKey, n: number): Promise<StakeholderVersion | null>;
  /** A saved version of the workspace by id, or null. */
  versionById(workspaceId: string, id: string): Promise<StakeholderVersion | null>;
  /** A page of the map's saved versions, newest first. */
  pageVersions(m: MapKey, q: PageQuery): Promise<Page<StakeholderVersion>>;
  /** Records the map each stakeholder is on (idempotent). */
  placeStakeholders(m: StakeholderMap, list: { id: string; name: string }[]): Promise<void>;
  /** Where a stakeholder of the workspace lives, or null. */
  stakeholderPlace(workspaceId: string, id: string): Promise<StakeholderPlace | null>;
  /** Names of the stakeholders on these maps, in any workspace (the search index; the caller checks workspaces). */
  stakeholderNames(mapIds: string[]): Promise<Pick<StakeholderPlace, '_id' | 'name' | 'mapId' | 'workspaceId'>[]>;
  /** Records an extraction under its job id, once (a second record of the same job keeps the first). */
  recordExtraction(x: Omit<StakeholderExtraction, 'ops' | 'appliedRevision'>): Promise<void>;
  /** An extraction of the workspace by its job id (ops decoded), or null. */
  extraction(workspaceId: string, jobId: string): Promise<StakeholderExtraction | null>;
  /** Stores the ops of an extraction that has none yet (a retried step keeps the first answer's). */
  setExtractionOps(x: Pick<StakeholderExtraction, '_id' | 'workspaceId'>, ops: StakeholderOp[]): Promise<void>;
  /** Records the revision an extraction's ops made. */
  setExtractionApplied(x: Pick<StakeholderExtraction, '_id' | 'workspaceId'>, revision: number): Promise<void>;
}
