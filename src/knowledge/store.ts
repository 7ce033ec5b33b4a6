import type { Page, PageQuery } from '../kernel/store/paging.js';
import type {
  Chunk,
  ChunkCounts,
  ChunkedKind,
  ChunkVector,
  DocumentFolderRow,
  DocumentScope,
  DocumentTreeRow,
  DocumentVersion,
  IngestState,
  Ingestible,
  KnowledgeDocument,
  KnowledgeSort,
  Lane,
  Memory,
  MemoryScope,
  Recollection,
  RecollectionMember,
} from './model.js';

/**
 * Assets and artifacts: the document table's rows and their versions (docs/knowledge.md), in
 * domain terms (documents.mongo.ts is the MongoDB and FerretDB adapter). Every operation takes the
 * workspace; metadata is decoded.
 */
export interface DocumentStore {
  /** A row of the workspace, or null. */
  get(workspaceId: string, id: string): Promise<KnowledgeDocument | null>;
  /** Stores a new row. */
  insert(doc: KnowledgeDocument): Promise<void>;
  /** One page of a lane's rows (src/kernel/store/paging.ts). */
  page(workspaceId: string, s: DocumentScope, sort: KnowledgeSort, q: PageQuery): Promise<Page<KnowledgeDocument>>;
  /** Id, name and folder of up to `limit` rows (a lane's folder structure). */
  folderRows(workspaceId: string, s: DocumentScope, limit: number): Promise<DocumentFolderRow[]>;
  /** Rows of both lanes in (path, name) order, without their content (the resource tree), at most `limit`. */
  tree(workspaceId: string, s: DocumentScope, limit: number): Promise<DocumentTreeRow[]>;
  /**
   * Writes a new head when the stored one is older than `set.version` (when given), under the
   * row's hold; true when it changed.
   */
  setHead(workspaceId: string, id: string, set: Partial<KnowledgeDocument>): Promise<boolean>;
  /** Removes a row; its versions, chunks and recollection memberships go with `removeRelated`. */
  remove(workspaceId: string, id: string): Promise<void>;
  /** Removes a removed row's versions, chunks and recollection memberships. */
  removeRelated(workspaceId: string, id: string): Promise<void>;
  /** The lanes of those of `ids` that are rows of the brain. */
  lanesIn(workspaceId: string, brainId: string, ids: string[]): Promise<{ id: string; lane: Lane }[]>;
  /** How many of `ids` are rows of the brain. */
  countIn(workspaceId: string, brainId: string, ids: string[]): Promise<number>;
  /** The newest versions of a row, newest first (at most 500). */
  versions(workspaceId: string, id: string): Promise<DocumentVersion[]>;
  /** One version of a row, or null. */
  version(workspaceId: string, id: string, version: number): Promise<DocumentVersion | null>;
  /** Records a version as it is (the first one; later ones are claimed with `claimVersion`). */
  recordVersion(v: DocumentVersion): Promise<void>;
  /**
   * Claims the next version of a row: `build` gets the newest version (null before the first
   * claimed one) and returns the next, or null when there is nothing to change. A writer that
   * loses the number builds again on the new newest. Returns the claimed version, or null.
   */
  claimVersion(
    documentId: string,
    build: (previous: DocumentVersion | null) => DocumentVersion | null,
  ): Promise<DocumentVersion | null>;
}

/** Memories (docs/knowledge.md, "Memories and recollections"), metadata decoded (memories.mongo.ts is the adapter). */
export interface MemoryStore {
  /** A memory of the workspace, or null. */
  get(workspaceId: string, id: string): Promise<Memory | null>;
  /** Stores a new memory. */
  insert(m: Memory): Promise<void>;
  /** One page of the workspace's memories in scope (src/kernel/store/paging.ts). */
  page(workspaceId: string, s: MemoryScope, sort: KnowledgeSort, q: PageQuery): Promise<Page<Memory>>;
  /** Those of `ids` that are memories of the workspace (and of the brain, when given). */
  findMany(workspaceId: string, ids: string[], brainId?: string): Promise<Memory[]>;
  /** Memories of the workspace (and brain) by name, at most `limit` (the broad resource tree). */
  byName(workspaceId: string, brainId: string | undefined, limit: number): Promise<Memory[]>;
  /**
   * Head fields (name, description, title source…) under the row's hold, while `onlyWhile` still
   * holds; true when it changed.
   */
  setHead(
    workspaceId: string,
    id: string,
    set: Partial<Memory>,
    onlyWhile?: Partial<Pick<Memory, 'titleSource'>>,
  ): Promise<boolean>;
  /** Removes a memory; true when this call removed it. Its chunks and memberships go with `removeRelated`. */
  remove(workspaceId: string, id: string): Promise<boolean>;
  /** Removes a removed memory's chunks and recollection memberships. */
  removeRelated(workspaceId: string, id: string): Promise<void>;
  /** Those of `ids` that are memories of the brain. */
  idsIn(workspaceId: string, brainId: string, ids: string[]): Promise<string[]>;
  /** How many of `ids` are memories of the brain. */
  countIn(workspaceId: string, brainId: string, ids: string[]): Promise<number>;
}

