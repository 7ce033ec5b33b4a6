import type { Db } from 'mongodb';
import type { IndexSpec } from '../kernel/store/client.js';
import { createDocumentOps } from './documents.mongo.js';
import { createChunkOps, createIngestOps } from './chunks.mongo.js';
import { createMemoryOps, createRecollectionOps } from './memories.mongo.js';
import { createOwnerReads } from './owners.mongo.js';
import { pageIndexes } from '../kernel/store/paging.js';
import type { KnowledgeStore } from './store.js';

export const knowledgeIndexes: IndexSpec[] = [
  // GET /v1/assets, /v1/artifacts, /v1/memories, /v1/recollections page by (sort field, _id) under their
  // equality filters (src/kernel/store/paging.ts); a path prefix is checked on the rows read in that order.
  ...pageIndexes('documents', ['workspaceId', 'lane'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('documents', ['workspaceId', 'brainId', 'lane'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('documents', ['workspaceId', 'brainId', 'lane', 'path'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('memories', ['workspaceId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('memories', ['workspaceId', 'brainId'], ['createdAt', 'updatedAt', 'name']),
  ...pageIndexes('memories', ['workspaceId', 'ownerType', 'ownerId'], ['createdAt']),
  ...pageIndexes('recollections', ['workspaceId'], ['createdAt']),
  ...pageIndexes('recollections', ['workspaceId', 'brainId'], ['createdAt']),
  // GET /v1/resources/tree reads documents in (path, name) order, in a brain or workspace-wide, a path prefix a range on path.
  { collection: 'documents', keys: { workspaceId: 1, brainId: 1, path: 1, name: 1 }, name: 'ws_brain_path_name' },
  { collection: 'documents', keys: { workspaceId: 1, path: 1, name: 1 }, name: 'ws_path_name' },
  // A resource's chunks, in order, within its live version.
  ...pageIndexes('chunks', ['resourceId', 'version'], ['index']),
  { collection: 'documents', keys: { workspaceId: 1, brainId: 1, lane: 1, path: 1 }, name: 'ws_brain_lane_path' },
  { collection: 'document_versions', keys: { documentId: 1, version: -1 }, name: 'doc_version' },
  { collection: 'chunks', keys: { resourceId: 1, version: 1, index: 1 }, name: 'resource_version_index' },
  { collection: 'chunks', keys: { workspaceId: 1, resourceKind: 1 }, name: 'ws_kind' },
  { collection: 'memories', keys: { workspaceId: 1, ownerType: 1, ownerId: 1 }, name: 'ws_owner' },
  { collection: 'recollection_members', keys: { recollectionId: 1, resourceId: 1 }, name: 'recollection_resource' },
  { collection: 'recollection_members', keys: { resourceId: 1 }, name: 'resource' },
];

/**
 * The knowledge area's repository (the MongoDB and FerretDB adapter of KnowledgeStore, store.ts): assets and artifacts (the document table and its versions),
 * memories, recollections and their members, chunks, and the ingest state of chunked resources.
 * Rows of the document and memory tables have several writers (a new version's head, its ingest
 * job's state, a recount): every update of them is made under the row's hold (`knowledge_holds`).
 */
export function createKnowledgeRepo(db: Db): KnowledgeStore {
  return {
    documents: createDocumentOps(db),
    memories: createMemoryOps(db),
    recollections: createRecollectionOps(db),
    chunks: createChunkOps(db),
    ingest: createIngestOps(db),
    owners: createOwnerReads(db),
  };
}
