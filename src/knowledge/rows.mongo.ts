import type { Collection, Db, Filter } from 'mongodb';
import { updateHeld, type HoldDoc } from '../kernel/store/claims.js';
import { decodeBlob, encodeBlob } from '../kernel/store/codec.js';
import type {
  Chunk,
  ChunkDoc,
  DocumentDoc,
  DocumentVersion,
  DocumentVersionDoc,
  KnowledgeDocument,
  Memory,
  MemoryDoc,
  RecollectionDoc,
  RecollectionMemberDoc,
} from './model.js';

/** The knowledge area's collections (shared by its repository modules, never handed out). */
export function knowledgeCollections(db: Db) {
  return {
    documents: db.collection<DocumentDoc>('documents'),
    versions: db.collection<DocumentVersionDoc>('document_versions'),
    chunks: db.collection<ChunkDoc>('chunks'),
    memories: db.collection<MemoryDoc>('memories'),
    recollections: db.collection<RecollectionDoc>('recollections'),
    members: db.collection<RecollectionMemberDoc>('recollection_members'),
    holds: db.collection<HoldDoc>('knowledge_holds'),
  };
}

/**
 * Every update of a document or memory row goes through here, under the row's hold: rows have
 * several writers (a new version's head, its ingest job's state, a recount), and FerretDB 1.x
 * applies an update as read-modify-write of the whole row (src/kernel/store/claims.ts, updateHeld).
 */
export const heldUpdate =
  (holds: Collection<HoldDoc>) =>
  <T extends DocumentDoc | MemoryDoc>(
    coll: Collection<T>,
    filter: Filter<T> & { _id: string },
    set: Record<string, unknown>,
  ) =>
    updateHeld(holds, coll, filter, set);

/** A set of head fields for the store: metadata encoded. */
export function encodeSet<T extends { metadata?: unknown }>(set: T): Record<string, unknown> {
  const { metadata, ...rest } = set;
  return metadata === undefined ? rest : { ...rest, metadata: encodeBlob(metadata, 'metadata') };
}

const meta = (b: string | null | undefined) => decodeBlob<Record<string, unknown>>(b, {});

export const toDocument = ({ metadata, ...r }: DocumentDoc): KnowledgeDocument => ({ ...r, metadata: meta(metadata) });
export const fromDocument = ({ metadata, ...r }: KnowledgeDocument): DocumentDoc => ({
  ...r,
  metadata: encodeBlob(metadata, 'metadata'),
});
export const toVersion = ({ metadata, ...v }: DocumentVersionDoc): DocumentVersion => ({
  ...v,
  metadata: meta(metadata),
});
export const fromVersion = ({ metadata, ...v }: DocumentVersion): DocumentVersionDoc => ({
  ...v,
  metadata: encodeBlob(metadata, 'metadata'),
});
export const toMemory = ({ metadata, ...m }: MemoryDoc): Memory => ({ ...m, metadata: meta(metadata) });
export const fromMemory = ({ metadata, ...m }: Memory): MemoryDoc => ({
  ...m,
  metadata: encodeBlob(metadata, 'metadata'),
});
export const toChunk = ({ embedding, ...c }: ChunkDoc): Chunk => ({
  ...c,
  embedding: embedding ? { model: embedding.model, dimension: embedding.dimension } : null,
});

/** A folder path and everything below it (`a/b` matches `a/b` and `a/b/c`, never `a/bc`). */
export const underPrefix = (prefix: string) =>
  prefix ? { $regex: `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(/|$)` } : undefined;