/** Recollections and their members: named groupings of a brain's resources (memories.mongo.ts is the adapter). */
export interface RecollectionStore {
  /** A recollection of the workspace, or null. */
  get(workspaceId: string, id: string): Promise<Recollection | null>;
  /** Stores a new recollection. */
  insert(r: Recollection): Promise<void>;
  /** One page of the workspace's recollections (of one brain, when given), newest first. */
  page(workspaceId: string, brainId: string | undefined, q: PageQuery): Promise<Page<Recollection>>;
  /** Sets head fields of a recollection. */
  update(workspaceId: string, id: string, set: Partial<Recollection>): Promise<void>;
  /** Removes a recollection and its memberships. */
  remove(workspaceId: string, id: string): Promise<void>;
  /** The members, oldest first (at most 1,000). */
  members(workspaceId: string, id: string): Promise<RecollectionMember[]>;
  /** The ids of all members. */
  memberIds(workspaceId: string, id: string): Promise<string[]>;
  /** Adds members by resource id and kind (idempotent: an existing membership is kept as it was). */
  addMembers(workspaceId: string, id: string, kinds: Map<string, ChunkedKind>, addedAt: Date): Promise<void>;
  /** Removes those of `resourceIds` that are members. */
  removeMembers(workspaceId: string, id: string, resourceIds: string[]): Promise<void>;
}

/**
 * Chunks of resource versions (docs/knowledge.md) and the ingest steps' writes of them
 * (chunks.mongo.ts is the adapter). Reads hand out a chunk's embedding model and dimension, never
 * its vector (that stays with the search index).
 */
export interface ChunkStore {
  /** A chunk of the workspace, or null. */
  get(workspaceId: string, id: string): Promise<Chunk | null>;
  /** Chunks of a resource's live version (the newest one chunked), in order, paged by (index, _id). */
  page(workspaceId: string, resourceId: string, source: string | undefined, q: PageQuery): Promise<Page<Chunk>>;
  /** Deletes a resource's chunks (of one source, when given); how many went. */
  removeFor(workspaceId: string, resourceId: string, source?: string): Promise<number>;
  /** A moved resource's chunks carry its new folder path. */
  setPath(workspaceId: string, resourceId: string, path: string): Promise<void>;
  /** Embedding turned off: the resource's chunks lose their vectors. */
  dropVectors(workspaceId: string, resourceId: string): Promise<void>;
  /** All of a resource's chunks, and those with a vector. */
  counts(resourceId: string): Promise<ChunkCounts>;
  /** Chunks of some resources of a brain, and those with a vector (a recollection's stats). */
  countIn(workspaceId: string, brainId: string, resourceIds: string[]): Promise<ChunkCounts>;
  /** The text of each stored chunk of a version, by chunk id. */
  textsOf(workspaceId: string, resourceId: string, version: number): Promise<Map<string, string>>;
  /** Writes chunks, without vectors, by `_id` (a retried step writes the same ids again, never a second copy). */
  write(chunks: Chunk[]): Promise<void>;
  /** A re-chunk with fewer parts leaves no stale tail: removes chunks from index `count` on. */
  trim(workspaceId: string, resourceId: string, version: number, count: number): Promise<void>;
  /** Chunks [from, to) of a version, in order. */
  range(workspaceId: string, resourceId: string, version: number, from: number, to: number): Promise<Chunk[]>;
  /** Stores the vectors of chunks. */
  setVectors(rows: ChunkVector[]): Promise<void>;
  /** A version's chunks, and those with a vector of `model`. */
  versionCounts(resourceId: string, version: number, model: string): Promise<ChunkCounts>;
  /** Removes a version's chunks. */
  removeVersion(workspaceId: string, resourceId: string, version: number): Promise<void>;
  /** The versions before `version` go once it is live. */
  removeOlder(workspaceId: string, resourceId: string, version: number): Promise<void>;
  /**
   * Resources of the workspace with chunks that have no vector of `model` (from at most `scan`
   * chunks), in the order found.
   */
  staleResources(workspaceId: string, model: string, scan: number): Promise<Map<string, ChunkedKind>>;
}

/**
 * The ingest state of chunked resources (asset and artifact rows, memories), each update under the
 * row's hold (chunks.mongo.ts is the adapter). Writes return true when they changed the row.
 */
export interface IngestStore {
  /** The resource of that kind in the workspace, or null. */
  load(kind: ChunkedKind, workspaceId: string, id: string): Promise<Ingestible | null>;
  /** Writes the ingest state while `jobId` owns the resource's current version. */
  setState(
    kind: ChunkedKind,
    workspaceId: string,
    id: string,
    jobId: string,
    patch: Partial<IngestState>,
  ): Promise<boolean>;
  /** The body's type as the full body tells it. */
  setContentType(kind: ChunkedKind, workspaceId: string, id: string, contentType: string): Promise<boolean>;
  /** Hands the resource's version to a new job while `previousJobId` still owns it; false when another took it. */
  claimJob(
    kind: ChunkedKind,
    workspaceId: string,
    id: string,
    previousJobId: string | null,
    jobId: string,
  ): Promise<boolean>;
  /** The chunk counts of a resource (read from its chunks after a removal). */
  setCounts(kind: ChunkedKind, workspaceId: string, id: string, counts: ChunkCounts): Promise<boolean>;
}

/** The owners a memory may name (owners.mongo.ts is the adapter): the memory service's one existence check. */
export interface OwnerStore {
  /** Whether the workspace has this neuron (by key) or this trace (by its key, else by its trace id). */
  exists(workspaceId: string, type: 'neuron' | 'trace', id: string): Promise<boolean>;
}

/**
 * What the document, memory, ingest and catalog services ask of the knowledge store, in domain
 * terms (store.mongo.ts gathers the adapter's parts). Rows of the document and memory tables have
 * several writers (a new version's head, its ingest job's state, a recount): the adapter makes
 * every update of them under the row's hold.
 */
export interface KnowledgeStore {
  documents: DocumentStore;
  memories: MemoryStore;
  recollections: RecollectionStore;
  chunks: ChunkStore;
  ingest: IngestStore;
  owners: OwnerStore;
}
