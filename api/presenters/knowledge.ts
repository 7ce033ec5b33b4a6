import type { z } from 'zod';
import type {
  ChunkRecord as ChunkRow,
  DocumentVersionRecord as VersionRow,
  IngestState,
  KnowledgeDocument,
  MemoryRecord as MemoryRow,
  RecollectionRecord as RecollectionRow,
  RecollectionMember,
} from '../../src/knowledge/index.js';
import type { Artifact, Asset, Chunk, DocumentVersion, Memory, Recollection } from '../../src/knowledge/index.js';

const ingest = (s: IngestState) => ({
  status: s.status,
  job_id: s.jobId,
  version: s.version,
  chunk_count: s.chunkCount,
  embedded_count: s.embeddedCount,
  embedding_model: s.embeddingModel,
  error: s.error,
});

export function presentAsset(r: KnowledgeDocument): z.input<typeof Asset> {
  return {
    id: r._id,
    kind: 'asset',
    brain_id: r.brainId,
    name: r.name,
    path: r.path,
    metadata: r.metadata,
    skip_embedding: r.skipEmbedding,
    content_type: r.contentType,
    size: r.size,
    sha256: r.sha256,
    source: r.source,
    version: r.version,
    ingest: ingest(r.ingest),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

export function presentArtifact(r: KnowledgeDocument): z.input<typeof Artifact> {
  return {
    id: r._id,
    kind: 'artifact',
    brain_id: r.brainId,
    title: r.name,
    content: r.content ?? '',
    content_type: r.contentType ?? 'text/plain',
    path: r.path,
    metadata: r.metadata,
    skip_embedding: r.skipEmbedding,
    version: r.version,
    latest_version: r.version,
    size: r.size,
    ingest: ingest(r.ingest),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}
export const presentArtifactRow = (r: KnowledgeDocument) => {
  const { content: _c, ...rest } = presentArtifact(r);
  return rest;
};

export function presentChunk(c: ChunkRow): z.input<typeof Chunk> {
  return {
    id: c._id,
    resource_id: c.resourceId,
    resource_kind: c.resourceKind,
    version: c.version,
    index: c.index,
    source: c.source,
    text: c.text,
    tokens: c.tokens,
    path: c.path,
    embedding_model: c.embedding?.model ?? null,
    embedding_dimension: c.embedding?.dimension ?? null,
    created_at: c.createdAt.toISOString(),
  };
}

export function presentVersion(v: VersionRow): z.input<typeof DocumentVersion> {
  return {
    version: v.version,
    changes: v.changes,
    name: v.name,
    path: v.path,
    metadata: v.metadata,
    skip_embedding: v.skipEmbedding,
    content_type: v.contentType,
    size: v.size,
    created_by: v.createdBy,
    created_at: v.createdAt.toISOString(),
    ...(v.content !== undefined ? { content: v.content } : {}),
  };
}

export function presentMemory(m: MemoryRow): z.input<typeof Memory> {
  return {
    id: m._id,
    kind: 'memory',
    brain_id: m.brainId,
    name: m.name,
    description: m.description,
    source_type: m.sourceType,
    owner_type: m.ownerType,
    owner_id: m.ownerId,
    tags: m.tags,
    metadata: m.metadata,
    content_type: m.contentType,
    size: m.size,
    file_name: m.fileName,
    skip_embedding: m.skipEmbedding,
    title_source: m.titleSource,
    title_model: m.titleModel,
    ingest: ingest(m.ingest),
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

export function presentRecollection(r: RecollectionRow, members?: RecollectionMember[]): z.input<typeof Recollection> {
  return {
    id: r._id,
    kind: 'recollection',
    brain_id: r.brainId,
    name: r.name,
    description: r.description,
    ...(members ? { members: members.map((m) => ({ resource_id: m.resourceId, resource_kind: m.resourceKind })) } : {}),
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}
