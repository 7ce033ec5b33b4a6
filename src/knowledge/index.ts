/**
 * Knowledge (docs/knowledge.md): the area's only door. Assets and artifacts (the document table and
 * its versions), memories, recollections and chunks: the stored shapes (`model.ts`), the store
 * contract (`store.ts`: KnowledgeStore and one interface per part), the adapter and its index
 * specs (`store.mongo.ts` over `documents.mongo.ts`, `chunks.mongo.ts`, `memories.mongo.ts`,
 * `owners.mongo.ts`, and `rows.mongo.ts`, the collections and codecs they share), the document,
 * memory, ingest and catalog services, the text engine (`extract.ts`, `chunk.ts`) and the request
 * shapes (`schemas.ts`). Routes, activities, the composition root and other areas import from
 * here. The stored shapes are `ChunkRecord`, `DocumentVersionRecord`, `MemoryRecord` and
 * `RecollectionRecord` here, as `Chunk`, `DocumentVersion`, `Memory` and `Recollection` name the
 * response schemas.
 */
export {
  type Chunk as ChunkRecord,
  type ChunkDoc,
  type ChunkedKind,
  type DocumentDoc,
  type DocumentVersion as DocumentVersionRecord,
  type DocumentVersionDoc,
  type IngestState,
  type KnowledgeDocument,
  type Memory as MemoryRecord,
  type MemoryDoc,
  type Recollection as RecollectionRecord,
  type RecollectionMember,
} from './model.js';
export { createKnowledgeRepo, knowledgeIndexes } from './store.mongo.js';
export { toDocument, toMemory } from './rows.mongo.js';
export * from './schemas.js';
export { createDocumentService, type DocumentService } from './documents.js';
export { createMemoryService } from './memories.js';
export { createIngestService } from './ingest.js';
export { createCatalogService } from './catalog.js';
export { sniffContentType } from './extract.js';
